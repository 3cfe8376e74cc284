// The price of a set of tokens. The prices themselves are rows of @forkd/protocol's model facts table,
// the one place to update when they change; @forkd/llm prices with this module too.
import { readFileSync } from "node:fs";
import { MODEL_FACTS, type ModelFacts } from "@forkd/protocol";
import { longestPrefixLookup } from "@forkd/protocol/internal";
import { InvalidPricingError } from "./errors.js";

/** Price multiplier of input tokens written to the cache with the 5-minute TTL. */
export const CACHE_WRITE_5M_MULTIPLIER = 1.25;
/** Price multiplier of input tokens written to the cache with the 1-hour TTL. */
export const CACHE_WRITE_1H_MULTIPLIER = 2;
/** Price multiplier of input tokens read from the cache. */
export const CACHE_READ_MULTIPLIER = 0.1;

/** The price of one model family: the price columns of `@forkd/protocol`'s {@link ModelFacts}. */
export type ModelPricing = Pick<
  ModelFacts,
  | "family"
  | "prefixes"
  | "wholeIds"
  | "inputUsdPerMTok"
  | "outputUsdPerMTok"
  | "cacheReadMultiplier"
  | "cacheWriteMultiplier"
  | "cacheStorageUsdPerMTokHour"
>;

/**
 * List prices (standard context, no batch discount) of every model in `@forkd/protocol`'s
 * {@link MODEL_FACTS}, where their source is cited. A model matching no row is unpriced (never $0);
 * `FORKD_PRICES` adds or replaces rows.
 */
export const DEFAULT_MODEL_PRICING: readonly ModelPricing[] = MODEL_FACTS;

/** Token counts by price class. */
export interface TokenCounts {
  /** Uncached input. */
  input_tokens: number;
  cache_write_5m_tokens: number;
  cache_write_1h_tokens: number;
  cache_read_tokens: number;
  output_tokens: number;
  /** Explicit-cache storage bought by renewals (Gemini), priced at `cacheStorageUsdPerMTokHour`. @unit token-seconds */
  cache_storage_token_seconds?: number;
}

/** A pricing table: finds a model's family. */
export interface PricingTable {
  readonly entries: readonly ModelPricing[];
  /** The family of `model`, or `undefined` when the table does not know it (never priced at zero). */
  lookup(model: string): ModelPricing | undefined;
}

/**
 * Builds a pricing table. Lookup is by the longest matching id prefix, after provider qualifiers are
 * removed; a row with `wholeIds` (OpenAI's) only by its own id or a dated snapshot of it.
 */
export function createPricingTable(entries: readonly ModelPricing[] = DEFAULT_MODEL_PRICING): PricingTable {
  return { entries, lookup: longestPrefixLookup(entries) };
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

/**
 * Whether `pricing` can price every kind of `tokens`: storage needs the model's storage price (a
 * price-file row has none), and is never priced at zero.
 */
export function pricesAll(pricing: ModelPricing, tokens: TokenCounts): boolean {
  return (tokens.cache_storage_token_seconds ?? 0) === 0 || pricing.cacheStorageUsdPerMTokHour !== undefined;
}

/** The price of `tokens` at `pricing` (storage without a storage price: see {@link pricesAll}). @unit USD */
export function costOfTokens(pricing: ModelPricing, tokens: TokenCounts): number {
  const input = pricing.inputUsdPerMTok;
  // Storage is priced per million tokens per hour: a token-second is an hour's 3,600th.
  const storage =
    ((tokens.cache_storage_token_seconds ?? 0) * (pricing.cacheStorageUsdPerMTokHour ?? 0)) / 3600;
  const micro =
    tokens.input_tokens * input +
    tokens.cache_write_5m_tokens * input * (pricing.cacheWriteMultiplier ?? CACHE_WRITE_5M_MULTIPLIER) +
    tokens.cache_write_1h_tokens * input * CACHE_WRITE_1H_MULTIPLIER +
    tokens.cache_read_tokens * input * (pricing.cacheReadMultiplier ?? CACHE_READ_MULTIPLIER) +
    tokens.output_tokens * pricing.outputUsdPerMTok +
    storage;
  return micro / 1_000_000;
}
