import { describe, expect, it } from "vitest";
import {
  CONTEXT_1M_BETA,
  contextWindowTokens,
  DEFAULT_CONTEXT_WINDOW_TOKENS,
  MODEL_FACTS,
  minCacheableTokens,
  modelFacts,
  normaliseModelId,
} from "./model-facts.js";

describe("model facts", () => {
  it("find a model by its longest id prefix, so point releases are told apart from their family", () => {
    expect(modelFacts("claude-opus-5-5")?.family).toBe("claude-opus-5-5");
    expect(modelFacts("claude-opus-5")?.family).toBe("claude-opus-5");
    expect(modelFacts("claude-opus-5-7-20270101")?.family).toBe("claude-opus-5");
    expect(modelFacts("claude-opus-4-5-20251101")?.family).toBe("claude-opus-4-5");
    expect(modelFacts("claude-opus-4-1")?.family).toBe("claude-opus-4");
    expect(modelFacts("gpt-5-mini-2025-08-07")?.family).toBe("gpt-5-mini");
    expect(modelFacts("gpt-5")?.cacheReadMultiplier).toBe(0.1);
    expect(modelFacts("o3")).toBeUndefined();
    // Every OpenAI family by a dated id, with its cached-input share and window.
    const openai = [
      "gpt-5-codex",
      "gpt-5-mini",
      "gpt-5-nano",
      "gpt-5",
      "gpt-4.1-mini",
      "gpt-4.1",
      "gpt-4o-mini",
      "gpt-4o",
    ];
    expect(openai.map((id) => modelFacts(`${id}-2025-01-01`)?.family)).toEqual(openai);
    expect(openai.map((id) => modelFacts(id)?.cacheReadMultiplier)).toEqual([
      0.1, 0.1, 0.1, 0.1, 0.25, 0.25, 0.5, 0.5,
    ]);
    expect(openai.map((id) => minCacheableTokens(id))).toEqual(Array(8).fill(1024));
    expect(modelFacts("gpt-4o")?.contextWindowTokens).toBe(128_000);
    expect(modelFacts("gpt-4.1")?.contextWindowTokens).toBe(1_047_576);
    expect(modelFacts("gpt-5")?.contextWindowTokens).toBe(400_000);
  });

  it("price an OpenAI id by its own row only: a dated snapshot is its id, any longer id is unknown", () => {
    // Each documented id and family has its own row.
    const ids = [
      "gpt-5.6-sol",
      "gpt-5.6-terra",
      "gpt-5.6-luna",
      "gpt-5.5",
      "gpt-5.4",
      "gpt-5.4-mini",
      "gpt-5.4-nano",
      "gpt-5",
    ];
    expect(ids.map((id) => modelFacts(id)?.family)).toEqual(ids);
    expect(ids.map((id) => modelFacts(`${id}-2026-06-27`)?.family)).toEqual(ids);
    expect(modelFacts("gpt-5.5")?.inputUsdPerMTok).toBe(5);
    expect(modelFacts("gpt-5.4")?.inputUsdPerMTok).toBe(2.5);
    expect(modelFacts("gpt-5.6-luna")?.outputUsdPerMTok).toBe(6);
    // Cache writes cost from the GPT-5.6 family on, and nothing before it (no multiplier: none written).
    expect(modelFacts("gpt-5.6-terra")?.cacheWriteMultiplier).toBe(1.25);
    expect(modelFacts("gpt-5.5")?.cacheWriteMultiplier).toBeUndefined();
    // One character past a known id, or an undated suffix, is another model: unknown, never gpt-5.
    for (const unknown of [
      "gpt-5.1",
      "gpt-5.7",
      "gpt-5.6",
      "gpt-5.6-sol-pro",
      "gpt-5-pro",
      "gpt-50",
      "gpt-5.5-pro",
      "gpt-4o-2024-05",
      "gpt-4o-2024-05-130",
      "gpt-4o-audio-preview",
    ])
      expect(modelFacts(unknown), unknown).toBeUndefined();
    // Provider qualifiers and case are still removed first.
    expect(modelFacts("GPT-5.5")?.family).toBe("gpt-5.5");
    // Anthropic's rows stay prefixes: a dated or point id is its family's.
    expect(modelFacts("claude-sonnet-4-6-20260101")?.family).toBe("claude-sonnet-4-6");
  });

  it("name provider-qualified ids by the Anthropic model", () => {
    expect(normaliseModelId(" us.anthropic.claude-sonnet-4-6-v1:0")).toBe("claude-sonnet-4-6-v1:0");
    expect(normaliseModelId("claude-sonnet-4-6@20250929")).toBe("claude-sonnet-4-6");
    expect(normaliseModelId("Anthropic/Claude-Haiku-4-5")).toBe("claude-haiku-4-5");
    // Only a leading qualifier is one.
    expect(normaliseModelId("claude-x-anthropic.y")).toBe("claude-x-anthropic.y");
    expect(modelFacts("us.anthropic.claude-haiku-4-5-20251001-v1:0")?.family).toBe("claude-haiku-4-5");
  });

  it("have one row per family, output at five times input (Anthropic's rows), and sane numbers", () => {
    expect(new Set(MODEL_FACTS.map((row) => row.family)).size).toBe(MODEL_FACTS.length);
    for (const row of MODEL_FACTS) {
      if (row.family.startsWith("claude-"))
        expect(row.outputUsdPerMTok, row.family).toBe(row.inputUsdPerMTok * 5);
      // OpenAI's rows: output dearer than input, cached input a discount, 128k windows and up.
      else expect(row.outputUsdPerMTok, row.family).toBeGreaterThan(row.inputUsdPerMTok);
      expect(row.cacheReadMultiplier ?? 0.1, row.family).toBeLessThan(1);
      expect(row.minCacheableTokens, row.family).toBeGreaterThanOrEqual(512);
      expect(row.contextWindowTokens, row.family).toBeGreaterThanOrEqual(128_000);
    }
  });

  it("give the minimum cacheable length, overrides first by the longest prefix", () => {
    expect(minCacheableTokens("claude-opus-4-6")).toBe(4096);
    expect(minCacheableTokens("claude-opus-5-5")).toBe(512);
    expect(minCacheableTokens("some-unknown-model")).toBe(1024);
    expect(minCacheableTokens("claude-opus-4-6", { claude: 10, "claude-opus": 20 })).toBe(20);
    // Whatever the order of the overrides; a longer prefix that the model does not start with is not one.
    expect(minCacheableTokens("claude-opus-4-6", { "claude-opus": 20, claude: 10 })).toBe(20);
    expect(minCacheableTokens("claude-opus-4-6", { claude: 10, "claude-opus-4-7": 30 })).toBe(10);
    // Overrides that name none of the model's prefixes leave the model's own figure.
    expect(minCacheableTokens("claude-opus-4-6", { "claude-haiku": 30 })).toBe(4096);
  });

  it("give the context window, opened to 1M only by the beta and only where the model has it", () => {
    expect(contextWindowTokens("claude-sonnet-4-6")).toBe(200_000);
    expect(contextWindowTokens("claude-sonnet-4-6", [CONTEXT_1M_BETA])).toBe(1_000_000);
    expect(contextWindowTokens("claude-sonnet-4-6", ["context-1m"])).toBe(200_000);
    expect(contextWindowTokens("claude-haiku-4-5", [CONTEXT_1M_BETA])).toBe(200_000);
    expect(contextWindowTokens("claude-opus-4-7")).toBe(1_000_000);
    expect(contextWindowTokens("claude-opus-4-6")).toBe(200_000);
    expect(contextWindowTokens("some-unknown-model", [CONTEXT_1M_BETA])).toBe(DEFAULT_CONTEXT_WINDOW_TOKENS);
  });
});
