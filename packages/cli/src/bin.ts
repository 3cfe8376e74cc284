#!/usr/bin/env node
// The `forkd` executable.
import { main } from "./main.js";

const code = await main(process.argv.slice(2));
// Every command closes what it opened; exiting here also ends what a library might keep alive
// (a pino transport thread, a container client) instead of hanging on it.
process.exit(code);
