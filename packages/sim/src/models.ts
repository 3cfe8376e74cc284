// The simulator's per-model facts (minimum cacheable length, context window) are @forkd/protocol's:
// one table for every package.
export type { ModelFacts } from "@forkd/protocol";
export {
  contextWindowTokens,
  DEFAULT_CONTEXT_WINDOW_TOKENS,
  DEFAULT_MIN_CACHEABLE_TOKENS,
  MODEL_FACTS,
  minCacheableTokens,
  modelFacts,
} from "@forkd/protocol";
