// Token usage summed over a run's turns, priced per model; a model the table does not know makes the
// cost unknown (null) and is named, never priced at zero.
import { emptyUsageTotals, type ProviderUsage, type UsageTotals } from "@forkd/protocol";
import {
  costOfTokens,
  defaultPricingTable,
  type PricingTable,
  pricesAll,
  type TokenCounts,
} from "./pricing.js";

/**
 * The provider's usage of one response by price class. Cache writes are split by TTL when the provider
 * says so (`cache_creation`); otherwise, or for what the split does not cover, they count as 5m.
 */
export function tokenCountsOf(usage: ProviderUsage): TokenCounts {
  const written = usage.cache_creation_input_tokens ?? 0;
  const split = usage.cache_creation;
  const oneHour = split?.ephemeral_1h_input_tokens ?? 0;
  const fiveMinutes = split ? Math.max(split.ephemeral_5m_input_tokens, written - oneHour) : written;
  const stored = usage.cache_storage_token_seconds ?? 0;
  return {
    input_tokens: usage.input_tokens,
    cache_write_5m_tokens: fiveMinutes,
    cache_write_1h_tokens: oneHour,
    cache_read_tokens: usage.cache_read_input_tokens ?? 0,
    output_tokens: usage.output_tokens,
    // Only Gemini's renewals report storage: the field stays absent everywhere else.
    ...(stored > 0 ? { cache_storage_token_seconds: stored } : {}),
  };
}

/** Every input token of a response: uncached, written and read. */
export function promptTokensOf(usage: ProviderUsage): number {
  return usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
}

// Sums in floating point drift in the last digits; a millionth of a cent is below any price shown.
function roundUsd(usd: number): number {
  return Math.round(usd * 1e8) / 1e8;
}

/** Sums the usage of a run's responses and prices it. */
export class UsageAccumulator {
  readonly #pricing: PricingTable;
  #totals: UsageTotals = emptyUsageTotals();
  #cost = 0;
  readonly #unpriced = new Set<string>();

  /** @param pricing the table to price with. @default defaultPricingTable */
  constructor(pricing: PricingTable = defaultPricingTable) {
    this.#pricing = pricing;
  }

  /** Adds one response's usage, made by `model`. */
  add(model: string, usage: ProviderUsage): void {
    const tokens = tokenCountsOf(usage);
    const t = this.#totals;
    t.input_tokens += tokens.input_tokens;
    t.cache_write_5m_tokens += tokens.cache_write_5m_tokens;
    t.cache_write_1h_tokens += tokens.cache_write_1h_tokens;
    t.cache_read_tokens += tokens.cache_read_tokens;
    t.output_tokens += tokens.output_tokens;
    if (tokens.cache_storage_token_seconds !== undefined)
      t.cache_storage_token_seconds =
        (t.cache_storage_token_seconds ?? 0) + tokens.cache_storage_token_seconds;
    t.llm_calls += 1;
    const pricing = this.#pricing.lookup(model);
    if (pricing === undefined || !pricesAll(pricing, tokens)) this.#unpriced.add(model);
    else this.#cost += costOfTokens(pricing, tokens);
  }

  /** The sums so far. `cost_usd` is null, and `unpriced_models` set, when a model could not be priced. */
  get totals(): UsageTotals {
    const totals: UsageTotals = { ...this.#totals, cost_usd: null };
    if (this.#unpriced.size > 0) totals.unpriced_models = [...this.#unpriced].sort();
    else totals.cost_usd = roundUsd(this.#cost);
    return totals;
  }
}

/** Adds two totals (e.g. of sibling forks). A null cost on either side makes the sum's cost null. */
export function addUsageTotals(a: UsageTotals, b: UsageTotals): UsageTotals {
  const unpriced = [...new Set([...(a.unpriced_models ?? []), ...(b.unpriced_models ?? [])])].sort();
  const sum: UsageTotals = {
    input_tokens: a.input_tokens + b.input_tokens,
    cache_write_5m_tokens: a.cache_write_5m_tokens + b.cache_write_5m_tokens,
    cache_write_1h_tokens: a.cache_write_1h_tokens + b.cache_write_1h_tokens,
    cache_read_tokens: a.cache_read_tokens + b.cache_read_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    llm_calls: a.llm_calls + b.llm_calls,
    cost_usd: a.cost_usd === null || b.cost_usd === null ? null : roundUsd(a.cost_usd + b.cost_usd),
  };
  if (a.cache_storage_token_seconds !== undefined || b.cache_storage_token_seconds !== undefined)
    sum.cache_storage_token_seconds =
      (a.cache_storage_token_seconds ?? 0) + (b.cache_storage_token_seconds ?? 0);
  if (unpriced.length > 0) sum.unpriced_models = unpriced;
  return sum;
}

/** Every token of `totals`, of every kind. */
export function totalTokensOf(totals: UsageTotals): number {
  return (
    totals.input_tokens +
    totals.cache_write_5m_tokens +
    totals.cache_write_1h_tokens +
    totals.cache_read_tokens +
    totals.output_tokens
  );
}

/**
 * A function that prices one response, `null` for a model the table does not know: the shape
 * @forkd/llm's accounting takes.
 * @param pricing @default defaultPricingTable
 */
export function usagePricer(
  pricing: PricingTable = defaultPricingTable,
): (model: string, usage: ProviderUsage) => number | null {
  return (model, usage) => {
    const entry = pricing.lookup(model);
    const tokens = tokenCountsOf(usage);
    return entry === undefined || !pricesAll(entry, tokens) ? null : costOfTokens(entry, tokens);
  };
}
