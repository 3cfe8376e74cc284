// The fork spec: everything a daemon needs to run one child, published on `agent.fork.<run_id>`.
import { z } from "zod";
import { AssistantMessageSchema, BetasSchema, CacheSafeParamsSchema } from "./anthropic.js";
import { HexSecretSchema } from "./control-proof.js";
import { MAX_JSON_DEPTH, MAX_PREFIX_BYTES, MAX_RUN_ID_LENGTH } from "./limits.js";
import { RUN_ID_PATTERN } from "./subjects.js";

/** Protocol version this package writes and the highest it reads. */
export const PROTOCOL_VERSION = 1;

/** A run id: one NATS token and one KV key. */
export const RunIdSchema = z
  .string()
  .min(1)
  .max(MAX_RUN_ID_LENGTH)
  .regex(RUN_ID_PATTERN, "must be a single NATS token of [A-Za-z0-9_=-]");

/** Milliseconds since the Unix epoch. @unit ms */
export const EpochMsSchema = z.number().nonnegative();

/** SHA-256, lowercase hex. */
export const Sha256HexSchema = z.string().regex(/^[0-9a-f]{64}$/, "must be a lowercase hex SHA-256");

/**
 * The provider API a child's requests go to. `anthropic` (Messages) unless a spec says otherwise;
 * `openai-chat` (Chat Completions) and `openai-responses` (Responses) render the same conversation
 * in OpenAI's formats, `gemini` in Gemini's `generateContent` format (docs/llm.md).
 */
export const LlmApiSchema = z.enum(["anthropic", "openai-chat", "openai-responses", "gemini"]);

/** Which provider runs the child, and how its requests find the parent's cache there. */
export const ProviderSpecSchema = z.object({
  api: LlmApiSchema.describe("The provider API the child's requests go to."),
  /**
   * OpenAI: the `prompt_cache_key` every child of this fan-out shard sends (the parent's own key for
   * the first shard). Absent: the parent's key in its native request, else none.
   */
  prompt_cache_key: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe(
      "OpenAI: the `prompt_cache_key` the child sends (one per fan-out shard; the parent's own for the first). Absent: the parent's, else none.",
    ),
  /**
   * OpenAI: the `prompt_cache_retention` every child sends (`in_memory`: dropped after 5–10 minutes
   * unused, within an hour; `24h`: kept up to 24 hours; only `24h` on gpt-5.5 and later). Give the
   * parent's own, so the children's prefix lives as long as the parent's. Absent: a native parent's
   * own (kept in its bytes), else none (the provider's default).
   */
  prompt_cache_retention: z
    .enum(["in_memory", "24h"])
    .optional()
    .describe(
      "OpenAI: the `prompt_cache_retention` the child sends (give the parent's). Absent: a native parent's own, else the provider's default.",
    ),
  /**
   * Gemini: the explicit cache (`cachedContents/…`) that holds the parent's prefix, when the parent
   * made one itself. Absent: the children's daemons find or create one per fan-out.
   */
  cached_content: z
    .string()
    .regex(/^cachedContents\/[A-Za-z0-9_-]{1,128}$/, "must be a cachedContents/<id> resource name")
    .optional()
    .describe(
      "Gemini: the `cachedContents/<id>` resource holding the parent's prefix, which the child names instead of re-sending it. Absent: the daemons create one per fan-out (or find its sibling's).",
    ),
});

/**
 * A value of the parent's request in its exact text, for one whose text a JavaScript reading would
 * not write back as sent (`1.0`, an integer past 2^53, integer-like keys out of order): a parent in
 * another language sends them, and a provider renders tools and tool inputs as sent. The child sends
 * this text in place of writing the value again.
 */
export const VerbatimValueSchema = z.object({
  at: z
    .array(z.union([z.string(), z.number().int().nonnegative()]))
    .min(1)
    .max(MAX_JSON_DEPTH)
    .describe(
      "Where the value is in `params`: keys and array indexes from the top (the innermost object or array holding what JavaScript would write differently).",
    ),
  text: z
    .string()
    .min(1)
    .describe("The value exactly as the parent's request had it; read as JSON, it is the value in `params`."),
});

/**
 * The parent's request as its own client sent it to a non-Anthropic API (an OpenAI Chat Completions
 * or Responses body, or a Gemini generateContent body with the model its URL named) and the reply
 * items it got. The child's request starts with these bytes; the
 * `params` beside it are the same conversation in forkd's canonical (Messages) form, which the core
 * reasons about.
 */
