// Every event of a run, published on `agent.fork.<run_id>.events`. The log of one run is enough to
// rebuild its conversation: that is how another daemon resumes a run whose daemon died.
import { z } from "zod";
import { AssistantMessageSchema, ProviderUsageSchema } from "./anthropic.js";
import { EpochMsSchema, PROTOCOL_VERSION, RunIdSchema } from "./spec.js";
import { UsageTotalsSchema } from "./usage.js";

const base = {
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  run_id: RunIdSchema.describe("The run."),
  /** Contiguous from 1 per run, across attempts. */
  seq: z
    .number()
    .int()
    .positive()
    .describe("Contiguous from 1 per run, across attempts; `Nats-Msg-Id` is `<run_id>-<seq>`."),
  /** Delivery attempt that published it; fences stale daemons. */
  attempt: z.number().int().positive().describe("Attempt that published it; fences stale daemons."),
  ts: EpochMsSchema.describe("When it was published (ms since epoch)."),
  group_id: RunIdSchema.optional().describe(
    "The group the run belongs to (the spec's `group_id`), stamped on every event of a grouped run.",
  ),
};

// Fields several events share.
const turn = z.number().int().positive().describe("Turn number, from 1.");
const toolUseId = z.string().describe("The `id` of the model's `tool_use` block.");
const toolName = z.string().describe("Tool name.");

/** Every event type this version knows, roughly in the order a run emits them. */
export const FORK_EVENT_TYPES = [
  "accepted",
  "started",
  "llm.request",
  "llm.delta",
  "llm.message",
  "tool.call",
  "permission.requested",
  "permission.resolved",
  "tool.result",
  "tool.denied",
  "cache.break",
  "steered",
  "paused",
  "resumed",
  "heartbeat",
  "completed",
  "failed",
  "aborted",
] as const satisfies readonly ForkEventType[];

/**
 * The fields every event has, with `type` as any string: what an observer can rely on for an event
 * type it does not know (a newer daemon's additive event). See `decodeEventLenient`.
 */
export const ForkEventEnvelopeSchema = z.object({
  ...base,
  type: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/, "must be dot-separated lowercase words")
    .describe("The event type: one of `FORK_EVENT_TYPES`, or a newer one."),
});

/** An error that crossed the wire. */
export const WireErrorSchema = z.object({
  code: z.string().min(1).describe("A `ProtocolErrorCode`, or a daemon or LLM error code."),
  message: z.string(),
  retryable: z.boolean().describe("True when resubmitting the work (under a new run id) may succeed."),
  path: z
    .array(z.union([z.string(), z.number()]))
    .optional()
    .describe("The offending field, for protocol errors."),
});

/** The `Scope: / Result: / Key files: / Files changed: / Issues:` report parsed out of the final text. */
export const ForkReportSchema = z.object({
  scope: z.string().optional(),
  result: z.string().optional(),
  key_files: z.array(z.string()).optional(),
  files_changed: z.array(z.string()).optional(),
  issues: z.string().optional(),
});

/** What a completed run returns. */
export const ForkResultSchema = z.object({
  final_text: z.string().describe("The child's last text: what the parent gets back."),
  report: ForkReportSchema.optional().describe(
    "The report parsed out of `final_text`, when it follows the format.",
  ),
  usage: UsageTotalsSchema.describe("Totals of the run, all attempts."),
  turns: z.number().int().nonnegative().describe("Model turns taken."),
  tool_uses: z.number().int().nonnegative().describe("Tool calls made."),
  duration_ms: z.number().nonnegative().describe("From the first `accepted` to `completed`, in ms."),
  /** False when the spec had no cache-safe params and the parent's cache could not be shared. */
  cache_shared: z
    .boolean()
    .describe("False when the spec had no cache-safe params and the parent's cache could not be shared."),
  /** Why the loop ended. */
  stop: z
    .enum(["end_turn", "max_turns", "max_tokens", "budget", "stop_sequence", "refusal", "stopped"])
    .describe("Why the loop ended; `stopped`: a graceful stop (see `stop_reason`)."),
  stop_reason: z
    .string()
    .max(4096)
    .optional()
    .describe("The stop request's reason, when `stop` is `stopped`."),
  /** The commit of the child's changes when it ran in a worktree. */
  commit: z
    .object({ sha: z.string(), branch: z.string(), files_changed: z.array(z.string()) })
    .optional()
    .describe("The commit of the child's changes when it ran in a worktree."),
});

