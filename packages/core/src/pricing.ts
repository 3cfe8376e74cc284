// What models cost, per model family, and the price of a set of tokens. One table to update when
// prices change; @forkd/llm uses it too.

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
 * Anthropic's list prices (standard context, no batch discount), checked 2025-11. The longest matching
 * prefix wins, so `claude-opus-4-5` is priced apart from the older `claude-opus-4*`.
 */
export const DEFAULT_MODEL_PRICING: readonly ModelPricing[] = [
  { family: "claude-opus-4-5", prefixes: ["claude-opus-4-5"], inputUsdPerMTok: 5, outputUsdPerMTok: 25 },
  { family: "claude-opus-4", prefixes: ["claude-opus-4"], inputUsdPerMTok: 15, outputUsdPerMTok: 75 },
  { family: "claude-sonnet-4-5", prefixes: ["claude-sonnet-4-5"], inputUsdPerMTok: 3, outputUsdPerMTok: 15 },
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
  { family: "claude-haiku-4-5", prefixes: ["claude-haiku-4-5"], inputUsdPerMTok: 1, outputUsdPerMTok: 5 },
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

/** The table of {@link DEFAULT_MODEL_PRICING}. */
export const defaultPricingTable: PricingTable = createPricingTable();

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
