// OpenAI routes a request by a hash of its prompt's first tokens plus its `prompt_cache_key`: only
// requests that share both land on the machine that holds their prefix. Children of one parent share
// one key; a fan-out larger than what one machine takes per minute is split into shards of keys.

/**
 * Requests a minute one prefix and key are served from one machine before traffic spills to others
 * (OpenAI's prompt-caching guide: "approximately 15 requests per minute").
 */
export const PROMPT_CACHE_KEY_RATE_PER_MINUTE = 15;

/** Longest `prompt_cache_key` forkd writes (the spec allows 64). */
const KEY_HASH_CHARS = 32;

/**
 * The `prompt_cache_key` of the children of a prefix: `forkd-` and the first 32 hex digits of its
 * cache key hash, `-s<n>` for shard n > 0. Stable across hosts, so every daemon derives the same one.
 */
export function derivedPromptCacheKey(prefixHash: string, shard = 0): string {
  const base = `forkd-${prefixHash.slice(0, KEY_HASH_CHARS)}`;
  return shard === 0 ? base : `${base}-s${shard}`;
}

/**
 * The shard of the child at `index` (0-based) of a fan-out: {@link PROMPT_CACHE_KEY_RATE_PER_MINUTE}
 * children a shard, so no key carries more than one machine serves warm in a minute.
 */
export function promptCacheShard(index: number, perShard: number = PROMPT_CACHE_KEY_RATE_PER_MINUTE): number {
  return Math.floor(index / perShard);
}