export const AcceptedEventSchema = z.object({
  ...base,
  type: z.literal("accepted"),
  daemon_id: z.string().min(1).describe("The daemon that claimed the run."),
  host: z.string().optional().describe("Host the daemon runs on."),
  /** Time from the spec's `created_at` to this pickup. @unit ms */
  queue_wait_ms: z.number().describe("Time from the spec's `created_at` to this pickup, in ms."),
  /** JetStream delivery count of the spec. */
  delivery: z.number().int().positive().describe("JetStream delivery count of the spec."),
  /** True when an earlier attempt's events were replayed to resume the run. */
  resumed: z.boolean().describe("True when an earlier attempt's events were replayed to resume the run."),
});

export const StartedEventSchema = z.object({
  ...base,
  type: z.literal("started"),
  model: z.string().describe("The model the child uses."),
  /** Cache key hash of the inherited prefix (see core's cache-safe params); null when nothing is shared. */
  prefix_hash: z
    .string()
    .nullable()
    .describe(
      "Cache key hash of the inherited prefix (core's cache-safe params); null when nothing is shared.",
    ),
  cache_shared: z
    .boolean()
    .describe(
      "True when the child's requests start with the parent's cached prefix (no override changes it).",
    ),
});

export const LlmRequestEventSchema = z.object({
  ...base,
  type: z.literal("llm.request"),
  turn,
  model: z.string().describe("Model of this request."),
  message_count: z.number().int().nonnegative().describe("Messages in the request."),
});

/** Streamed text, batched: several provider deltas per event. */
export const LlmDeltaEventSchema = z.object({
  ...base,
  type: z.literal("llm.delta"),
  turn,
  text: z.string().describe("Text streamed since the previous delta."),
});

export const LlmMessageEventSchema = z.object({
  ...base,
  type: z.literal("llm.message"),
  turn,
  message: AssistantMessageSchema.describe("The assistant message, as appended to the conversation."),
  stop_reason: z.string().nullable().describe("The provider's stop reason."),
  usage: ProviderUsageSchema.describe("The provider's usage of this response, as reported."),
  /** Time from request to first streamed byte. @unit ms */
  ttft_ms: z.number().nonnegative().optional().describe("Time from request to first streamed byte, in ms."),
  duration_ms: z
    .number()
    .nonnegative()
    .optional()
    .describe("Time from request to the end of the response, in ms."),
});

export const ToolCallEventSchema = z.object({
  ...base,
  type: z.literal("tool.call"),
  turn,
  tool_use_id: toolUseId,
  name: toolName,
  input: z.unknown().describe("The tool's input, as the model wrote it."),
});

export const ToolResultEventSchema = z.object({
  ...base,
  type: z.literal("tool.result"),
  turn,
  tool_use_id: toolUseId,
  name: toolName,
  /** The exact `tool_result` block content appended to the conversation. */
  content: z.string().describe("The exact `tool_result` block content appended to the conversation."),
  is_error: z.boolean().describe("True when the content is an error the model sees."),
  duration_ms: z.number().nonnegative().describe("How long the tool ran, in ms."),
  /** Set when the result was synthesised on resume because the call was interrupted by a crash. */
  interrupted: z
    .boolean()
    .optional()
    .describe("Set when the result was synthesised on resume because the call was interrupted by a crash."),
});

export const ToolDeniedEventSchema = z.object({
  ...base,
  type: z.literal("tool.denied"),
  turn,
  tool_use_id: toolUseId,
  name: toolName,
  code: z
    .string()
    .describe("Why, e.g. `tool_filter`, `permission_denied`, `permission_timeout`, `recursion_guard`."),
  reason: z.string().describe("Told to the model in an error `tool_result`."),
});

