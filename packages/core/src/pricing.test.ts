import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { InvalidPricingError } from "./errors.js";
import {
  CACHE_READ_MULTIPLIER,
  CACHE_WRITE_1H_MULTIPLIER,
  CACHE_WRITE_5M_MULTIPLIER,
  costOfTokens,
  createPricingTable,
  defaultPricingTable,
  pricesAll,
  readPricingFile,
} from "./pricing.js";

const million = 1_000_000;
/** No tokens of any class. */
const none = {
  input_tokens: 0,
  cache_write_5m_tokens: 0,
  cache_write_1h_tokens: 0,
  cache_read_tokens: 0,
  output_tokens: 0,
};

describe("pricing", () => {
  it("prices explicit-cache storage per token-second at the model's hourly storage price", () => {
    const pro = defaultPricingTable.lookup("gemini-2.5-pro")!;
    expect(pro.cacheStorageUsdPerMTokHour).toBe(4.5);
    // A million tokens for an hour: the hourly price, and nothing else.
    expect(costOfTokens(pro, { ...none, cache_storage_token_seconds: million * 3600 })).toBeCloseTo(4.5, 12);
    expect(
      costOfTokens(pro, { ...none, input_tokens: million, cache_storage_token_seconds: 1800 }),
    ).toBeCloseTo(1.25 + (1800 * 4.5) / 3600 / million, 12);
    expect(pricesAll(pro, { ...none, cache_storage_token_seconds: 1 })).toBe(true);
    // A row without a storage price prices everything but storage.
    const { cacheStorageUsdPerMTokHour: _storage, ...bare } = pro;
    expect(pricesAll(bare, { ...none, cache_storage_token_seconds: 1 })).toBe(false);
    expect(pricesAll(bare, { ...none, cache_storage_token_seconds: 0 })).toBe(true);
    expect(pricesAll(bare, none)).toBe(true);
  });

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
    expect(family("gpt-4o-2024-08-06")).toBe("gpt-4o");
    expect(family("gpt-4o-mini")).toBe("gpt-4o-mini");
    expect(family("o3")).toBeUndefined();
    expect(family("sim-model")).toBeUndefined();
    // An OpenAI id is its own row or unknown: gpt-5.x is never priced as gpt-5.
    expect(family("gpt-5.5")).toBe("gpt-5.5");
    expect(family("gpt-5.6-sol-2026-06-27")).toBe("gpt-5.6-sol");
    expect(family("gpt-5.1")).toBeUndefined();
    expect(family("gpt-5-pro")).toBeUndefined();
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

  it("prices an OpenAI model's cached input at its own share of the input price, with no write charge", () => {
    const gpt5 = defaultPricingTable.lookup("gpt-5")!;
    expect(costOfTokens(gpt5, { ...none, input_tokens: million })).toBeCloseTo(1.25);
    expect(costOfTokens(gpt5, { ...none, cache_read_tokens: million })).toBeCloseTo(0.125);
    expect(costOfTokens(gpt5, { ...none, output_tokens: million })).toBeCloseTo(10);
    const gpt41 = defaultPricingTable.lookup("gpt-4.1-2025-04-14")!;
    expect(costOfTokens(gpt41, { ...none, cache_read_tokens: million })).toBeCloseTo(0.5);
    const gpt4o = defaultPricingTable.lookup("gpt-4o")!;
    expect(costOfTokens(gpt4o, { ...none, cache_read_tokens: million })).toBeCloseTo(1.25);
  });

  it("prices a Gemini explicit cache's write as input plus 60 s of storage, its reads at a tenth", () => {
    const flash = defaultPricingTable.lookup("gemini-2.5-flash")!;
    // $0.30 to create a million tokens, $1.00 an hour to keep them: 60 s is $1/60.
    expect(costOfTokens(flash, { ...none, cache_write_5m_tokens: million })).toBeCloseTo(0.3 + 1 / 60, 6);
    expect(costOfTokens(flash, { ...none, cache_read_tokens: million })).toBeCloseTo(0.03, 6);
    expect(costOfTokens(flash, { ...none, input_tokens: million, output_tokens: million })).toBeCloseTo(
      2.8,
      6,
    );
    const pro = defaultPricingTable.lookup("gemini-2.5-pro")!;
    expect(costOfTokens(pro, { ...none, cache_write_5m_tokens: million })).toBeCloseTo(1.25 + 4.5 / 60, 6);
    expect(defaultPricingTable.lookup("gemini-2.5-flash-lite")?.family).toBe("gemini-2.5-flash-lite");
  });

  it("takes a table of one's own", () => {
    const table = createPricingTable([
      { family: "sim", prefixes: ["sim-"], inputUsdPerMTok: 1, outputUsdPerMTok: 2 },
    ]);
    expect(table.lookup("sim-fast")?.family).toBe("sim");
    expect(table.lookup("claude-sonnet-4-5")).toBeUndefined();
  });
});

