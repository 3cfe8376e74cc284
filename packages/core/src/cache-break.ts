// Cache-break detection: a fork's first turn should read the inherited prefix from the cache. When it
// reads less than half of its prompt, something broke the cache; the layer hashes say what.
import { type ForkEventBody, minCacheableTokens, type ProviderUsage } from "@forkd/protocol";
import { type CacheLayerHashes, firstChangedLayer } from "./cache-key.js";
import { promptTokensOf } from "./usage.js";

/** What the first turn's usage is checked against. */
export interface CacheBreakCheck {
  /** Layer hashes of the prefix as this child received it (a model override applied). */
  prefixLayers: CacheLayerHashes;
  /** The parent's layer hashes of the same prefix, when known. Without them a break names layer `none`. */
  parentLayers?: CacheLayerHashes;
  /** Prompts below this cannot be cached, so no break is reported. @default minCacheableTokens(model) */
  minCacheableTokens?: number;
}

/** The `cache.break` event body of a first turn, or `null` when its reads are as expected. */
export function detectCacheBreak(
  turn: number,
  model: string,
  usage: ProviderUsage,
  check: CacheBreakCheck,
): Extract<ForkEventBody, { type: "cache.break" }> | null {
  const promptTokens = promptTokensOf(usage);
  const readTokens = usage.cache_read_input_tokens ?? 0;
  if (promptTokens < (check.minCacheableTokens ?? minCacheableTokens(model))) return null;
  if (readTokens >= promptTokens / 2) return null;
  const layer =
    check.parentLayers === undefined ? "none" : firstChangedLayer(check.parentLayers, check.prefixLayers);
  const why =
    layer !== "none"
      ? `the ${layer} layer differs from the parent's, so the parent's cache entry cannot match`
      : check.parentLayers === undefined
        ? "the parent's layer hashes are unknown; expiry, eviction or a provider-side change are likely"
        : "every layer matches the parent's: the entry expired, was evicted, or the provider missed";
  return {
    type: "cache.break",
    turn,
    layer,
    prompt_tokens: promptTokens,
    cache_read_tokens: readTokens,
    detail: `read ${readTokens} of ${promptTokens} prompt tokens from the cache; ${why}`,
  };
}
