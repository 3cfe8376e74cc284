import { emptyUsageTotals } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import {
  addUsageTotals,
  promptTokensOf,
  tokenCountsOf,
  totalTokensOf,
  UsageAccumulator,
  usagePricer,
} from "./usage.js";

describe("usage", () => {
  it("counts a renewal's storage, sums it, and prices it at the model's storage price", () => {
    const renewal = { input_tokens: 10, output_tokens: 0, cache_storage_token_seconds: 3600 * 1000 };
    expect(tokenCountsOf(renewal).cache_storage_token_seconds).toBe(3_600_000);
    expect(tokenCountsOf({ ...renewal, cache_storage_token_seconds: 0 })).not.toHaveProperty(
      "cache_storage_token_seconds",
    );
    expect(tokenCountsOf({ ...renewal, cache_storage_token_seconds: null })).not.toHaveProperty(
      "cache_storage_token_seconds",
    );
    const accumulator = new UsageAccumulator();
    accumulator.add("gemini-2.5-flash", renewal);
    accumulator.add("gemini-2.5-flash", renewal);
    accumulator.add("gemini-2.5-flash", { input_tokens: 5, output_tokens: 0 });
    const totals = accumulator.totals;
    expect(totals.cache_storage_token_seconds).toBe(7_200_000);
    // 25 input tokens at 0.30 and 7.2M token-seconds (2,000 token-hours) at 1.00 per MTok-hour.
    expect(totals.cost_usd).toBeCloseTo((25 * 0.3 + 2000 * 1) / 1_000_000, 10);
    expect(usagePricer()("gemini-2.5-flash", renewal)).toBeCloseTo((10 * 0.3 + 1000) / 1_000_000, 12);
    // Nothing stored: the field stays absent.
    const plain = new UsageAccumulator();
    plain.add("gemini-2.5-flash", { input_tokens: 5, output_tokens: 0 });
    expect(plain.totals).not.toHaveProperty("cache_storage_token_seconds");
  });

  it("leaves storage unpriced (never at zero) for a model without a storage price", () => {
    const table = {
      entries: [],
      lookup: () => ({ family: "x", prefixes: ["x"], inputUsdPerMTok: 1, outputUsdPerMTok: 1 }),
    };
    const accumulator = new UsageAccumulator(table);
    accumulator.add("x", { input_tokens: 1, output_tokens: 0, cache_storage_token_seconds: 5 });
    expect(accumulator.totals.cost_usd).toBeNull();
    expect(accumulator.totals.unpriced_models).toEqual(["x"]);
    expect(
      usagePricer(table)("x", { input_tokens: 1, output_tokens: 0, cache_storage_token_seconds: 5 }),
    ).toBeNull();
    expect(usagePricer(table)("x", { input_tokens: 1, output_tokens: 0 })).toBeCloseTo(1e-6, 12);
  });

  it("adds storage of sibling totals, absent only when neither has any", () => {
    const a = { ...emptyUsageTotals(), cache_storage_token_seconds: 7 };
    const b = { ...emptyUsageTotals(), cache_storage_token_seconds: 5 };
    expect(addUsageTotals(a, b).cache_storage_token_seconds).toBe(12);
    expect(addUsageTotals(a, emptyUsageTotals()).cache_storage_token_seconds).toBe(7);
    expect(addUsageTotals(emptyUsageTotals(), b).cache_storage_token_seconds).toBe(5);
    expect(addUsageTotals(emptyUsageTotals(), emptyUsageTotals())).not.toHaveProperty(
      "cache_storage_token_seconds",
    );
  });

  it("splits cache writes by TTL, counting what the split leaves out as 5m", () => {
    expect(
      tokenCountsOf({ input_tokens: 1, output_tokens: 2, cache_creation_input_tokens: 100 }),
    ).toMatchObject({
      cache_write_5m_tokens: 100,
      cache_write_1h_tokens: 0,
    });
    expect(
      tokenCountsOf({
        input_tokens: 1,
        output_tokens: 2,
        cache_creation_input_tokens: 100,
        cache_read_input_tokens: 7,
        cache_creation: { ephemeral_5m_input_tokens: 30, ephemeral_1h_input_tokens: 60 },
      }),
    ).toEqual({
      input_tokens: 1,
      cache_write_5m_tokens: 40,
      cache_write_1h_tokens: 60,
      cache_read_tokens: 7,
      output_tokens: 2,
    });
    expect(
      promptTokensOf({
        input_tokens: 1,
        output_tokens: 2,
        cache_creation_input_tokens: 3,
        cache_read_input_tokens: 4,
      }),
    ).toBe(8);
  });

  it("sums turns and prices them per model", () => {
    const acc = new UsageAccumulator();
    acc.add("claude-sonnet-4-5", {
      input_tokens: 1000,
      output_tokens: 100,
      cache_creation_input_tokens: 2000,
      cache_read_input_tokens: 40_000,
    });
    acc.add("claude-haiku-4-5", { input_tokens: 500, output_tokens: 50, cache_read_input_tokens: null });
    const totals = acc.totals;
    expect(totals).toMatchObject({
      input_tokens: 1500,
      cache_write_5m_tokens: 2000,
      cache_write_1h_tokens: 0,
      cache_read_tokens: 40_000,
      output_tokens: 150,
      llm_calls: 2,
    });
    const sonnet = (1000 * 3 + 2000 * 3 * 1.25 + 40_000 * 3 * 0.1 + 100 * 15) / 1e6;
    const haiku = (500 * 1 + 50 * 5) / 1e6;
    expect(totals.cost_usd).toBeCloseTo(sonnet + haiku, 8);
    expect(totals.unpriced_models).toBeUndefined();
    expect(totalTokensOf(totals)).toBe(1500 + 2000 + 40_000 + 150);
  });

  it("reports an unknown model instead of pricing it at zero", () => {
    const acc = new UsageAccumulator();
    acc.add("claude-sonnet-4-5", { input_tokens: 10, output_tokens: 1 });
    acc.add("mystery-1", { input_tokens: 10, output_tokens: 1 });
    acc.add("mystery-1", { input_tokens: 10, output_tokens: 1 });
    expect(acc.totals.cost_usd).toBeNull();
    expect(acc.totals.unpriced_models).toEqual(["mystery-1"]);
    expect(usagePricer()("mystery-1", { input_tokens: 1, output_tokens: 1 })).toBeNull();
    expect(usagePricer()("claude-sonnet-4-5", { input_tokens: 1_000_000, output_tokens: 0 })).toBeCloseTo(3);
  });

  it("adds totals, a null cost winning", () => {
    const priced = { ...emptyUsageTotals(), input_tokens: 5, llm_calls: 1, cost_usd: 0.5 };
    const unpriced = {
      ...emptyUsageTotals(),
      output_tokens: 2,
      llm_calls: 1,
      cost_usd: null,
      unpriced_models: ["x"],
    };
    expect(addUsageTotals(priced, priced)).toMatchObject({ input_tokens: 10, llm_calls: 2, cost_usd: 1 });
    expect(addUsageTotals(priced, unpriced)).toMatchObject({
      cost_usd: null,
      unpriced_models: ["x"],
      output_tokens: 2,
    });
  });

  it("adds every counter of two totals, cache counters included", () => {
    const a = {
      input_tokens: 1,
      cache_write_5m_tokens: 20,
      cache_write_1h_tokens: 300,
      cache_read_tokens: 4_000,
      output_tokens: 50_000,
      llm_calls: 6,
      cost_usd: 0.25,
    };
    const b = {
      input_tokens: 7,
      cache_write_5m_tokens: 80,
      cache_write_1h_tokens: 900,
      cache_read_tokens: 1_000,
      output_tokens: 10_000,
      llm_calls: 4,
      cost_usd: 0.5,
    };
    // Exactly these keys: no empty unpriced_models when every model had a price.
    expect(addUsageTotals(a, b)).toEqual({
      input_tokens: 8,
      cache_write_5m_tokens: 100,
      cache_write_1h_tokens: 1_200,
      cache_read_tokens: 5_000,
      output_tokens: 60_000,
      llm_calls: 10,
      cost_usd: 0.75,
    });
    expect(totalTokensOf(a)).toBe(54_321);
  });

  it("makes the sum's cost unknown when either side's is, naming the union of unpriced models in order", () => {
    const priced = { ...emptyUsageTotals(), cost_usd: 1 };
    const unpriced = (...models: string[]) => ({
      ...emptyUsageTotals(),
      cost_usd: null,
      unpriced_models: models,
    });
    expect(addUsageTotals(unpriced("zeta"), priced)).toMatchObject({
      cost_usd: null,
      unpriced_models: ["zeta"],
    });
    expect(addUsageTotals(priced, unpriced("zeta"))).toMatchObject({
      cost_usd: null,
      unpriced_models: ["zeta"],
    });
    expect(addUsageTotals(unpriced("zeta"), unpriced("alpha", "zeta")).unpriced_models).toEqual([
      "alpha",
      "zeta",
    ]);
  });

  it("names a run's unpriced models in order", () => {
    const acc = new UsageAccumulator();
    acc.add("zeta-1", { input_tokens: 1, output_tokens: 1 });
    acc.add("alpha-1", { input_tokens: 1, output_tokens: 1 });
    expect(acc.totals.unpriced_models).toEqual(["alpha-1", "zeta-1"]);
  });
});
