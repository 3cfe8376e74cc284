// Token usage summed over a run's turns, and its price. Shared by events, results and the registry.
import { z } from "zod";

/** Tokens a run consumed, by kind, and what they cost. */
export const UsageTotalsSchema = z.object({
  /** Uncached input tokens (the provider's `input_tokens`). */
  input_tokens: z
    .number()
    .int()
    .nonnegative()
    .describe("Uncached input tokens (the provider's `input_tokens`)."),
  /** Tokens written to the cache with the 5-minute TTL. */
  cache_write_5m_tokens: z
    .number()
    .int()
    .nonnegative()
    .describe("Tokens written to the cache with the 5-minute TTL."),
  /** Tokens written to the cache with the 1-hour TTL. */
  cache_write_1h_tokens: z
    .number()
    .int()
    .nonnegative()
    .describe("Tokens written to the cache with the 1-hour TTL."),
  /** Tokens read from the cache. */
  cache_read_tokens: z.number().int().nonnegative().describe("Tokens read from the cache."),
  output_tokens: z.number().int().nonnegative().describe("Output tokens."),
  /**
   * Storage of explicit caches bought by renewals (Gemini), beyond what their creation paid for;
   * absent when there was none. @unit token-seconds
   */
  cache_storage_token_seconds: z
    .number()
    .nonnegative()
    .optional()
    .describe(
      "Storage of explicit caches bought by renewals (Gemini), beyond what their creation paid for, in token-seconds; absent when none.",
    ),
  /** Number of LLM responses summed. */
  llm_calls: z.number().int().nonnegative().describe("Number of LLM responses summed."),
  /** Price in US dollars; `null` when a model had no entry in the pricing table (see `unpriced_models`). */
  cost_usd: z
    .number()
    .nonnegative()
    .nullable()
    .describe("Price in US dollars; null when a model had no entry in the pricing table."),
  /** Models that were used but could not be priced. Reported, never priced at zero. */
  unpriced_models: z
    .array(z.string())
    .optional()
    .describe("Models that were used but could not be priced. Reported, never priced at zero."),
});

export type UsageTotals = z.infer<typeof UsageTotalsSchema>;

/** Usage of nothing: the start of every sum. */
export function emptyUsageTotals(): UsageTotals {
  return {
    input_tokens: 0,
    cache_write_5m_tokens: 0,
    cache_write_1h_tokens: 0,
    cache_read_tokens: 0,
    output_tokens: 0,
    llm_calls: 0,
    cost_usd: 0,
  };
}
