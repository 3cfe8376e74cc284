// The simulator's latency flags: `forkd sim` serves with them, `forkd demo` starts its simulator
// with them (and its own defaults).
import type { LatencyOptions } from "@forkd/sim";
import { parseNonNegative } from "./options.js";

/** `--ttft MS`, the time to first token, and `--tps N`, output tokens per second. */
export const LATENCY_FLAGS = {
  ttft: { type: "string" },
  tps: { type: "string" },
} as const;

/**
 * The latency the flags ask for; a flag not given stays undefined (the simulator's default).
 * @throws `UsageError` when a value is not a number ≥ 0.
 */
export function latencyOf(values: { ttft?: string | undefined; tps?: string | undefined }): LatencyOptions {
  return {
    ttftMs: values.ttft === undefined ? undefined : parseNonNegative("ttft", values.ttft),
    tokensPerSecond: values.tps === undefined ? undefined : parseNonNegative("tps", values.tps),
  };
}
