// The daemon's logger: pino, JSON by default, readable on a terminal.
import type { LogFn, Logger } from "@forkd/core";
import pino from "pino";
import { redactCredentials } from "./redact.js";

/** The structural logger the daemon's modules take (pino satisfies it). */
export interface DaemonLogger extends Logger {
  trace: LogFn;
  child(bindings: Record<string, unknown>): DaemonLogger;
}

/**
 * Creates the daemon's pino logger. `pretty` uses pino-pretty when it is installed (the CLI has it)
 * and falls back to JSON otherwise; `auto` is pretty on a TTY.
 */
export function createDaemonLogger(options: {
  level: string;
  format: "json" | "pretty" | "auto";
  daemonId: string;
  destination?: NodeJS.WritableStream | undefined;
}): DaemonLogger {
  const pretty = options.format === "pretty" || (options.format === "auto" && Boolean(process.stderr.isTTY));
  const base = { daemon: options.daemonId };
  // Every line, whatever it holds (an error's message and stack, a list of servers), leaves without
  // the credentials of any URL in it.
  const hooks = { streamWrite: redactCredentials };
  if (pretty && !options.destination) {
    try {
      return pino({
        level: options.level,
        base,
        hooks,
        transport: {
          target: "pino-pretty",
          options: { destination: 2, colorize: true, translateTime: "HH:MM:ss.l" },
        },
      });
    } catch {
      // pino-pretty not installed: JSON it is
    }
  }
  return pino(
    { level: options.level, base, hooks },
    (options.destination ?? process.stderr) as pino.DestinationStream,
  );
}