/** A tool call waits for the parent's approval. */
export const PermissionRequestedEventSchema = z.object({
  ...base,
  type: z.literal("permission.requested"),
  turn,
  tool_use_id: toolUseId,
  name: toolName,
  timeout_ms: z.number().int().positive().describe("How long the parent has to answer, in ms."),
});

export const PermissionResolvedEventSchema = z.object({
  ...base,
  type: z.literal("permission.resolved"),
  turn,
  tool_use_id: toolUseId,
  decision: z.enum(["allow", "deny", "timeout"]).describe("`timeout`: no answer in time, which is a deny."),
  reason: z.string().optional().describe("The parent's reason, if any."),
});

/**
 * The provider's `diagnostics.cache_miss_reason` (Anthropic Messages API, "cache diagnostics"): where a
 * request left the prefix of the request named by `diagnostics.previous_message_id`. Open: a `type`
 * forkd does not know yet is kept as sent.
 */
export const ProviderCacheMissReasonSchema = z.looseObject({
  type: z
    .string()
    .min(1)
    .max(64)
    .describe(
      "`model_changed`, `system_changed`, `tools_changed`, `messages_changed`, `previous_message_not_found` or `unavailable`, as the provider sent it.",
    ),
  cache_missed_input_tokens: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe(
      "The provider's estimate of the input tokens a matching prefix would have read (the `*_changed` types).",
    ),
});

/** The first turn read less from the cache than the inherited prefix should have given. */
export const CacheBreakEventSchema = z.object({
  ...base,
  type: z.literal("cache.break"),
  turn,
  /** The layer whose hash changed versus the parent's, or `none` (expiry or provider side). */
  layer: z
    .enum(["model", "tools", "system", "messages", "none"])
    .describe("The layer whose hash changed versus the parent's, or `none` (expiry or provider side)."),
  prompt_tokens: z.number().int().nonnegative().describe("Input tokens of the turn, cached or not."),
  cache_read_tokens: z.number().int().nonnegative().describe("Of which read from the cache."),
  detail: z.string().describe("A human explanation."),
  cause: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe(
      "Why, in one word: `model`, `betas` (both in the `model` layer), `tools`, `system`, `messages`, `expired_or_evicted` (every layer matches the parent's) or `unknown` (the parent's layers are unknown). Readers accept values they do not know.",
    ),
  expected_read_tokens: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe(
      "Input tokens the turn could have read from the cache: the parent's cached prefix, when known.",
    ),
  missed_tokens: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe(
      "`expected_read_tokens` minus `cache_read_tokens`: paid at the write or input price instead of the read price.",
    ),
  miss_cost_usd: z
    .number()
    .nonnegative()
    .optional()
    .describe(
      "What the missed tokens cost above their cache-read price, in US dollars; absent for a model without a price.",
    ),
  provider_reason: ProviderCacheMissReasonSchema.optional().describe(
    "The provider's own `diagnostics.cache_miss_reason` for this turn, as returned, when it gave one.",
  ),
});

/** A steering message was added to the conversation: kept in the log so a resumed run has it. */
export const SteeredEventSchema = z.object({
  ...base,
  type: z.literal("steered"),
  turn: z.number().int().positive().describe("The turn whose request first carries the message."),
  steer_id: RunIdSchema.describe("The steer request's id."),
  text: z.string().describe("The user message's text, as added."),
  by: z.string().max(256).optional().describe("Who sent it."),
});

/** The run waits at a turn boundary: its group's shared budget is spent. Nothing is lost; it holds no slot. */
export const PausedEventSchema = z.object({
  ...base,
  type: z.literal("paused"),
  turn: z.number().int().positive().describe("The turn that waits to be sent."),
  reason: z.string().describe("Why, for people."),
  spent_usd: z.number().optional().describe("The group's spend when it paused, in US dollars."),
  cap_usd: z.number().optional().describe("The group's cap then, in US dollars."),
  spent_tokens: z.number().int().optional().describe("The group's tokens when it paused."),
  cap_tokens: z.number().int().optional().describe("The group's token cap then."),
});

