import { describe, expect, it } from "vitest";
import { UsageError } from "./errors.js";
import { latencyOf } from "./sim-latency.js";

describe("latencyOf", () => {
  it("reads --ttft and --tps, leaving a flag not given undefined", () => {
    expect(latencyOf({ ttft: "250", tps: "0" })).toEqual({ ttftMs: 250, tokensPerSecond: 0 });
    const none = latencyOf({});
    expect(none.ttftMs).toBeUndefined();
    expect(none.tokensPerSecond).toBeUndefined();
    expect(latencyOf({ tps: "12.5" }).tokensPerSecond).toBe(12.5);
  });

  it("refuses a negative or non-numeric value, naming the flag", () => {
    expect(() => latencyOf({ ttft: "-1" })).toThrow(UsageError);
    expect(() => latencyOf({ tps: "fast" })).toThrow(/--tps/);
  });
});
