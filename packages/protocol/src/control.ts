// Control messages: abort and stop, steering, permission bubbling and tool-host calls.
import { z } from "zod";
import { HexSecretSchema } from "./control-proof.js";
import { EpochMsSchema, PROTOCOL_VERSION, RunIdSchema } from "./spec.js";

/** `abort` cuts a run now; `stop` lets its current model turn or tool finish and starts nothing new. */
export const StopModeSchema = z.enum(["abort", "stop"]);

/** Published on `agent.fork.<run_id>.abort` and mirrored into the run registry. */
export const AbortRequestSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  run_id: RunIdSchema.describe("The run."),
  reason: z.string().max(4096).default("aborted by parent").describe("Shown in the `aborted` event."),
  requested_at: EpochMsSchema.describe("ms since epoch."),
  /** Who asked (agent id, user, `cli`). */
  by: z.string().max(256).optional().describe("Who asked (agent id, user, `cli`)."),
  proof: HexSecretSchema.optional().describe(
    "`abortProof(owner_token, run_id)` (`stopProof` for a stop): required when the run's spec carries an `owner_token`.",
  ),
  mode: StopModeSchema.optional().describe(
    '`abort` (absent): cut now, the run ends `aborted`. `stop`: the current model turn or tool finishes, nothing new starts, the run ends `completed` with `stop: "stopped"`.',
  ),
});

/**
 * A header on an abort or stop sent again after its registry flag, for a daemon that claimed the run
 * meanwhile: the daemon holding the run obeys it; the queue group's member, which ends runs still
 * queued, leaves it (the first one reached it).
 */
export const CONTROL_REPEAT_HEADER = "Forkd-Control-Repeat";

/**
 * Published on `agent.fork.<run_id>.steer` (request/reply): a user message for a running child, added
 * at its next turn boundary (event `steered`). The daemon running the run replies with a {@link SteerReplySchema}.
 */
export const SteerRequestSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  run_id: RunIdSchema.describe("The run."),
  steer_id: RunIdSchema.describe("Chosen by the sender; a second request with the same id is ignored."),
  text: z
    .string()
    .min(1)
    .max(16 * 1024)
    .describe("The user message's text."),
  requested_at: EpochMsSchema.describe("ms since epoch."),
  by: z.string().max(256).optional().describe("Who asked (agent id, user, `cli`)."),
  proof: HexSecretSchema.optional().describe(
    "`steerProof(owner_token, request)`: required when the run's spec carries an `owner_token`.",
  ),
});

/** The reply of the daemon running a steered run. */
export const SteerReplySchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  accepted: z.boolean().describe("True when the message will be added at the run's next turn boundary."),
  code: z.string().max(64).optional().describe("Why not: `steer_refused` (no valid proof), `run_ending`."),
  message: z.string().max(4096).optional().describe("Why not, for people."),
});

/** A daemon asks the parent whether a tool call may run. */
export const PermissionRequestSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  run_id: RunIdSchema.describe("The run."),
  tool_use_id: z.string().min(1).describe("The `id` of the model's `tool_use` block."),
  name: z.string().min(1).describe("Tool name."),
  input: z.unknown().describe("The tool call's input, as the model wrote it."),
  requested_at: EpochMsSchema.describe("ms since epoch."),
});

export const PermissionResponseSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  decision: z.enum(["allow", "deny"]).describe("Whether the tool call may run."),
  reason: z.string().max(4096).optional().describe("Told to the model in the `tool_result` when denied."),
  proof: HexSecretSchema.optional().describe(
    "`permissionProof(owner_token, request)`: required when the run's spec carries an `owner_token`.",
  ),
});

/** A daemon asks a tool host to run a tool that exists only where the parent runs. */
export const ToolHostRequestSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  run_id: RunIdSchema.describe("The run."),
  tool_use_id: z.string().min(1).describe("The `id` of the model's `tool_use` block."),
  name: z.string().min(1).describe("Tool name."),
  input: z.unknown().describe("The tool call's input, as the model wrote it."),
  proof: HexSecretSchema.optional().describe(
    "`toolHostCallProof(reply_key, request)`, when the spec's `tool_host` carries a `reply_key`: a host runs no call without its own key's proof.",
  ),
});

export const ToolHostResponseSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  content: z.string().describe("The `tool_result` content given to the model."),
  is_error: z.boolean().default(false).describe("True when the content is an error the model sees."),
  proof: HexSecretSchema.optional().describe(
    "`toolHostProof(reply_key, request)`: required when the spec's `tool_host` carries a `reply_key`.",
  ),
});

export type AbortRequest = z.infer<typeof AbortRequestSchema>;
export type AbortRequestInput = z.input<typeof AbortRequestSchema>;
export type StopMode = z.infer<typeof StopModeSchema>;
export type SteerRequest = z.infer<typeof SteerRequestSchema>;
export type SteerReply = z.infer<typeof SteerReplySchema>;
export type PermissionRequest = z.infer<typeof PermissionRequestSchema>;
export type PermissionResponse = z.infer<typeof PermissionResponseSchema>;
export type ToolHostRequest = z.infer<typeof ToolHostRequestSchema>;
export type ToolHostResponse = z.infer<typeof ToolHostResponseSchema>;