export const NativePrefixSchema = z.object({
  api: z
    .enum(["openai-chat", "openai-responses", "gemini"])
    .describe("The API the native request was sent to."),
  /** Gemini: the model of the request's URL (`models/<model>:generateContent`): its body names none. */
  model: z
    .string()
    .min(1)
    .max(256)
    .optional()
    .describe("Gemini: the model the request's URL named (its body names none)."),
  // An open object with no known keys: zod keeps its members in their order and their values as they
  // are, so the parent's bytes survive the codec without restoring them.
  request: z
    .looseObject({})
    .describe("The parent's request body exactly as sent (every field kept, key order included)."),
  reply: z
    .array(z.looseObject({}))
    .describe(
      "The reply as the API accepts it back: for Chat Completions the assistant message, for Responses the output items, for Gemini the candidate's `model` content.",
    ),
  verbatim: z
    .array(VerbatimValueSchema)
    .optional()
    .describe(
      "OpenAI: the exact text of each value of `request` that a JavaScript reading would write differently (a parent in another language sent it); the child sends these texts in their place. Paths are in `request`.",
    ),
});

/**
 * What the child inherits: the parent's last request (cache-safe params) and the reply it got.
 * `reply` is absent for a programmatic fork taken after a user turn.
 */
export const ForkPrefixSchema = z.object({
  params: CacheSafeParamsSchema.describe(
    "The parent's last request: model, system, tools, messages and sampling parameters, exactly as sent (key order and unknown fields are kept byte for byte).",
  ),
  reply: AssistantMessageSchema.optional().describe(
    "The assistant reply the parent got to that request (the message holding the fork tool calls). Absent for a fork taken after a user turn.",
  ),
  native: NativePrefixSchema.optional().describe(
    "The parent's request and reply as its own client sent them to a non-Anthropic API; the child's request starts with these bytes.",
  ),
  betas: BetasSchema.optional().describe(
    "The `anthropic-beta` list the parent's request was sent with. The child is sent with exactly this list: a beta changes what fields mean and what the cache is keyed on.",
  ),
  verbatim: z
    .array(VerbatimValueSchema)
    .optional()
    .describe(
      "The exact text of each value of `params` that a JavaScript reading would write differently (a parent in another language sent it); the child sends these texts in their place.",
    ),
});

/** How the spec carries its prefix. */
export const PrefixSourceSchema = z.discriminatedUnion("kind", [
  /** The prefix travels inside the spec. */
  z
    .object({
      kind: z.literal("inline"),
      prefix: ForkPrefixSchema.describe("The parent's last request and reply: a fork prefix."),
    })
    .describe("The prefix travels inside the spec."),
  /** The prefix is in the object store under its content hash; N forks move it over the wire once. */
  z
    .object({
      kind: z.literal("ref"),
      hash: Sha256HexSchema.describe("SHA-256 of the stored object's bytes; also its object name."),
      size: z.number().int().positive().max(MAX_PREFIX_BYTES).describe("Size of the stored object in bytes."),
    })
    .describe("The prefix is in the prefixes object store under its content hash."),
  /** A parent on its first turn has nothing to share: the daemon's default system prompt and tools are used. */
  z
    .object({ kind: z.literal("none") })
    .describe("Nothing is inherited: the daemon's default system prompt and tools are used."),
]);

/** Which of the parent's tools the child may use. */
export const ToolFilterSpecSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("all") }).describe("Every tool of the parent."),
  z
    .object({
      kind: z.literal("allow"),
      tools: z.array(z.string().min(1)).describe("Names of the tools the child may call."),
    })
    .describe("Only the named tools may run."),
  /** Read-only tools everywhere; writes only inside `memory_dir`. */
  z
    .object({
      kind: z.literal("memory"),
      memory_dir: z.string().min(1).describe("The only directory the child may write to."),
    })
    .describe("Read-only tools everywhere; writes only inside `memory_dir`."),
]);

/** Who forked: enough to trace lineage and to stop runaway recursion across hosts. */
export const ParentIdentitySchema = z.object({
  agent_id: z.string().min(1).max(256).describe("Stable id of the parent agent (process or session)."),
  session_id: z.string().max(256).optional().describe("The parent's session, for tracing."),
  run_id: RunIdSchema.optional().describe("When the parent is itself a fork: its run id."),
  lineage: z.array(RunIdSchema).max(64).default([]).describe("Ancestor run ids, oldest first."),
  host: z.string().max(256).optional().describe("Host the parent runs on."),
});

