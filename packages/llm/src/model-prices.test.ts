// Every model the SDK names has a price (read from the real Claude Code CLI's own cost accounting),
// a price file adds or replaces rows, and an unknown model stays unpriced rather than free.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Model } from "@anthropic-ai/sdk/resources/messages/messages";
import {
  createPricingTable,
  DEFAULT_MODEL_PRICING,
  defaultPricingTable,
  InvalidPricingError,
  readPricingFile,
} from "@forkd/core";
import { modelFacts } from "@forkd/protocol";
import { afterAll, describe, expect, expectTypeOf, it } from "vitest";

/** The literal members of a union that also admits any string. */
type Literals<T> = T extends string ? (string extends T ? never : T) : never;

const SDK_MODELS = [
  "claude-fable-5-2",
  "claude-mythos-5-2",
  "claude-haiku-5-5",
  "claude-sonnet-5-5",
  "claude-fable-5-1",
  "claude-opus-5-5",
  "claude-mythos-5-1",
  "claude-sonnet-5",
  "claude-fable-5",
  "claude-mythos-5",
  "claude-opus-5",
  "claude-opus-4-8",
  "claude-opus-4-7",
  "claude-mythos-preview",
  "claude-opus-4-6",
  "claude-sonnet-4-6",
  "claude-haiku-4-5",
  "claude-haiku-4-5-20251001",
  "claude-opus-4-5",
  "claude-opus-4-5-20251101",
  "claude-sonnet-4-5",
  "claude-sonnet-4-5-20250929",
] as const;

const dir = mkdtempSync(join(tmpdir(), "forkd-prices-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("model prices", () => {
  it("and facts cover every model the SDK's Model type names (typecheck fails when the SDK adds one)", () => {
    expectTypeOf<(typeof SDK_MODELS)[number]>().toEqualTypeOf<Literals<Model>>();
    for (const model of SDK_MODELS) {
      expect(defaultPricingTable.lookup(model), model).toBeDefined();
      expect(modelFacts(model)?.family, model).toBe(defaultPricingTable.lookup(model)?.family);
    }
  });

  it("tell point releases apart from their family (longest prefix)", () => {
    expect(defaultPricingTable.lookup("claude-opus-5-5")?.inputUsdPerMTok).toBe(4);
    expect(defaultPricingTable.lookup("claude-opus-5")?.inputUsdPerMTok).toBe(5);
    expect(defaultPricingTable.lookup("claude-opus-4-6")?.inputUsdPerMTok).toBe(5);
    expect(defaultPricingTable.lookup("claude-opus-4-1")?.inputUsdPerMTok).toBe(15);
    expect(defaultPricingTable.lookup("claude-sonnet-4-6")).toMatchObject({
      inputUsdPerMTok: 3,
      outputUsdPerMTok: 15,
    });
  });

  it("leave an unknown model unpriced", () => {
    expect(defaultPricingTable.lookup("mystery-model-1")).toBeUndefined();
  });

  it("come from a price file first, which adds and replaces rows", () => {
    const file = join(dir, "prices.json");
    writeFileSync(
      file,
      JSON.stringify({
        "claude-opus-6": { inputUsdPerMTok: 6, outputUsdPerMTok: 30 },
        "claude-sonnet-4-6": { inputUsdPerMTok: 0, outputUsdPerMTok: 0 },
      }),
    );
    const table = createPricingTable([...readPricingFile(file), ...DEFAULT_MODEL_PRICING]);
    expect(table.lookup("claude-opus-6-20270101")?.inputUsdPerMTok).toBe(6);
    expect(table.lookup("claude-sonnet-4-6")?.outputUsdPerMTok).toBe(0);
    expect(table.lookup("claude-opus-5-5")?.inputUsdPerMTok).toBe(4);
  });

  it("refuse a price file that is not prices", () => {
    const bad = join(dir, "bad.json");
    for (const text of [
      "[1]",
      '{"m": {"inputUsdPerMTok": -1, "outputUsdPerMTok": 1}}',
      '{"m": {"inputUsdPerMTok": 1}}',
      "{",
    ]) {
      writeFileSync(bad, text);
      expect(() => readPricingFile(bad), text).toThrow(InvalidPricingError);
    }
    expect(() => readPricingFile(join(dir, "missing.json"))).toThrow(/cannot read the price file/);
  });
});
