// The one structural logger every forkd library accepts; pino satisfies it. Libraries never create
// their own: the daemon and the CLI make pino loggers and pass them down.

/** A log method: structured fields first, then a message (the pino convention). */
export type LogFn = (fields: Record<string, unknown>, message?: string) => void;

/** What forkd's libraries log to (the daemon's logger adds `trace` and `child`). */
export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

/** A logger that drops everything: the default. */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};