export const LimitsSchema = z.object({
  /** Model turns before the run stops; 0 returns at once. @default 200 */
  max_turns: z
    .number()
    .int()
    .nonnegative()
    .default(200)
    .describe("Model turns before the run stops; 0 returns at once."),
  /** Wall-clock limit of the run. @unit ms */
  timeout_ms: z.number().int().positive().optional().describe("Wall-clock limit of the run, in ms."),
  budget: z
    .object({
      /** @unit USD */
      max_cost_usd: z.number().positive().optional().describe("In US dollars."),
      max_output_tokens: z.number().int().positive().optional(),
      max_input_tokens: z.number().int().positive().optional(),
    })
    .optional()
    .describe('The run stops with `stop: "budget"` when any bound is reached.'),
});

/** Per-child changes. Anything here that changes the cache key (model, tools, system) makes the child miss the parent's cache; see docs. */
export const OverridesSchema = z.object({
  model: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Another model than the parent's; the child then misses the parent's cache. Its `max_tokens` is capped at that model's ceiling; a model that does not take the parent's `thinking` type fails the run (`invalid_fork_params`, field `model`).",
    ),
  max_tokens: z.number().int().positive().optional().describe("Another output limit than the parent's."),
  /** A `critical_system_reminder`: injected after the cache boundary, never inside it. */
  system_reminder: z
    .string()
    .max(64 * 1024)
    .optional()
    .describe("A `critical_system_reminder`: injected after the cache boundary, never inside it."),
});

export const IsolationSchema = z.object({
  /** Run in a git worktree of its own; its commit is reported in the result. */
  worktree: z
    .boolean()
    .default(false)
    .describe("Run in a git worktree of its own; its commit is reported in the result."),
  /** Base ref of the worktree. @default "HEAD" */
  base_ref: z.string().min(1).optional().describe('Base ref of the worktree; "HEAD" when absent.'),
  /** Working directory relative to the daemon's workspace. */
  cwd: z.string().optional().describe("Working directory relative to the daemon's workspace."),
});

/** How tool calls that need approval are handled. */
export const PermissionPolicySchema = z.object({
  /** `allow`: run; `deny`: refuse; `ask`: bubble to the parent on `agent.fork.<run_id>.permission`. @default "allow" */
  mode: z
    .enum(["allow", "ask", "deny"])
    .default("allow")
    .describe(
      "`allow`: run; `deny`: refuse; `ask`: bubble to the parent on `agent.fork.<run_id>.permission`.",
    ),
  /** No answer within this is a deny. @unit ms @default 60000 */
  timeout_ms: z
    .number()
    .int()
    .positive()
    .default(60_000)
    .describe("No answer within this many ms is a deny."),
});

export const ToolHostRefSchema = z.object({
  id: RunIdSchema.describe("Serves `agent.toolhost.<id>`."),
  tools: z.array(z.string().min(1)).describe("Tool names it serves."),
  /** The tool host's reply key (secret: only daemons read specs). */
  reply_key: HexSecretSchema.optional().describe(
    "Secret of the tool host: a daemon accepts only replies that carry `toolHostProof(reply_key, call)`. Without it any responder is believed.",
  ),
});

/** W3C trace context of the parent's span. */
export const TraceContextSchema = z.object({
  traceparent: z
    .string()
    .regex(/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/)
    .describe("The W3C `traceparent` header value."),
  tracestate: z.string().max(512).optional().describe("The W3C `tracestate` header value."),
});

/** Which of the parent's fork calls this child answers. */
export const ForkCallSchema = z.object({
  tool_use_id: z.string().min(1).describe("The `id` of the parent's fork `tool_use` block."),
  description: z.string().optional().describe("The fork call's description, for display."),
});

/** The longest a run waits for its cache leader's response to begin. @unit ms */
export const MAX_CACHE_LEADER_WAIT_MS = 600_000;
/** How long a run waits for its cache leader's response when its spec does not say. @unit ms */
export const DEFAULT_CACHE_LEADER_WAIT_MS = 120_000;

/**
 * A warm-first follower's leader: the sibling whose first response writes the cache entry this run
 * reads. The follower is claimed and its request built at once; its first model call waits.
 */
export const CacheLeaderSchema = z.object({
  run_id: RunIdSchema.describe("The leader's run id."),
  wait_ms: z
    .number()
    .int()
    .min(1)
    .max(MAX_CACHE_LEADER_WAIT_MS)
    .default(DEFAULT_CACHE_LEADER_WAIT_MS)
    .describe(
      "How long the first model call waits, from the claim, for the leader's response to begin (or the leader to end) before it goes anyway.",
    ),
});

