// The provider's cache_miss_reason as the client hands it to the turn loop.
import { describe, expect, it } from "vitest";
import { cacheMissReasonOf } from "./anthropic-client.js";

describe("cacheMissReasonOf", () => {
  it("returns the reason as sent, unknown types and fields included", () => {
    const reason = { type: "tools_changed", cache_missed_input_tokens: 4_000 };
    expect(cacheMissReasonOf({ diagnostics: { cache_miss_reason: reason } })).toEqual(reason);
    expect(
      cacheMissReasonOf({ diagnostics: { cache_miss_reason: { type: "speed_changed", x: 1 } } }),
    ).toEqual({
      type: "speed_changed",
      x: 1,
    });
  });

  it("returns nothing without diagnostics, while the diagnosis is pending, or for a malformed one", () => {
    for (const message of [
      {},
      null,
      { diagnostics: null },
      { diagnostics: { cache_miss_reason: null } },
      { diagnostics: { cache_miss_reason: { type: "" } } },
      { diagnostics: { cache_miss_reason: { type: "tools_changed", cache_missed_input_tokens: -1 } } },
      { diagnostics: "tools_changed" },
    ]) {
      expect(cacheMissReasonOf(message), JSON.stringify(message)).toBeUndefined();
    }
  });
});
