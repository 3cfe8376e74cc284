// Token usage of a streamed response (message_start merged with message_delta, as Anthropic
// documents it) and its accounting into a run's UsageTotals, priced with core's pricing table.
import { addUsageTotals, defaultPricingTable, type PricingTable, tokenCountsOf } from "@forkd/core";
import { usagePricer } from "@forkd/core/internal";
import type { ProviderUsage, UsageTotals } from "@forkd/protocol";

/**
 * The usage of a streamed response so far: `message_start`'s usage with each non-null field of a
 * later `message_delta` usage written over it. `message_delta.usage.output_tokens` is cumulative,
 * so it replaces, never adds; input and cache fields stay as `message_start` reported them unless
 * the delta carries them too.
 */
export function mergeUsage(
  start: ProviderUsage,
  delta: Readonly<Record<string, unknown>> | null | undefined,
): ProviderUsage {
  const merged: ProviderUsage = { ...start };
  if (!delta) return merged;
  for (const [key, value] of Object.entries(delta)) {
    if (value !== null && value !== undefined) {
      (merged as Record<string, unknown>)[key] = value;
    }
  }
  return merged;
}

/**
 * The price of one response's usage.
 * @param pricing @default defaultPricingTable (core's `DEFAULT_MODEL_PRICING`)
 * @returns US dollars, or `null` when the table does not know `model` (never priced at zero).
 */
export function costOfUsage(
  model: string,
  usage: ProviderUsage,
  pricing: PricingTable = defaultPricingTable,
): number | null {
  return usagePricer(pricing)(model, usage);
}

/**
 * One response as {@link UsageTotals}: its tokens by kind (cache writes split by TTL; without the
 * provider's `cache_creation` breakdown every write counts as 5-minute), one call, and its price.
 * @param pricing @default defaultPricingTable
 */
export function usageTotalsOf(
  model: string,
  usage: ProviderUsage,
  pricing: PricingTable = defaultPricingTable,
): UsageTotals {
  const cost = costOfUsage(model, usage, pricing);
  return {
    ...tokenCountsOf(usage),
    llm_calls: 1,
    cost_usd: cost,
    ...(cost === null ? { unpriced_models: [model] } : {}),
  };
}

/**
 * Adds one response's usage to a run's totals and returns the new totals (the input is not
 * changed). A model the table does not know is listed in `unpriced_models` and makes `cost_usd`
 * `null` from then on: an unknown price is reported, never counted as zero.
 * @param pricing @default defaultPricingTable
 */
export function addUsage(
  totals: UsageTotals,
  model: string,
  usage: ProviderUsage,
  pricing: PricingTable = defaultPricingTable,
): UsageTotals {
  return addUsageTotals(totals, usageTotalsOf(model, usage, pricing));
}
