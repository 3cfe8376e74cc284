// The Anthropic Messages API shapes that cross forkd's wire. Deliberately loose: the provider adds
// block types and fields over time, and a fork must carry them through untouched, so only what forkd
// relies on is checked and everything else passes through.
import { z } from "zod";

/** `cache_control` on a block: `{ type: "ephemeral", ttl?: "5m" | "1h" }`. */
export const CacheControlSchema = z.looseObject({
  type: z.literal("ephemeral"),
  ttl: z.enum(["5m", "1h"]).optional(),
});

/** Any content block; `type` is required, known kinds are refined below. */
export const ContentBlockSchema = z.looseObject({ type: z.string().min(1) });

/** A text block. */
export const TextBlockSchema = z.looseObject({ type: z.literal("text"), text: z.string() });

/** A tool call made by the model. `input` is any JSON object; incomplete calls are kept as they are. */
export const ToolUseBlockSchema = z.looseObject({
  type: z.literal("tool_use"),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.unknown(),
});

/** The answer to a tool call. */
export const ToolResultBlockSchema = z.looseObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1),
  content: z.union([z.string(), z.array(ContentBlockSchema)]).optional(),
  is_error: z.boolean().optional(),
});

/**
 * One message of a conversation. `system` messages (the `mid-conversation-system` beta, which
 * Claude Code and the Agent SDK send) may sit anywhere; turn-order rules skip them.
 */
export const MessageParamSchema = z.looseObject({
  role: z.enum(["user", "assistant", "system"]),
  content: z.union([z.string(), z.array(ContentBlockSchema)]),
});

/** The assistant reply the parent received (the `A` of the fork picture). */
export const AssistantMessageSchema = z.looseObject({
  role: z.literal("assistant"),
  content: z.array(ContentBlockSchema),
});

/** A tool definition as sent to the provider (client tools and server tools alike). */
export const ToolDefinitionSchema = z.looseObject({ name: z.string().min(1) });

/** `system`: a string or text blocks. */
export const SystemPromptSchema = z.union([z.string(), z.array(ContentBlockSchema)]);

/** Token usage as the provider reports it for one response. */
export const ProviderUsageSchema = z.looseObject({
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  cache_creation_input_tokens: z.number().int().nonnegative().nullish(),
  cache_read_input_tokens: z.number().int().nonnegative().nullish(),
  /**
   * Gemini: storage of an explicit cache that this response's client bought by renewing it (tokens
   * held × seconds added to its life), beyond the TTL its creation paid for. forkd's own field: the
   * provider bills storage by the hour, not per response; each renewal is reported by exactly one
   * response. @unit token-seconds
   */
  cache_storage_token_seconds: z.number().nonnegative().nullish(),
  cache_creation: z
    .looseObject({
      ephemeral_5m_input_tokens: z.number().int().nonnegative(),
      ephemeral_1h_input_tokens: z.number().int().nonnegative(),
    })
    .nullish(),
});

/**
 * The parent's request parameters that form the provider's cache key, plus the sampling parameters
 * the child inherits. Everything the parent sent is kept, unknown fields included.
 */
export const CacheSafeParamsSchema = z.looseObject({
  model: z.string().min(1).describe("The parent's model."),
  max_tokens: z.number().int().positive().optional(),
  system: SystemPromptSchema.optional().describe("System prompt: a string or text blocks."),
  tools: z
    .array(ToolDefinitionSchema)
    .optional()
    .describe(
      "The parent's whole tool array, the fork tool included (removing a tool would break the cache).",
    ),
  tool_choice: z.looseObject({ type: z.string() }).optional(),
  thinking: z.looseObject({ type: z.string() }).optional(),
  messages: z
    .array(MessageParamSchema)
    .describe("The conversation, oldest first; blocks of every type are kept, known or not."),
  temperature: z.number().optional(),
  top_p: z.number().optional(),
  top_k: z.number().int().optional(),
  stop_sequences: z.array(z.string()).optional(),
  metadata: z.looseObject({}).optional(),
});

export type CacheControl = z.infer<typeof CacheControlSchema>;
export type ContentBlock = z.infer<typeof ContentBlockSchema>;
export type TextBlock = z.infer<typeof TextBlockSchema>;
export type ToolUseBlock = z.infer<typeof ToolUseBlockSchema>;
export type ToolResultBlock = z.infer<typeof ToolResultBlockSchema>;
export type MessageParam = z.infer<typeof MessageParamSchema>;
export type AssistantMessage = z.infer<typeof AssistantMessageSchema>;
export type ToolDefinition = z.infer<typeof ToolDefinitionSchema>;
export type SystemPrompt = z.infer<typeof SystemPromptSchema>;
export type ProviderUsage = z.infer<typeof ProviderUsageSchema>;
export type CacheSafeParams = z.infer<typeof CacheSafeParamsSchema>;

/**
 * The parent's `anthropic-beta` list. Cache-safe: a beta changes what fields mean and what the
 * provider's cache is keyed on, so a child sends exactly its parent's list.
 */
export const BetasSchema = z
  .array(
    z
      .string()
      .min(1)
      .max(128)
      .regex(/^[A-Za-z0-9._-]+$/, "a beta name is letters, digits, '.', '_' or '-'"),
  )
  .max(64);
