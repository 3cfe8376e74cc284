import type { ProviderUsage } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import {
  CACHE_MISS_TOLERANCE,
  type CacheBreakCheck,
  cacheMissCost,
  detectCacheBreak,
} from "./cache-break.js";
import { diagnosisLayersOf } from "./cache-diagnosis.js";
import { createPricingTable } from "./pricing.js";

const MODEL = "claude-sonnet-4-6"; // $3 / MTok input, reads at 0.1×
const parentRequest = { model: MODEL, system: "be careful", tools: [{ name: "read" }], messages: [] };
const parentLayers = diagnosisLayersOf(parentRequest);

function usage(u: Partial<ProviderUsage>): ProviderUsage {
  return { input_tokens: 0, output_tokens: 10, ...u };
}

function check(over: Partial<CacheBreakCheck> = {}): CacheBreakCheck {
  return { parentLayers, prefixLayers: parentLayers, parentCachedTokens: 40_000, ...over };
}

describe("detectCacheBreak", () => {
  it("stays quiet for a child that read its whole parent's prefix (and wrote its own delta)", () => {
    const full = usage({
      input_tokens: 50,
      cache_read_input_tokens: 40_000,
      cache_creation_input_tokens: 300,
    });
    expect(detectCacheBreak(1, MODEL, full, check())).toBeNull();
    const more = usage({ input_tokens: 50, cache_read_input_tokens: 40_300 });
    expect(detectCacheBreak(1, MODEL, more, check())).toBeNull();
  });

  it("tolerates a shortfall under 2 % of the expected reads, and reports one at it", () => {
    const expected = 40_000;
    const edge = expected - expected * CACHE_MISS_TOLERANCE; // 39 200
    expect(
      detectCacheBreak(1, MODEL, usage({ cache_read_input_tokens: edge + 1, input_tokens: 900 }), check()),
    ).toBeNull();
    expect(
      detectCacheBreak(1, MODEL, usage({ cache_read_input_tokens: edge, input_tokens: 900 }), check()),
    ).toMatchObject({ missed_tokens: 800, expected_read_tokens: 40_000 });
  });

  it("names each changed layer; betas are reported in the model layer", () => {
    const miss = usage({ input_tokens: 5, cache_creation_input_tokens: 40_100 });
    const cases: [string, string, Record<string, unknown>, string[]][] = [
      ["model", "model", { model: "claude-opus-4-6" }, []],
      ["betas", "model", {}, ["context-1m-2025-08-07"]],
      ["tools", "tools", { tools: [{ name: "write" }] }, []],
      ["system", "system", { system: "be bold" }, []],
      ["messages", "messages", { messages: [{ role: "user", content: "x" }] }, []],
    ];
    for (const [cause, layer, change, betas] of cases) {
      const prefixLayers = diagnosisLayersOf({ ...parentRequest, ...change }, betas);
      const event = detectCacheBreak(1, MODEL, miss, check({ prefixLayers }));
      expect(event, cause).toMatchObject({ type: "cache.break", turn: 1, layer, cause });
      expect(event?.detail).toContain(
        `the ${cause} layer differs from the parent's, so the parent's cache entry cannot match`,
      );
      expect(event?.detail).toMatch(/cannot match$/);
      expect(event).not.toHaveProperty("provider_reason");
    }
  });

  it("says expired or evicted when every layer matches, and unknown without the parent's layers", () => {
    const miss = usage({ input_tokens: 5, cache_creation_input_tokens: 40_100 });
    expect(detectCacheBreak(1, MODEL, miss, check())).toMatchObject({
      layer: "none",
      cause: "expired_or_evicted",
      detail: expect.stringContaining("expired or was evicted"),
    });
    const { parentLayers: _, ...unknownParent } = check();
    expect(detectCacheBreak(1, MODEL, miss, unknownParent)).toMatchObject({
      layer: "none",
      cause: "unknown",
      detail: expect.stringContaining("the parent's layer hashes are unknown"),
    });
  });

  it("prices the miss: written tokens at the write price, the rest at the input price, less the read price", () => {
    // 40 000 expected, 10 000 read: 30 000 missed, of which 25 000 were written (5m) and 5 000 not cached.
    const u = usage({
      input_tokens: 5_050,
      cache_read_input_tokens: 10_000,
      cache_creation_input_tokens: 25_000,
    });
    const event = detectCacheBreak(1, MODEL, u, check())!;
    const expected = (25_000 * 3 * (1.25 - 0.1) + 5_000 * 3 * (1 - 0.1)) / 1e6;
    expect(event.missed_tokens).toBe(30_000);
    expect(event.miss_cost_usd).toBeCloseTo(expected, 8);
    expect(event.miss_cost_usd).toBeGreaterThan(0);
  });

  it("prices 1-hour writes at twice the input price", () => {
    const u = usage({
      cache_creation_input_tokens: 40_000,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 40_000 },
    });
    expect(cacheMissCost(MODEL, u, 40_000)).toBeCloseTo((40_000 * 3 * (2 - 0.1)) / 1e6, 8);
    const mixed = usage({
      cache_creation_input_tokens: 40_000,
      cache_creation: { ephemeral_5m_input_tokens: 20_000, ephemeral_1h_input_tokens: 20_000 },
    });
    expect(cacheMissCost(MODEL, mixed, 40_000)).toBeCloseTo((40_000 * 3 * (1.625 - 0.1)) / 1e6, 8);
    expect(cacheMissCost(MODEL, usage({}), 1_000)).toBeCloseTo((1_000 * 3 * 0.9) / 1e6, 8);
  });

  it("leaves the cost out for a model without a price, and uses a table's read multiplier", () => {
    const miss = usage({ input_tokens: 40_100 });
    const event = detectCacheBreak(1, "no-such-model", miss, check({ minCacheableTokens: 1 }));
    expect(event).not.toBeNull();
    expect(event).not.toHaveProperty("miss_cost_usd");
    const table = createPricingTable([
      { family: "x", prefixes: ["x"], inputUsdPerMTok: 10, outputUsdPerMTok: 50, cacheReadMultiplier: 0.5 },
    ]);
    expect(cacheMissCost("x-1", miss, 1_000_000, table)).toBeCloseTo(10 * 0.5, 8);
  });

  it("carries the provider's reason, and takes its layer when forkd's hashes match", () => {
    const miss = usage({ input_tokens: 5, cache_creation_input_tokens: 40_100 });
    const provider = { type: "tools_changed", cache_missed_input_tokens: 39_000 };
    const event = detectCacheBreak(1, MODEL, miss, check(), { provider });
    expect(event).toMatchObject({ layer: "tools", cause: "tools", provider_reason: provider });
    expect(event?.detail).toContain("the provider says the tools layer differs");
    expect(event?.detail).toContain("(provider: tools_changed)");
    // forkd's own finding comes first: it saw the change itself.
    const systemChanged = diagnosisLayersOf({ ...parentRequest, system: "other" });
    expect(
      detectCacheBreak(1, MODEL, miss, check({ prefixLayers: systemChanged }), { provider }),
    ).toMatchObject({
      cause: "system",
    });
    // A reason without a layer leaves forkd's verdict.
    expect(
      detectCacheBreak(1, MODEL, miss, check(), { provider: { type: "previous_message_not_found" } }),
    ).toMatchObject({
      cause: "expired_or_evicted",
      provider_reason: { type: "previous_message_not_found" },
    });
  });

  it("without the parent's cached tokens, expects the provider's missed tokens, else half the prompt", () => {
    const { parentCachedTokens: _, ...bare } = check();
    const partial = usage({
      input_tokens: 100,
      cache_read_input_tokens: 30_000,
      cache_creation_input_tokens: 10_000,
    });
    // Reads over half the prompt: a first child writing its delta, not a break.
    expect(detectCacheBreak(1, MODEL, partial, bare)).toBeNull();
    // The provider says 10 000 more could have been read.
    expect(
      detectCacheBreak(1, MODEL, partial, bare, {
        provider: { type: "messages_changed", cache_missed_input_tokens: 10_000 },
      }),
    ).toMatchObject({ expected_read_tokens: 40_000, missed_tokens: 10_000, cause: "messages" });
    // Reads under half: everything written counts as missed.
    const low = usage({
      input_tokens: 100,
      cache_read_input_tokens: 1_000,
      cache_creation_input_tokens: 39_000,
    });
    expect(detectCacheBreak(1, MODEL, low, bare)).toMatchObject({
      expected_read_tokens: 40_000,
      missed_tokens: 39_000,
    });
    // A provider that says nothing could have been read: nothing missed.
    const none = usage({ input_tokens: 40_000 });
    const nothingMissed = { type: "messages_changed", cache_missed_input_tokens: 0 };
    expect(detectCacheBreak(1, MODEL, none, bare, { provider: nothingMissed })).toBeNull();
    // Nothing read nor written (a provider that reports no writes): at most the whole prompt.
    expect(detectCacheBreak(1, MODEL, usage({ input_tokens: 40_000 }), bare)).toMatchObject({
      expected_read_tokens: 40_000,
      missed_tokens: 40_000,
      miss_cost_usd: (40_000 * 3 * 0.9) / 1e6,
    });
    const exactlyHalf = usage({
      input_tokens: 0,
      cache_read_input_tokens: 20_000,
      cache_creation_input_tokens: 20_000,
    });
    expect(detectCacheBreak(1, MODEL, exactlyHalf, bare)).toBeNull();
  });

  it("reads the layer hashes only for a turn that missed", () => {
    let reads = 0;
    const counted: CacheBreakCheck = {
      parentCachedTokens: 40_000,
      get parentLayers() {
        reads += 1;
        return parentLayers;
      },
      get prefixLayers() {
        reads += 1;
        return parentLayers;
      },
    };
    expect(detectCacheBreak(1, MODEL, usage({ cache_read_input_tokens: 40_000 }), counted)).toBeNull();
    expect(reads).toBe(0);
    expect(
      detectCacheBreak(1, MODEL, usage({ cache_creation_input_tokens: 40_000 }), counted),
    ).not.toBeNull();
    expect(reads).toBeGreaterThan(0);
  });

  it("stays quiet under the model's minimum cacheable prompt", () => {
    const small = usage({ input_tokens: 1_000 });
    expect(
      detectCacheBreak(1, MODEL, small, check({ parentCachedTokens: 1_000, minCacheableTokens: 1_001 })),
    ).toBeNull();
    expect(
      detectCacheBreak(1, MODEL, small, check({ parentCachedTokens: 1_000, minCacheableTokens: 1_000 })),
    ).not.toBeNull();
  });
});
