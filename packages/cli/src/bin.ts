#!/usr/bin/env node
// The `forkd` executable.
import { main } from "./main.js";

// `forkd watch --json | head`: once the reader is gone there is nobody to tell anything; stop quietly
// (exit hooks still stop what the command started) instead of crashing on EPIPE.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });
}

const code = await main(process.argv.slice(2));
// Every command closes what it opened; exiting here also ends what a library might keep alive
// (a pino transport thread, a container client) instead of hanging on it.
process.exit(code);
