/**
 * Per-model facts the prompt cache depends on, in one place for every package: the minimum
 * cacheable prompt length. A prefix shorter than the model's minimum is not cached and no error is
 * raised (Anthropic's documented behaviour). The cache-break detector of `@forkd/core` and the
 * simulator's cache both read this table, so they cannot disagree. (Prices live in
 * `@forkd/core`'s pricing table.)
 */

/** One row of {@link MIN_CACHEABLE_TOKENS}. */
export interface MinCacheableRule {
  /** Matched against the model name. */
  pattern: RegExp;
  /** @unit tokens */
  tokens: number;
  /** The models the row stands for. */
  models: string;
}

/**
 * Minimum cacheable prompt length by model, first match wins (from Anthropic's prompt-caching
 * documentation and model launch notes). Models matching no row get
 * {@link DEFAULT_MIN_CACHEABLE_TOKENS}.
 *
 * | models | minimum tokens |
 * | --- | --- |
 * | Claude Opus 5, Fable 5, Mythos 5 (and their point releases) | 512 |
 * | Claude Opus 4.5, Opus 4.6 | 4096 |
 * | Claude Haiku 4.5 | 4096 |
 * | Claude Opus 4.7 | 2048 |
 * | Claude Haiku 3.5, Haiku 3 | 2048 |
 * | every other model (Opus 4.8, Sonnet 5, Sonnet 4.6, 4.5, 4, 3.7, Opus 4.1, 4, 3, unknown names) | 1024 |
 */
export const MIN_CACHEABLE_TOKENS: readonly MinCacheableRule[] = [
  { pattern: /(opus|fable|mythos)-5(?![0-9])/, tokens: 512, models: "Claude Opus 5, Fable 5, Mythos 5" },
  { pattern: /opus-4[-.][56](?![0-9])/, tokens: 4096, models: "Claude Opus 4.5, Opus 4.6" },
  { pattern: /haiku-4[-.]5(?![0-9])/, tokens: 4096, models: "Claude Haiku 4.5" },
  { pattern: /opus-4[-.]7(?![0-9])/, tokens: 2048, models: "Claude Opus 4.7" },
  { pattern: /3[-.]5-haiku|3-haiku|haiku-3/, tokens: 2048, models: "Claude Haiku 3.5, Haiku 3" },
];

/** Minimum for models no row of {@link MIN_CACHEABLE_TOKENS} matches. @unit tokens */
export const DEFAULT_MIN_CACHEABLE_TOKENS = 1024;

/**
 * The minimum cacheable prompt length of a model.
 * @param overrides exact model name or name prefix → tokens, checked first (longest prefix wins)
 */
export function minCacheableTokens(model: string, overrides?: Readonly<Record<string, number>>): number {
  if (overrides !== undefined) {
    let best: [string, number] | undefined;
    for (const [prefix, tokens] of Object.entries(overrides)) {
      if (model.startsWith(prefix) && (best === undefined || prefix.length > best[0].length))
        best = [prefix, tokens];
    }
    if (best !== undefined) return best[1];
  }
  for (const rule of MIN_CACHEABLE_TOKENS) if (rule.pattern.test(model)) return rule.tokens;
  return DEFAULT_MIN_CACHEABLE_TOKENS;
}
