// The start of every usage sum.
import { describe, expect, it } from "vitest";
import { emptyUsageTotals, UsageTotalsSchema } from "./usage.js";

describe("emptyUsageTotals", () => {
  it("is zero in every counter, a valid total, and a fresh object each time", () => {
    const empty = emptyUsageTotals();
    expect(empty).toStrictEqual({
      input_tokens: 0,
      cache_write_5m_tokens: 0,
      cache_write_1h_tokens: 0,
      cache_read_tokens: 0,
      output_tokens: 0,
      llm_calls: 0,
      cost_usd: 0,
    });
    expect(UsageTotalsSchema.parse(empty)).toStrictEqual(empty);
    empty.llm_calls = 1;
    expect(emptyUsageTotals().llm_calls).toBe(0);
  });
});
