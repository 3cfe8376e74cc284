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
// Into a pipe, stdout is written asynchronously: exiting at once would cut `forkd ps --json | jq` at
// 64 KiB. An empty write's callback runs once everything written before it is flushed.
await Promise.all(
  [process.stdout, process.stderr].map(
    (stream) =>
      new Promise<void>((resolve) => (stream.writableEnded ? resolve() : stream.write("", () => resolve()))),
  ),
);
// Every command closes what it opened; exiting here also ends what a library might keep alive
// (a pino transport thread, a container client) instead of hanging on it.
process.exit(code);
