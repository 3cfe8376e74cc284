/**
 * The fields the Messages API knows, per object: anything else is refused with
 * `<path>: Extra inputs are not permitted`, as the API does. The lists are those of the request
 * types of `@anthropic-ai/sdk` (its beta Messages params); `known-fields.test.ts` fails to
 * type-check when the SDK and these lists disagree, so an SDK upgrade updates the simulator.
 */

/** Top-level fields of a Messages request (`betas` travels as the `anthropic-beta` header). */
export const REQUEST_FIELDS = [
  "max_tokens",
  "messages",
  "model",
  "billing_policy",
  "cache_control",
  "compaction",
  "container",
  "context_management",
  "diagnostics",
  "fallback_credit_token",
  "fallbacks",
  "inference_geo",
  "mcp_servers",
  "metadata",
  "output_config",
  "output_format",
  "service_tier",
  "speed",
  "stop_sequences",
  "stream",
  "system",
  "thinking",
  "thread",
  "tool_choice",
  "tools",
  "user_profile_id",
  "workspace_id",
] as const;

/**
 * Sampling parameters: no longer in the SDK's request types, but the API still takes them on the
 * models before Opus 4.7 (validate.ts checks them by model), and Claude Code 2.1 still sends
 * `temperature` to those models.
 */
export const SAMPLING_FIELDS = ["temperature", "top_p", "top_k"] as const;

/** Fields of a `user` or `assistant` message. */
export const MESSAGE_FIELDS = ["content", "role"] as const;

/** Fields of a `system` message (mid-conversation-system beta). */
export const SYSTEM_MESSAGE_FIELDS = ["role", "clear_at", "content", "output_config"] as const;

/** Fields of the content blocks the simulator checks, by `type`; other block types are not checked field by field. */
export const BLOCK_FIELDS = {
  text: ["text", "type", "cache_control", "citations"],
  tool_use: ["id", "input", "name", "type", "cache_control", "caller", "toolset_name"],
  tool_result: ["tool_use_id", "type", "cache_control", "content", "is_error", "toolset_name"],
  tool_reference: ["type", "tool_name", "cache_control"],
  thinking: ["signature", "thinking", "type"],
  redacted_thinking: ["data", "type"],
  image: ["source", "type", "cache_control", "transformations"],
  document: ["source", "type", "cache_control", "citations", "context", "title"],
  tool_addition: ["tool", "type", "cache_control"],
  tool_removal: ["tool", "type", "cache_control"],
} as const;

/** Fields of a custom (client) tool definition. */
export const CUSTOM_TOOL_FIELDS = [
  "input_schema",
  "name",
  "allowed_callers",
  "cache_control",
  "defer_loading",
  "description",
  "eager_input_streaming",
  "input_examples",
  "strict",
  "type",
] as const;

/**
 * The betas that let `messages` hold `role: "system"` messages (names starting with one of these):
 * `mid-conversation-system-*`, and `per-turn-control-*`, which Claude Code 2.1 sends instead.
 */
export const SYSTEM_MESSAGE_BETAS = ["mid-conversation-system", "per-turn-control"] as const;
