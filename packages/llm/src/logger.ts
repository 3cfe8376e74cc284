// Adapts @forkd/core's structural logger (pino-shaped: fields first, then the message) to the
// Anthropic SDK's logger, which logs `(message, ...details)`.
import type { ClientOptions } from "@anthropic-ai/sdk";
import type { Logger } from "@forkd/core";

type SdkLogger = NonNullable<ClientOptions["logger"]>;

/** The SDK's lines, sent to `logger` as `({ source: "anthropic-sdk", details }, message)`. */
export function sdkLogger(logger: Logger): SdkLogger {
  const forward =
    (level: keyof Logger) =>
    (message: string, ...details: unknown[]) =>
      logger[level]({ source: "anthropic-sdk", ...(details.length > 0 ? { details } : {}) }, message);
  return { debug: forward("debug"), info: forward("info"), warn: forward("warn"), error: forward("error") };
}
