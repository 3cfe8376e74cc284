// @forkd/llm: the LlmClient on Anthropic's Messages API (streaming, retries, aborts), and the
// accounting of token usage and its cost.

// The pricing table lives in core (one table for the whole system); re-exported for callers that
// account usage with this package.
export type { ModelPricing, PricingTable, TokenCounts } from "@forkd/core";
export {
  CACHE_READ_MULTIPLIER,
  CACHE_WRITE_1H_MULTIPLIER,
  CACHE_WRITE_5M_MULTIPLIER,
  costOfTokens,
  createPricingTable,
  DEFAULT_MODEL_PRICING,
  defaultPricingTable,
  tokenCountsOf,
} from "@forkd/core";
export type { AnthropicClientOptions } from "./anthropic-client.js";
export { AnthropicLlmClient, anthropicClient, DEFAULT_TIMEOUT_MS } from "./anthropic-client.js";
export type { FailureContext } from "./errors.js";
export { errorCodeForStatus, errorCodeForType, isRetryableCode, toLlmError } from "./errors.js";
export type {
  ExclusiveOptions,
  GeminiCacheCoordinator,
  GeminiCacheRecord,
} from "./gemini-cache-coordinator.js";
export type { GeminiClientOptions, GeminiRequestOptions, GeminiUsage } from "./gemini-client.js";
export { GeminiLlmClient, usageFromGemini } from "./gemini-client.js";
export type { OpenAiApi, OpenAiClientOptions, OpenAiRequestOptions } from "./openai-client.js";
export { OpenAiLlmClient, usageFromOpenAi } from "./openai-client.js";
export type { HeaderLookup, RetryOptions, RetryPolicy } from "./retry.js";
export {
  backoffDelay,
  compileRetryPolicy,
  DEFAULT_BASE_DELAY_MS,
  DEFAULT_MAX_DELAY_MS,
  DEFAULT_MAX_RETRIES,
  parseRetryAfter,
  retryDelay,
} from "./retry.js";
export { LocalThrottle, MAX_THROTTLE_MS, type ProviderThrottle } from "./throttle.js";
export { addUsage, costOfUsage, mergeUsage, usageTotalsOf } from "./usage.js";
