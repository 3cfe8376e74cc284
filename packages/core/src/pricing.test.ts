import { describe, expect, it } from "vitest";
import {
  CACHE_READ_MULTIPLIER,
  CACHE_WRITE_1H_MULTIPLIER,
  CACHE_WRITE_5M_MULTIPLIER,
  costOfTokens,
  createPricingTable,
  defaultPricingTable,
} from "./pricing.js";

describe("pricing", () => {
  it("finds a family by the longest id prefix, provider qualifiers removed", () => {
    const family = (model: string) => defaultPricingTable.lookup(model)?.family;
    expect(family("claude-sonnet-4-5")).toBe("claude-sonnet-4-5");
    expect(family("claude-sonnet-4-5-20250929")).toBe("claude-sonnet-4-5");
    expect(family("claude-sonnet-4-20250514")).toBe("claude-sonnet-4");
    expect(family("claude-opus-4-5-20251101")).toBe("claude-opus-4-5");
    expect(family("claude-opus-4-1-20250805")).toBe("claude-opus-4");
    expect(family("claude-haiku-4-5")).toBe("claude-haiku-4-5");
    expect(family("claude-3-5-haiku-20241022")).toBe("claude-3-5-haiku");
    expect(family("us.anthropic.claude-sonnet-4-5-20250929-v1:0")).toBe("claude-sonnet-4-5");
    expect(family("claude-sonnet-4-5@20250929")).toBe("claude-sonnet-4-5");
    expect(family("anthropic/claude-haiku-4-5")).toBe("claude-haiku-4-5");
    expect(family("gpt-4o")).toBeUndefined();
    expect(family("sim-model")).toBeUndefined();
  });

  it("prices writes at 1.25x and 2x, reads at 0.1x", () => {
    expect([CACHE_WRITE_5M_MULTIPLIER, CACHE_WRITE_1H_MULTIPLIER, CACHE_READ_MULTIPLIER]).toEqual([
      1.25, 2, 0.1,
    ]);
    const sonnet = defaultPricingTable.lookup("claude-sonnet-4-5")!;
    const million = 1_000_000;
    const cost = (tokens: Partial<Parameters<typeof costOfTokens>[1]>) =>
      costOfTokens(sonnet, {
        input_tokens: 0,
        cache_write_5m_tokens: 0,
        cache_write_1h_tokens: 0,
        cache_read_tokens: 0,
        output_tokens: 0,
        ...tokens,
      });
    expect(cost({ input_tokens: million })).toBeCloseTo(3);
    expect(cost({ cache_write_5m_tokens: million })).toBeCloseTo(3.75);
    expect(cost({ cache_write_1h_tokens: million })).toBeCloseTo(6);
    expect(cost({ cache_read_tokens: million })).toBeCloseTo(0.3);
    expect(cost({ output_tokens: million })).toBeCloseTo(15);
  });

  it("takes a table of one's own", () => {
    const table = createPricingTable([
      { family: "sim", prefixes: ["sim-"], inputUsdPerMTok: 1, outputUsdPerMTok: 2 },
    ]);
    expect(table.lookup("sim-fast")?.family).toBe("sim");
    expect(table.lookup("claude-sonnet-4-5")).toBeUndefined();
  });
});
