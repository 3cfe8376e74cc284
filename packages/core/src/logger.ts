// The structural logger @forkd/core accepts; pino satisfies it. Libraries never create their own.

/** A log method: structured fields first, then a message (the pino convention). */
export type LogFn = (fields: Record<string, unknown>, message: string) => void;

/** What @forkd/core logs to. */
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
