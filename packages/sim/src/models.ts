// The simulator's per-model cache facts are @forkd/protocol's: one table for every package.
export type { MinCacheableRule } from "@forkd/protocol";
export { DEFAULT_MIN_CACHEABLE_TOKENS, MIN_CACHEABLE_TOKENS, minCacheableTokens } from "@forkd/protocol";
