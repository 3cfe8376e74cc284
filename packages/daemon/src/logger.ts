// The logger of forkd's processes (the daemon, the proxy): pino, JSON by default, readable on a terminal.
import type { LogFn, Logger } from "@forkd/core";
import pino from "pino";
import { redactCredentials } from "./redact.js";

/** The structural logger the daemon's modules take (pino satisfies it). */
export interface DaemonLogger extends Logger {
  trace: LogFn;
  child(bindings: Record<string, unknown>): DaemonLogger;
}

/** The levels a forkd process logs at, quietest last. */
export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;

/** How a forkd process writes its log: JSON lines, pino-pretty, or pretty only on a terminal. */
export const LOG_FORMATS = ["json", "pretty", "auto"] as const;

/** One of {@link LOG_FORMATS}. */
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * Creates a forkd process's pino logger, each line bound to `bindings` (`{ daemon: id }`,
 * `{ command: "proxy" }`). `pretty` uses pino-pretty when it is installed (the CLI has it) and falls back
 * to JSON otherwise; `auto` is pretty when stderr is a terminal and no `destination` is given.
 */
export function createProcessLogger(options: {
  level: string;
  format: LogFormat;
  bindings: Record<string, unknown>;
  /** Where the lines go, one `write` each. @default process.stderr */
  destination?: { write(line: string): unknown } | undefined;
}): DaemonLogger {
  const pretty = options.format === "pretty" || (options.format === "auto" && Boolean(process.stderr.isTTY));
  const base = options.bindings;
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

/** Creates the daemon's pino logger: {@link createProcessLogger} with each line naming the daemon. */
export function createDaemonLogger(options: {
  level: string;
  format: LogFormat;
  daemonId: string;
  destination?: NodeJS.WritableStream | undefined;
}): DaemonLogger {
  const { daemonId, ...rest } = options;
  return createProcessLogger({ ...rest, bindings: { daemon: daemonId } });
}
