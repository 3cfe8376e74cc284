// What models cost, per model family, and the price of a set of tokens. One table to update when
// prices change; @forkd/llm uses it too.
import { readFileSync } from "node:fs";
import { InvalidPricingError } from "./errors.js";

/** Price multiplier of input tokens written to the cache with the 5-minute TTL. */
export const CACHE_WRITE_5M_MULTIPLIER = 1.25;
/** Price multiplier of input tokens written to the cache with the 1-hour TTL. */
export const CACHE_WRITE_1H_MULTIPLIER = 2;
/** Price multiplier of input tokens read from the cache. */
export const CACHE_READ_MULTIPLIER = 0.1;

/** The price of one model family. */
export interface ModelPricing {
  /** Family name, e.g. `"claude-sonnet-4-5"`. */
  family: string;
  /** Model id prefixes of the family, e.g. `["claude-sonnet-4-5"]` matches `claude-sonnet-4-5-20250929`. */
  prefixes: readonly string[];
  /** Base input price. @unit USD per million tokens */
  inputUsdPerMTok: number;
  /** Output price. @unit USD per million tokens */
  outputUsdPerMTok: number;
}

/**
 * List prices (standard context, no batch discount). The input prices of every model the
 * `@anthropic-ai/sdk` `Model` type names were read, on 2026-11-25, from the cost the real Claude
 * Code CLI (2.1.331) computes for its own requests (`modelUsage[m].costUSD`); output is five times
 * input, as for every Anthropic model. The longest matching prefix wins, so `claude-opus-4-5` is
 * priced apart from the older `claude-opus-4*` and `claude-opus-5-5` apart from `claude-opus-5`.
 * A model matching no row is unpriced (never $0); `FORKD_PRICES` adds or replaces rows.
 */
export const DEFAULT_MODEL_PRICING: readonly ModelPricing[] = [
  { family: "claude-fable-5-2", prefixes: ["claude-fable-5-2"], inputUsdPerMTok: 8, outputUsdPerMTok: 40 },
  { family: "claude-mythos-5-2", prefixes: ["claude-mythos-5-2"], inputUsdPerMTok: 8, outputUsdPerMTok: 40 },
  { family: "claude-haiku-5-5", prefixes: ["claude-haiku-5-5"], inputUsdPerMTok: 0.1, outputUsdPerMTok: 0.5 },
  { family: "claude-sonnet-5-5", prefixes: ["claude-sonnet-5-5"], inputUsdPerMTok: 2, outputUsdPerMTok: 10 },
  { family: "claude-opus-5-5", prefixes: ["claude-opus-5-5"], inputUsdPerMTok: 4, outputUsdPerMTok: 20 },
  { family: "claude-fable-5-1", prefixes: ["claude-fable-5-1"], inputUsdPerMTok: 10, outputUsdPerMTok: 50 },
  { family: "claude-mythos-5-1", prefixes: ["claude-mythos-5-1"], inputUsdPerMTok: 10, outputUsdPerMTok: 50 },
  { family: "claude-fable-5", prefixes: ["claude-fable-5"], inputUsdPerMTok: 10, outputUsdPerMTok: 50 },
  { family: "claude-mythos-5", prefixes: ["claude-mythos-5"], inputUsdPerMTok: 10, outputUsdPerMTok: 50 },
  { family: "claude-sonnet-5", prefixes: ["claude-sonnet-5"], inputUsdPerMTok: 2, outputUsdPerMTok: 10 },
  { family: "claude-opus-5", prefixes: ["claude-opus-5"], inputUsdPerMTok: 5, outputUsdPerMTok: 25 },
  {
    family: "claude-mythos-preview",
    prefixes: ["claude-mythos-preview"],
    inputUsdPerMTok: 4,
    outputUsdPerMTok: 20,
  },
  { family: "claude-opus-4-8", prefixes: ["claude-opus-4-8"], inputUsdPerMTok: 5, outputUsdPerMTok: 25 },
  { family: "claude-opus-4-7", prefixes: ["claude-opus-4-7"], inputUsdPerMTok: 5, outputUsdPerMTok: 25 },
  { family: "claude-opus-4-6", prefixes: ["claude-opus-4-6"], inputUsdPerMTok: 5, outputUsdPerMTok: 25 },
  { family: "claude-opus-4-5", prefixes: ["claude-opus-4-5"], inputUsdPerMTok: 5, outputUsdPerMTok: 25 },
  { family: "claude-sonnet-4-6", prefixes: ["claude-sonnet-4-6"], inputUsdPerMTok: 3, outputUsdPerMTok: 15 },
  { family: "claude-sonnet-4-5", prefixes: ["claude-sonnet-4-5"], inputUsdPerMTok: 3, outputUsdPerMTok: 15 },
  { family: "claude-haiku-4-5", prefixes: ["claude-haiku-4-5"], inputUsdPerMTok: 1, outputUsdPerMTok: 5 },
  { family: "claude-opus-4", prefixes: ["claude-opus-4"], inputUsdPerMTok: 15, outputUsdPerMTok: 75 },
  { family: "claude-sonnet-4", prefixes: ["claude-sonnet-4"], inputUsdPerMTok: 3, outputUsdPerMTok: 15 },
  {
    family: "claude-3-7-sonnet",
    prefixes: ["claude-3-7-sonnet"],
    inputUsdPerMTok: 3,
    outputUsdPerMTok: 15,
  },
  {
    family: "claude-3-5-sonnet",
    prefixes: ["claude-3-5-sonnet"],
    inputUsdPerMTok: 3,
    outputUsdPerMTok: 15,
  },
  { family: "claude-3-5-haiku", prefixes: ["claude-3-5-haiku"], inputUsdPerMTok: 0.8, outputUsdPerMTok: 4 },
  { family: "claude-3-opus", prefixes: ["claude-3-opus"], inputUsdPerMTok: 15, outputUsdPerMTok: 75 },
  { family: "claude-3-haiku", prefixes: ["claude-3-haiku"], inputUsdPerMTok: 0.25, outputUsdPerMTok: 1.25 },
];

