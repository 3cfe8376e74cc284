import { createPricingTable } from "@forkd/core";
import { emptyUsageTotals, type ProviderUsage, UsageTotalsSchema } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { addUsage, costOfUsage, mergeUsage, usageTotalsOf } from "./usage.js";

describe("mergeUsage", () => {
  const start: ProviderUsage = {
    input_tokens: 12,
    output_tokens: 1,
    cache_creation_input_tokens: 300,
    cache_read_input_tokens: 4000,
    cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 },
    service_tier: "standard",
  };

  it("takes output_tokens from message_delta as the cumulative count, not a sum", () => {
    const once = mergeUsage(start, { output_tokens: 40 });
    const twice = mergeUsage(once, { output_tokens: 95 });
    expect(twice.output_tokens).toBe(95);
  });

  it("keeps message_start's input and cache fields unless the delta carries them", () => {
    const merged = mergeUsage(start, {
      output_tokens: 40,
      input_tokens: null,
      cache_read_input_tokens: null,
    });
    expect(merged).toEqual({ ...start, output_tokens: 40 });
    const restated = mergeUsage(start, {
      output_tokens: 40,
      input_tokens: 15,
      cache_read_input_tokens: 4100,
    });
    expect(restated).toMatchObject({
      input_tokens: 15,
      cache_read_input_tokens: 4100,
      cache_creation_input_tokens: 300,
    });
  });

  it("does not change its inputs", () => {
    const copy = structuredClone(start);
    mergeUsage(start, { output_tokens: 7 });
    expect(start).toEqual(copy);
  });
});

// $1 in, $10 out per million tokens: easy numbers to check (cache writes 1.25× / 2×, reads 0.1×).
const testPricing = createPricingTable([
  { family: "test-model", prefixes: ["test-model"], inputUsdPerMTok: 1, outputUsdPerMTok: 10 },
]);
const usage: ProviderUsage = {
  input_tokens: 100,
  output_tokens: 50,
  cache_creation_input_tokens: 1000,
  cache_read_input_tokens: 20_000,
  cache_creation: { ephemeral_5m_input_tokens: 400, ephemeral_1h_input_tokens: 600 },
};

describe("costOfUsage", () => {
  it("prices each kind of token at its rate", () => {
    // 100·1 + 400·1.25 + 600·2 + 20000·0.1 + 50·10 = 4300 micro-dollars.
    expect(costOfUsage("test-model-20260101", usage, testPricing)).toBeCloseTo(0.0043, 12);
  });

  it("uses core's default table when none is given", () => {
    // Sonnet 4.5: $3 in, $15 out → 300 + 1500 + 3600 + 6000 + 750 = 12150 micro-dollars.
    expect(costOfUsage("claude-sonnet-4-5-20250929", usage)).toBeCloseTo(0.01215, 12);
  });

  it("returns null for a model the table does not know", () => {
    expect(costOfUsage("mystery-model", usage, testPricing)).toBeNull();
  });
});

describe("usageTotalsOf", () => {
  it("splits cache writes by TTL from the breakdown", () => {
    expect(usageTotalsOf("test-model", usage, testPricing)).toEqual({
      input_tokens: 100,
      cache_write_5m_tokens: 400,
      cache_write_1h_tokens: 600,
      cache_read_tokens: 20_000,
      output_tokens: 50,
      llm_calls: 1,
      cost_usd: 0.0043,
    });
  });

  it("counts all creation as 5-minute when the breakdown is absent", () => {
    const flat = {
      input_tokens: 1,
      output_tokens: 2,
      cache_creation_input_tokens: 250,
      cache_creation: null,
    };
    expect(usageTotalsOf("test-model", flat, testPricing)).toMatchObject({
      cache_write_5m_tokens: 250,
      cache_write_1h_tokens: 0,
      cache_read_tokens: 0,
    });
  });

  it("names an unknown model instead of pricing it at zero", () => {
    expect(usageTotalsOf("mystery-model", usage, testPricing)).toMatchObject({
      cost_usd: null,
      unpriced_models: ["mystery-model"],
    });
  });
});

describe("addUsage", () => {
  it("sums tokens by kind, counts calls and prices them", () => {
    const once = addUsage(emptyUsageTotals(), "test-model", usage, testPricing);
    const twice = addUsage(once, "test-model", usage, testPricing);
    expect(twice).toEqual({
      input_tokens: 200,
      cache_write_5m_tokens: 800,
      cache_write_1h_tokens: 1200,
      cache_read_tokens: 40_000,
      output_tokens: 100,
      llm_calls: 2,
      cost_usd: 0.0086,
    });
    expect(UsageTotalsSchema.parse(twice)).toEqual(twice);
  });

  it("reports an unknown model instead of pricing it at zero", () => {
    const priced = addUsage(emptyUsageTotals(), "test-model", usage, testPricing);
    const unpriced = addUsage(priced, "mystery-model", usage, testPricing);
    expect(unpriced.cost_usd).toBeNull();
    expect(unpriced.unpriced_models).toEqual(["mystery-model"]);
    expect(unpriced.llm_calls).toBe(2);
    // Once a price is unknown the total stays unknown, and each model is listed once.
    const again = addUsage(
      addUsage(unpriced, "test-model", usage, testPricing),
      "mystery-model",
      usage,
      testPricing,
    );
    expect(again.cost_usd).toBeNull();
    expect(again.unpriced_models).toEqual(["mystery-model"]);
    expect(UsageTotalsSchema.parse(again)).toEqual(again);
  });

  it("does not change the totals it is given", () => {
    const totals = emptyUsageTotals();
    addUsage(totals, "mystery-model", usage, testPricing);
    expect(totals).toEqual(emptyUsageTotals());
  });
});