/** A fork spec, version 1. */
export const ForkSpecSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  run_id: RunIdSchema.describe("Chosen by the parent; idempotent: a resubmitted id is the same run."),
  parent: ParentIdentitySchema.describe("Who forked."),
  label: z.string().max(256).optional().describe("Short human label shown by `forkd ps`."),
  group_id: RunIdSchema.optional().describe(
    "The group the run belongs to: every fan-out is one, and a parent may name others. Stamped on every event and recorded in the registry; a group can be stopped or aborted as one.",
  ),
  /** The query source of the forking agent; the recursion guard refuses a fork from a fork. */
  query_source: z
    .string()
    .max(128)
    .default("agent")
    .describe("The query source of the forking agent; the recursion guard refuses a fork from a fork."),
  /** What this child is asked to do. */
  directive: z
    .string()
    .min(1)
    .max(256 * 1024)
    .describe("What this child is asked to do: the only text that differs between siblings."),
  fork_call: ForkCallSchema.optional().describe("Which of the parent's fork tool calls this child answers."),
  prefix: PrefixSourceSchema.describe(
    "The inherited conversation: inline, by object-store reference, or none.",
  ),
  tool_filter: ToolFilterSpecSchema.default({ kind: "all" }).describe(
    "Which of the parent's tools the child may use.",
  ),
  overrides: OverridesSchema.default({}).describe("Per-child changes; see the cache notes."),
  limits: LimitsSchema.default({ max_turns: 200 }).describe("When the run stops."),
  isolation: IsolationSchema.default({ worktree: false }).describe("Where the child's tools run."),
  permissions: PermissionPolicySchema.default({ mode: "allow", timeout_ms: 60_000 }).describe(
    "How tool calls that need approval are handled.",
  ),
  tool_host: ToolHostRefSchema.optional().describe(
    "A process that serves tools existing only where the parent runs.",
  ),
  /** Secret of the run's owner (only daemons read specs). */
  owner_token: HexSecretSchema.optional().describe(
    "Secret of the run's owner (`ownerToken(owner_key, run_id)`): aborts and permission answers must carry a proof made with it. Without it any parent of the account may abort or answer.",
  ),
  group_token: HexSecretSchema.optional().describe(
    "Secret of the run's group (`groupToken(owner_key, group_id)`): the group's budget cap must carry a proof made with it.",
  ),
  trace: TraceContextSchema.optional().describe("W3C trace context of the parent's span."),
  provider: ProviderSpecSchema.optional().describe(
    "The provider API that runs the child; Anthropic's Messages API when absent.",
  ),
  created_at: EpochMsSchema.describe("When the parent published the spec (ms since epoch)."),
  fresh_run_id: z
    .literal(true)
    .optional()
    .describe(
      "The parent made `run_id` for this spec: nothing was stored under it before. A daemon may then send the run's first model request while its claim is in flight (its events and tools still wait for the claim; a refused claim aborts the request). A parent that resubmits a run id omits it: such a spec is claimed before any model call.",
    ),
  cache_leader: CacheLeaderSchema.optional().describe(
    "Warm-first: the sibling whose first response writes the cache entry this run reads. The run is claimed and its request built at once; its first model call goes once the leader's response has begun, the leader ended, or `wait_ms` passed. A daemon that does not know the field runs the child at once (it pays the shared delta as a cache write).",
  ),
  /** After this the run is not started (or is stopped) and ends `failed` with `deadline_exceeded`. @unit ms since epoch */
  deadline_at: EpochMsSchema.optional().describe(
    "After this (ms since epoch) the run is not started, or is stopped, and ends `failed` with `deadline_exceeded`.",
  ),
});

export type ForkPrefix = z.infer<typeof ForkPrefixSchema>;
export type VerbatimValue = z.infer<typeof VerbatimValueSchema>;
export type LlmApi = z.infer<typeof LlmApiSchema>;
export type ProviderSpec = z.infer<typeof ProviderSpecSchema>;
export type NativePrefix = z.infer<typeof NativePrefixSchema>;
export type PrefixSource = z.infer<typeof PrefixSourceSchema>;
export type ToolFilterSpec = z.infer<typeof ToolFilterSpecSchema>;
export type ParentIdentity = z.infer<typeof ParentIdentitySchema>;
export type Limits = z.infer<typeof LimitsSchema>;
export type Overrides = z.infer<typeof OverridesSchema>;
export type Isolation = z.infer<typeof IsolationSchema>;
export type PermissionPolicy = z.infer<typeof PermissionPolicySchema>;
export type ToolHostRef = z.infer<typeof ToolHostRefSchema>;
export type TraceContext = z.infer<typeof TraceContextSchema>;
export type ForkCall = z.infer<typeof ForkCallSchema>;
export type CacheLeader = z.infer<typeof CacheLeaderSchema>;
/** A validated fork spec (defaults applied). */
export type ForkSpec = z.infer<typeof ForkSpecSchema>;
/** A fork spec as written by a sender (defaults may be omitted). */
export type ForkSpecInput = z.input<typeof ForkSpecSchema>;