/** The run goes on after a pause (its group's cap was raised, or spend reservations were released). */
export const ResumedEventSchema = z.object({
  ...base,
  type: z.literal("resumed"),
  turn: z.number().int().positive().describe("The turn now sent."),
  paused_ms: z.number().nonnegative().describe("How long it waited, in ms."),
});

export const HeartbeatEventSchema = z.object({
  ...base,
  type: z.literal("heartbeat"),
  daemon_id: z.string().min(1).describe("The daemon running the run."),
  turn: z.number().int().nonnegative().describe("Current turn (0 before the first)."),
});

export const CompletedEventSchema = z.object({
  ...base,
  type: z.literal("completed"),
  result: ForkResultSchema.describe("What the run returns to its parent."),
});

export const FailedEventSchema = z.object({
  ...base,
  type: z.literal("failed"),
  error: WireErrorSchema.describe("What went wrong."),
  usage: UsageTotalsSchema.describe("Totals until the failure."),
});

export const AbortedEventSchema = z.object({
  ...base,
  type: z.literal("aborted"),
  reason: z.string().describe("The abort request's reason."),
  usage: UsageTotalsSchema.describe("Totals until the abort."),
});

/** Any event of a run. Its members are listed in {@link FORK_EVENT_TYPES}. */
export const ForkEventSchema = z.discriminatedUnion("type", [
  AcceptedEventSchema,
  StartedEventSchema,
  LlmRequestEventSchema,
  LlmDeltaEventSchema,
  LlmMessageEventSchema,
  ToolCallEventSchema,
  ToolResultEventSchema,
  ToolDeniedEventSchema,
  PermissionRequestedEventSchema,
  PermissionResolvedEventSchema,
  CacheBreakEventSchema,
  SteeredEventSchema,
  PausedEventSchema,
  ResumedEventSchema,
  HeartbeatEventSchema,
  CompletedEventSchema,
  FailedEventSchema,
  AbortedEventSchema,
]);

/** Event types after which a run publishes nothing more. */
export const TERMINAL_EVENT_TYPES = ["completed", "failed", "aborted"] as const;

export type WireError = z.infer<typeof WireErrorSchema>;
export type ForkReport = z.infer<typeof ForkReportSchema>;
export type ForkResult = z.infer<typeof ForkResultSchema>;
export type ForkEvent = z.infer<typeof ForkEventSchema>;
export type ForkEventType = ForkEvent["type"];
/** The provider's own word on a cache miss (`diagnostics.cache_miss_reason`). */
export type ProviderCacheMissReason = z.infer<typeof ProviderCacheMissReasonSchema>;
/** The event of one type. */
export type ForkEventOf<T extends ForkEventType> = Extract<ForkEvent, { type: T }>;
export type TerminalForkEvent = ForkEventOf<(typeof TERMINAL_EVENT_TYPES)[number]>;
/** An event before the envelope (`v`, `run_id`, `seq`, `attempt`, `ts`) is stamped on it. */
export type ForkEventBody = ForkEvent extends infer E
  ? E extends ForkEvent
    ? Omit<E, "v" | "run_id" | "seq" | "attempt" | "ts">
    : never
  : never;

/** The envelope of any event, known type or not. */
export type ForkEventEnvelope = z.infer<typeof ForkEventEnvelopeSchema>;

/** True when `type` is one of {@link FORK_EVENT_TYPES}. */
export function isForkEventType(type: unknown): type is ForkEventType {
  return typeof type === "string" && (FORK_EVENT_TYPES as readonly string[]).includes(type);
}

/** True for `completed`, `failed` and `aborted`. */
export function isTerminalEvent(event: ForkEvent): event is TerminalForkEvent {
  return isTerminalEventType(event.type);
}

/** True for the type of an event that ends a run (`completed`, `failed`, `aborted`). */
export function isTerminalEventType(type: string): type is TerminalForkEvent["type"] {
  return (TERMINAL_EVENT_TYPES as readonly string[]).includes(type);
}