describe("price files (FORKD_PRICES)", () => {
  const dir = mkdtempSync(join(tmpdir(), "forkd-prices-"));
  let files = 0;
  const file = (content: string) => {
    const path = join(dir, `prices-${++files}.json`);
    writeFileSync(path, content);
    return path;
  };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.resetModules();
  });

  it("reads one row per prefix, a zero price allowed", () => {
    const path = file(
      JSON.stringify({
        "sim-": { inputUsdPerMTok: 0, outputUsdPerMTok: 0 },
        "claude-sonnet-4-5": { inputUsdPerMTok: 1.5, outputUsdPerMTok: 7.5 },
      }),
    );
    expect(readPricingFile(path)).toEqual([
      { family: "sim-", prefixes: ["sim-"], inputUsdPerMTok: 0, outputUsdPerMTok: 0 },
      {
        family: "claude-sonnet-4-5",
        prefixes: ["claude-sonnet-4-5"],
        inputUsdPerMTok: 1.5,
        outputUsdPerMTok: 7.5,
      },
    ]);
  });

  it("refuses a file it cannot read or parse, naming it", () => {
    const missing = join(dir, "missing.json");
    expect(() => readPricingFile(missing)).toThrow(InvalidPricingError);
    expect(() => readPricingFile(missing)).toThrow(`cannot read the price file ${missing}: ENOENT`);
    const broken = file("{ not json");
    expect(() => readPricingFile(broken)).toThrow(`cannot read the price file ${broken}: `);
    try {
      readPricingFile(broken);
    } catch (error) {
      expect((error as Error).cause).toBeInstanceOf(SyntaxError);
    }
  });

  it("refuses anything but an object of prefix → prices", () => {
    for (const content of ["[]", "null", '"claude"', "3"]) {
      const path = file(content);
      expect(() => readPricingFile(path), content).toThrow(
        new InvalidPricingError(`${path}: expected an object of model id prefix → prices`),
      );
    }
  });

  it("refuses a row without two finite non-negative prices, or with an empty prefix", () => {
    const rows: [string, unknown][] = [
      ["m", { inputUsdPerMTok: -1, outputUsdPerMTok: 1 }],
      ["m", { inputUsdPerMTok: 1, outputUsdPerMTok: -0.01 }],
      ["m", { inputUsdPerMTok: "3", outputUsdPerMTok: 15 }],
      ["m", { inputUsdPerMTok: 3, outputUsdPerMTok: "15" }],
      ["m", { inputUsdPerMTok: 3 }],
      ["m", { outputUsdPerMTok: 15 }],
      ["m", null],
      ["", { inputUsdPerMTok: 3, outputUsdPerMTok: 15 }],
    ];
    for (const [prefix, row] of rows) {
      const path = file(JSON.stringify({ [prefix]: row }));
      expect(() => readPricingFile(path), JSON.stringify(row)).toThrow(
        new InvalidPricingError(
          `${path}: ${JSON.stringify(prefix)} needs non-negative inputUsdPerMTok and outputUsdPerMTok`,
        ),
      );
    }
    // JSON has no Infinity, but 1e999 parses to it.
    const infinite = file('{ "m": { "inputUsdPerMTok": 1e999, "outputUsdPerMTok": 1 } }');
    expect(() => readPricingFile(infinite)).toThrow(InvalidPricingError);
  });

  it("puts the file's rows before the defaults: new models priced, known ones repriced, the rest kept", async () => {
    vi.stubEnv(
      "FORKD_PRICES",
      file(
        JSON.stringify({
          "sim-": { inputUsdPerMTok: 1, outputUsdPerMTok: 2 },
          "claude-sonnet-4-5": { inputUsdPerMTok: 30, outputUsdPerMTok: 150 },
        }),
      ),
    );
    vi.resetModules();
    const { defaultPricingTable: table } = await import("./pricing.js");
    expect(table.lookup("sim-fast")).toMatchObject({ inputUsdPerMTok: 1, outputUsdPerMTok: 2 });
    expect(table.lookup("claude-sonnet-4-5-20250929")).toMatchObject({ inputUsdPerMTok: 30 });
    expect(table.lookup("claude-haiku-4-5")).toEqual(defaultPricingTable.lookup("claude-haiku-4-5"));
  });
});