/** Token counts by price class. */
export interface TokenCounts {
  /** Uncached input. */
  input_tokens: number;
  cache_write_5m_tokens: number;
  cache_write_1h_tokens: number;
  cache_read_tokens: number;
  output_tokens: number;
}

/** A pricing table: finds a model's family. */
export interface PricingTable {
  readonly entries: readonly ModelPricing[];
  /** The family of `model`, or `undefined` when the table does not know it (never priced at zero). */
  lookup(model: string): ModelPricing | undefined;
}

// Provider-qualified ids name the same models: `anthropic.claude-…-v1:0` (Bedrock, with an optional
// region prefix such as `us.`), `claude-…@20250929` (Vertex), `anthropic/claude-…` (routers).
function normaliseModelId(model: string): string {
  let id = model.trim().toLowerCase();
  id = id.replace(/^(?:[a-z]{2}\.)?anthropic[./]/, "");
  id = id.replace(/@.*$/, "");
  return id;
}

/** Builds a pricing table. Lookup is by the longest matching id prefix, after provider qualifiers are removed. */
export function createPricingTable(entries: readonly ModelPricing[] = DEFAULT_MODEL_PRICING): PricingTable {
  const byPrefix = entries
    .flatMap((entry) => entry.prefixes.map((prefix) => ({ prefix: prefix.toLowerCase(), entry })))
    .sort((a, b) => b.prefix.length - a.prefix.length);
  return {
    entries,
    lookup(model) {
      const id = normaliseModelId(model);
      return byPrefix.find(({ prefix }) => id.startsWith(prefix))?.entry;
    },
  };
}

/**
 * Rows from a price file: a JSON object mapping a model id prefix to its prices,
 * `{ "claude-opus-6": { "inputUsdPerMTok": 5, "outputUsdPerMTok": 25 } }`. They come before
 * {@link DEFAULT_MODEL_PRICING}'s rows, so a file adds models and replaces prices.
 * @throws {@link InvalidPricingError} when the file cannot be read or a row is not two
 *   non-negative prices.
 */
export function readPricingFile(path: string): ModelPricing[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (cause) {
    throw new InvalidPricingError(`cannot read the price file ${path}: ${(cause as Error).message}`, {
      cause,
    });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new InvalidPricingError(`${path}: expected an object of model id prefix → prices`);
  }
  return Object.entries(parsed as Record<string, unknown>).map(([prefix, row]) => {
    const { inputUsdPerMTok, outputUsdPerMTok } = (row ?? {}) as Record<string, unknown>;
    const price = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v >= 0;
    if (prefix === "" || !price(inputUsdPerMTok) || !price(outputUsdPerMTok)) {
      throw new InvalidPricingError(
        `${path}: ${JSON.stringify(prefix)} needs non-negative inputUsdPerMTok and outputUsdPerMTok`,
      );
    }
    return {
      family: prefix,
      prefixes: [prefix],
      inputUsdPerMTok: inputUsdPerMTok as number,
      outputUsdPerMTok: outputUsdPerMTok as number,
    };
  });
}

/**
 * The table of {@link DEFAULT_MODEL_PRICING}, with the rows of the file named by `FORKD_PRICES`
 * (see {@link readPricingFile}) first when it is set.
 */
export const defaultPricingTable: PricingTable = createPricingTable(
  process.env.FORKD_PRICES
    ? [...readPricingFile(process.env.FORKD_PRICES), ...DEFAULT_MODEL_PRICING]
    : DEFAULT_MODEL_PRICING,
);

/** The price of `tokens` at `pricing`. @unit USD */
export function costOfTokens(pricing: ModelPricing, tokens: TokenCounts): number {
  const input = pricing.inputUsdPerMTok;
  const micro =
    tokens.input_tokens * input +
    tokens.cache_write_5m_tokens * input * CACHE_WRITE_5M_MULTIPLIER +
    tokens.cache_write_1h_tokens * input * CACHE_WRITE_1H_MULTIPLIER +
    tokens.cache_read_tokens * input * CACHE_READ_MULTIPLIER +
    tokens.output_tokens * pricing.outputUsdPerMTok;
  return micro / 1_000_000;
}
