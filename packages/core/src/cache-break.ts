// Cache-break detection: a fork's first turn should read the inherited prefix from the cache. When it
// reads less, the event says by how much, what the shortfall cost, and why: the layer hashes name the
// layer that changed, the provider's own diagnosis (when it gave one) is carried beside them, and when
// every layer matches the entry expired or was evicted.
import {
  type ForkEventBody,
  minCacheableTokens,
  type ProviderCacheMissReason,
  type ProviderUsage,
} from "@forkd/protocol";
import { type DiagnosisLayer, type DiagnosisLayerHashes, firstDifferingLayer } from "./cache-diagnosis.js";
import {
  CACHE_READ_MULTIPLIER,
  CACHE_WRITE_1H_MULTIPLIER,
  CACHE_WRITE_5M_MULTIPLIER,
  defaultPricingTable,
  type PricingTable,
} from "./pricing.js";
import { promptTokensOf, tokenCountsOf } from "./usage.js";

/** What the first turn's usage is checked against. */
export interface CacheBreakCheck {
  /** Layer hashes of this child's request (a model override applied). */
  prefixLayers: DiagnosisLayerHashes;
  /** The parent's layer hashes of the same prefix, when known. Without them a break names layer `none`. */
  parentLayers?: DiagnosisLayerHashes;
  /**
   * Input tokens the parent's own request had up to its last breakpoint (its usage's cache reads plus
   * cache writes): what the child should read. Unknown: a turn that read under half of its prompt is a
   * break, and what it wrote (or, when it wrote nothing, its whole prompt) counts as missed.
   */
  parentCachedTokens?: number;
  /** Prompts below this cannot be cached, so no break is reported. @default minCacheableTokens(model) */
  minCacheableTokens?: number;
}

/** What else {@link detectCacheBreak} knows of the turn. */
export interface CacheBreakContext {
  /** The provider's `diagnostics.cache_miss_reason` for this turn, when it gave one. */
  provider?: ProviderCacheMissReason | undefined;
  /** Prices the missed tokens. @default defaultPricingTable */
  pricing?: PricingTable | undefined;
}

/**
 * A shortfall this small is not reported: the provider's token counts of one prefix can differ by a
 * few tokens between requests. @unit share of the expected reads
 */
export const CACHE_MISS_TOLERANCE = 0.02;

const PROVIDER_LAYERS: Readonly<Record<string, DiagnosisLayer>> = {
  model_changed: "model",
  tools_changed: "tools",
  system_changed: "system",
  messages_changed: "messages",
};

/** The tokens a first turn could have read from the cache, or `null` when it is not a break. */
function expectedReads(
  usage: ProviderUsage,
  check: CacheBreakCheck,
  provider: ProviderCacheMissReason | undefined,
) {
  const read = usage.cache_read_input_tokens ?? 0;
  if (check.parentCachedTokens !== undefined) return check.parentCachedTokens;
  if (provider?.cache_missed_input_tokens !== undefined) return read + provider.cache_missed_input_tokens;
  const prompt = promptTokensOf(usage);
  if (read >= prompt / 2) return null;
  // What was written up to the breakpoint could have been read; a provider that reports no writes
  // (OpenAI caches without them) could have served the whole prompt, at most.
  const written = usage.cache_creation_input_tokens ?? 0;
  return written > 0 ? read + written : prompt;
}

/**
 * What `missed` tokens cost above their cache-read price: the written share at this response's write
 * price (5-minute or 1-hour, as its split says), the rest at the input price. `undefined` for a model
 * the table does not know.
 */
export function cacheMissCost(
  model: string,
  usage: ProviderUsage,
  missed: number,
  pricing: PricingTable = defaultPricingTable,
): number | undefined {
  const entry = pricing.lookup(model);
  if (entry === undefined) return undefined;
  const counts = tokenCountsOf(usage);
  const writes = counts.cache_write_5m_tokens + counts.cache_write_1h_tokens;
  const written = Math.min(missed, writes);
  const writeMultiplier =
    writes === 0
      ? CACHE_WRITE_5M_MULTIPLIER
      : (counts.cache_write_5m_tokens * CACHE_WRITE_5M_MULTIPLIER +
          counts.cache_write_1h_tokens * CACHE_WRITE_1H_MULTIPLIER) /
        writes;
  const readMultiplier = entry.cacheReadMultiplier ?? CACHE_READ_MULTIPLIER;
  const micro =
    entry.inputUsdPerMTok *
    (written * (writeMultiplier - readMultiplier) + (missed - written) * (1 - readMultiplier));
  return Math.round(micro * 100) / 1e8;
}

/**
 * The `cache.break` event body of a first turn, or `null` when it read what its prefix allows (within
 * {@link CACHE_MISS_TOLERANCE}) or its prompt is too short to cache. The layer hashes of `check` are
 * read only when the turn missed (they may be computed on demand).
 */
export function detectCacheBreak(
  turn: number,
  model: string,
  usage: ProviderUsage,
  check: CacheBreakCheck,
  { provider, pricing }: CacheBreakContext = {},
): Extract<ForkEventBody, { type: "cache.break" }> | null {
  const promptTokens = promptTokensOf(usage);
  const readTokens = usage.cache_read_input_tokens ?? 0;
  if (promptTokens < (check.minCacheableTokens ?? minCacheableTokens(model))) return null;
  const expected = expectedReads(usage, check, provider);
  if (expected === null) return null;
  const missed = Math.max(0, expected - readTokens);
  if (missed === 0 || missed < expected * CACHE_MISS_TOLERANCE) return null;

  const ours =
    check.parentLayers === undefined ? "none" : firstDifferingLayer(check.parentLayers, check.prefixLayers);
  const theirs = provider === undefined ? undefined : PROVIDER_LAYERS[provider.type];
  // Our hashes see what forkd changed; the provider also sees what the parent's recorded prefix left out.
  const cause: DiagnosisLayer | "expired_or_evicted" | "unknown" =
    ours !== "none"
      ? ours
      : (theirs ?? (check.parentLayers === undefined ? "unknown" : "expired_or_evicted"));
  const why =
    cause === "expired_or_evicted"
      ? "every layer matches the parent's: the entry expired or was evicted"
      : cause === "unknown"
        ? "the parent's layer hashes are unknown; expiry, eviction or a provider-side change are likely"
        : ours === "none"
          ? `the provider says the ${cause} layer differs from the parent's request`
          : `the ${cause} layer differs from the parent's, so the parent's cache entry cannot match`;
  const cost = cacheMissCost(model, usage, missed, pricing);
  const body: Extract<ForkEventBody, { type: "cache.break" }> = {
    type: "cache.break",
    turn,
    // The event's layer is a cache-key layer, where the betas sit with the model.
    layer:
      cause === "betas" ? "model" : cause === "expired_or_evicted" || cause === "unknown" ? "none" : cause,
    prompt_tokens: promptTokens,
    cache_read_tokens: readTokens,
    detail: `read ${readTokens} of ${expected} cacheable prompt tokens from the cache; ${why}${
      provider === undefined ? "" : ` (provider: ${provider.type})`
    }`,
    cause,
    expected_read_tokens: expected,
    missed_tokens: missed,
  };
  if (cost !== undefined) body.miss_cost_usd = cost;
  if (provider !== undefined) body.provider_reason = provider;
  return body;
}
