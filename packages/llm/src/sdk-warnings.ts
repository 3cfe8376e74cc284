// The Anthropic SDK writes some warnings (a deprecated model, a deprecated thinking mode) straight
// to console.warn on every request. A daemon sends thousands of requests: route them to our logger,
// once per distinct text per process.
import type { Logger } from "@forkd/core";

const reported = new Set<string>();

/**
 * Runs `start` (which must call the SDK synchronously) with console.warn routed to `logger`, each
 * distinct warning once. The SDK issues these warnings synchronously when a request is created, so
 * the window in which console.warn is replaced is one synchronous call.
 */
export function withSdkWarningsRouted<T>(logger: Logger, start: () => T): T {
  const original = console.warn;
  console.warn = (...args: unknown[]) => {
    const text = args.map(String).join(" ");
    if (reported.has(text)) return;
    reported.add(text);
    logger.warn({ source: "anthropic-sdk" }, text);
  };
  try {
    return start();
  } finally {
    console.warn = original;
  }
}
