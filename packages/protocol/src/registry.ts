// What the JetStream KV buckets hold: one entry per run, one per live daemon.
import { z } from "zod";
import { StopModeSchema } from "./control.js";
import { HexSecretSchema } from "./control-proof.js";
import { TERMINAL_EVENT_TYPES, WireErrorSchema } from "./events.js";
import { EpochMsSchema, PROTOCOL_VERSION, RunIdSchema } from "./spec.js";
import { UsageTotalsSchema } from "./usage.js";

export const RunStatusSchema = z.enum(["queued", "running", "paused", "completed", "failed", "aborted"]);
/** The statuses a run never leaves: the types of its terminal events. */
export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = TERMINAL_EVENT_TYPES;

/** True for a status a run never leaves (`completed`, `failed`, `aborted`). */
export function isTerminalRunStatus(status: RunStatus): boolean {
  return TERMINAL_RUN_STATUSES.includes(status);
}

/** Key `<run_id>` in the runs bucket. */
export const RunStateSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  run_id: RunIdSchema.describe("The run; also the key."),
  status: RunStatusSchema.describe("Where the run is; the last three are final."),
  /** Highest attempt that claimed the run; the next claim takes the one after it (fencing is the log's). */
  attempt: z
    .number()
    .int()
    .nonnegative()
    .describe(
      "Highest attempt that claimed the run (0 while queued); the next claim takes the one after it. Fencing is the event log's.",
    ),
  daemon_id: z.string().min(1).optional().describe("The daemon running (or that last ran) the run."),
  /** The run's owner: the specs-stream sequence of the first spec stored for this run id. */
  spec_seq: z
    .number()
    .int()
    .positive()
    .optional()
    .describe(
      "Stream sequence of the spec that owns the run (the first stored for its id); on a specs stream without the one-spec guard a daemon refuses any other spec for it.",
    ),
  /** Last event seq published. */
  last_seq: z.number().int().nonnegative().describe("Last event seq published (0 before the first)."),
  label: z.string().optional().describe("The spec's label."),
  parent_agent_id: z.string().optional().describe("The spec's `parent.agent_id`."),
  group_id: RunIdSchema.optional().describe("The spec's `group_id`."),
  model: z.string().optional().describe("The model the run uses."),
  turn: z.number().int().nonnegative().optional().describe("Current turn."),
  created_at: EpochMsSchema.describe("The spec's `created_at`."),
  updated_at: EpochMsSchema.describe("Last write of this entry."),
  started_at: EpochMsSchema.optional().describe("First claim."),
  ended_at: EpochMsSchema.optional().describe("When the terminal event was stored."),
  heartbeat_at: EpochMsSchema.optional().describe("Last heartbeat of the daemon running it."),
  /** Set by an abort; a spec picked up or redelivered afterwards is not run. */
  abort: z
    .object({
      reason: z.string(),
      requested_at: EpochMsSchema,
      by: z.string().optional(),
      proof: HexSecretSchema.optional(),
      mode: StopModeSchema.optional().describe("`stop`: a graceful stop (absent: an abort)."),
    })
    .optional()
    .describe("Set by an abort or a stop; a spec picked up or redelivered afterwards is not run."),
  /** Set by the daemon that saw the running daemon go silent and handed its spec back to the queue. */
  handoff: z
    .object({
      from: z.string().min(1).describe("The daemon that went silent."),
      by: z.string().min(1).describe("The daemon that handed the run back."),
      at: EpochMsSchema,
    })
    .optional()
    .describe(
      "Set once when the daemon running the run went silent and another handed its spec back to the queue; cleared by the next claim.",
    ),
  usage: UsageTotalsSchema.optional().describe("Totals, set when the run ends."),
  error: WireErrorSchema.optional().describe("Set when the run failed."),
});

/** The key of a group's budget in the runs bucket: a `.` keeps it apart from every run id. */
export function groupBudgetKey(groupId: string): string {
  return `budget.${groupId}`;
}

/**
 * The key of what a group spent, in the runs bucket. Only daemons may write it: the accounts file
 * denies parents `$KV.<runs bucket>.spend.>` (docs/security.md), so a parent cannot reset a group's
 * spend, although it writes the rest of the bucket.
 */
export function groupSpendKey(groupId: string): string {
  return `spend.${groupId}`;
}

/**
 * Key `budget.<group_id>` in the runs bucket: the cap of a budget shared by every run of a group, on
 * every daemon (docs/budgets.md). Written by the group's owner, with its proof; what the group spent is
 * the daemons' entry {@link GroupSpendSchema}.
 */
export const GroupBudgetSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  group_id: RunIdSchema.describe("The group."),
  cap: z
    .object({
      max_cost_usd: z.number().nonnegative().optional().describe("In US dollars, priced per model."),
      max_tokens: z.number().int().nonnegative().optional().describe("Input (all kinds) plus output tokens."),
    })
    .describe("The group pauses when what it spent reaches either bound."),
  cap_version: z
    .number()
    .int()
    .positive()
    .describe("Raised by every change of the cap; daemons refuse a version older than one they obeyed."),
  cap_proof: HexSecretSchema.describe(
    "`budgetCapProof(group_token, budget)`: a cap without it pauses the group.",
  ),
  updated_at: EpochMsSchema.describe("Last write."),
});

/** An amount of money and tokens. */
const SpendAmountSchema = z.object({
  cost_usd: z.number().nonnegative().describe("In US dollars, priced per model."),
  tokens: z.number().int().nonnegative().describe("Input (all kinds) plus output tokens."),
});

/**
 * Key `spend.<group_id>` in the runs bucket, written by daemons only: what a group's model calls cost,
 * and the reservations of the calls in flight. Every change is a compare-and-set.
 */
export const GroupSpendSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  group_id: RunIdSchema.describe("The group."),
  spent: SpendAmountSchema.describe("What the group's finished model calls cost."),
  reservations: z
    .array(
      SpendAmountSchema.extend({
        run_id: RunIdSchema.describe("The run making the call."),
        attempt: z
          .number()
          .int()
          .positive()
          .describe("Its attempt: a later attempt charges an earlier one's."),
        turn: z.number().int().positive().describe("The call's turn."),
        at: EpochMsSchema.describe("When it was reserved."),
      }),
    )
    .max(4096)
    .describe("Upper bounds of the calls in flight; each is replaced by the call's real cost when it ends."),
  cap_version: z
    .number()
    .int()
    .nonnegative()
    .describe("The newest cap version a daemon obeyed: an older cap (replayed) pauses the group."),
  updated_at: EpochMsSchema.describe("Last write."),
});

/**
 * Key `limit.<scope>` in the daemons bucket: the model calls holding a slot of a cluster-wide limit,
 * and those waiting, each with a lease (docs/budgets.md, "Concurrency limits"). Written by daemons only.
 */
export const CallSlotsSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  limit: z
    .number()
    .int()
    .positive()
    .optional()
    .describe("Calls at once, as the last daemon to write it was configured."),
  scope: z
    .string()
    .max(512)
    .optional()
    .describe("What the limit counts, readable: `key:<hash>`, `model:<name>` or `tenant:<id>`."),
  holders: z
    .array(
      z.object({
        id: z.string().min(1).max(256).describe("The call: `<daemon_id>.<uuid>`."),
        parent: z.string().max(256).describe("The parent agent id of its run (for fairness)."),
        run_id: z.string().max(256).optional().describe("The run making the call (shown by `forkd ps`)."),
        daemon_id: z.string().min(1).describe("The daemon making the call."),
        until: EpochMsSchema.describe("Its lease: renewed while the call runs."),
      }),
    )
    .describe("Calls holding a slot."),
  waiters: z
    .array(
      z.object({
        id: z.string().min(1).max(256),
        parent: z.string().max(256),
        run_id: z.string().max(256).optional().describe("The run waiting (shown by `forkd ps`)."),
        since: EpochMsSchema.describe("When it began to wait."),
        until: EpochMsSchema.describe("Its lease: renewed while it waits."),
      }),
    )
    .describe("Calls waiting; slots go to the parent holding the fewest, then the longest waiting."),
});

/** Key `<daemon_id>` in the daemons bucket, refreshed by the daemon's heartbeat. */
export const DaemonInfoSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  daemon_id: RunIdSchema.describe("The daemon; also the key."),
  host: z.string().describe("Host name."),
  pid: z.number().int().positive().describe("Process id."),
  version: z.string().describe("The daemon's package version."),
  /** Highest protocol version it reads. */
  protocol: z
    .number()
    .int()
    .positive()
    .describe("Highest protocol version it reads; a parent checks it before sending a newer `v`."),
  state: z
    .enum(["starting", "running", "draining", "stopped"])
    .describe("`draining`: finishing or handing over its runs, taking no new ones."),
  capacity: z.number().int().positive().describe("Runs it executes at once."),
  load: z.number().int().nonnegative().describe("Runs it executes now."),
  started_at: EpochMsSchema.describe("Process start."),
  heartbeat_at: EpochMsSchema.describe("Last refresh of this entry."),
  metrics_url: z.string().optional().describe("Prometheus endpoint, when served."),
});

/**
 * A daemon's presence, on `<prefix>.presence.<daemon_id>` (core NATS) several times a second: the
 * runs it holds and how to hand each back to the queue if it goes silent (docs/failure-behaviour.md).
 */
export const DaemonPresenceSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  daemon_id: RunIdSchema.describe("The daemon."),
  at: EpochMsSchema.describe("When it was sent."),
  runs: z
    .array(
      z.object({
        run_id: RunIdSchema,
        spec_seq: z.number().int().positive().describe("The spec the daemon runs."),
        attempt: z.number().int().positive().describe("The attempt it claimed."),
        ack: z
          .string()
          .max(512)
          .regex(/^\$JS\.ACK\.[^\s*>]+$/)
          .describe("The ack subject of the spec's delivery to this daemon."),
      }),
    )
    .max(1024)
    .describe("Runs the daemon holds, claimed."),
  pull_ms: z
    .number()
    .int()
    .nonnegative()
    .max(60_000)
    .optional()
    .describe("How long its open pull request on the specs consumer stays open, from `at`."),
});

/**
 * On `<prefix>.provider.throttle` (core NATS): the provider refused one daemon's request with "slow
 * down" (429, 529); the daemons calling the same provider account hold that model's requests until
 * `until` (docs/failure-behaviour.md).
 */
export const ProviderThrottleSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  daemon_id: RunIdSchema.describe("The daemon that was refused."),
  key_id: z
    .string()
    .regex(/^[0-9a-f]{16,64}$/)
    .describe("A hash of the provider's base URL and API key: the account the hold applies to."),
  model: z.string().min(1).max(256).describe("The model whose requests are held."),
  until: EpochMsSchema.describe("Hold requests until then (a daemon holds 60 s at most)."),
});

/** Key of the retention lease in the daemons bucket: a `.` keeps it apart from every daemon id. */
export const RETENTION_LEASE_KEY = "lease.retention";

/**
 * Key {@link RETENTION_LEASE_KEY} in the daemons bucket: which daemon sweeps finished runs and unused
 * prefixes, until when it holds the lease, the windows it applies and what its last sweep did
 * (docs/operations.md, "Retention"). Taken and renewed by compare-and-set; `forkd ps` shows it.
 */
export const RetentionLeaseSchema = z.object({
  v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
  holder: RunIdSchema.describe("The daemon that sweeps."),
  until: EpochMsSchema.describe("The lease is the holder's until then; another daemon may take it after."),
  retention_ms: z
    .number()
    .int()
    .positive()
    .describe("A finished run's registry entry and events are removed this long after it ended."),
  prefix_retention_ms: z
    .number()
    .int()
    .positive()
    .describe("A stored prefix no queued or running run refers to is removed this long after its last use."),
  last_sweep: z
    .object({
      at: EpochMsSchema.describe("When the sweep ended."),
      runs_removed: z.number().int().nonnegative().describe("Finished runs removed."),
      prefixes_removed: z.number().int().nonnegative().describe("Unused prefixes removed."),
      took_ms: z.number().int().nonnegative().describe("How long it took."),
    })
    .optional()
    .describe("What the holder's last sweep did."),
});

/**
 * Key `gemini_cache.<key id>.<display name>` in the daemons bucket: how the daemons sharing a Gemini
 * API key make a fan-out's explicit cache once, and renew it once per TTL (docs/fork-semantics.md,
 * "Gemini"). `held`: a daemon is creating or renewing it, until its lease ends; `ready`: the cache,
 * as its creation or last renewal left it. Taken by compare-and-set; written by daemons only.
 */
export const GeminiCacheEntrySchema = z.discriminatedUnion("state", [
  z.object({
    v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
    state: z.literal("held").describe("A daemon is creating or renewing the cache."),
    holder: z.string().min(1).max(256).describe("The daemon holding the entry."),
    lease_until: EpochMsSchema.describe("Its lease: another daemon may take the entry after."),
  }),
  z.object({
    v: z.literal(PROTOCOL_VERSION).describe("Protocol version."),
    state: z.literal("ready").describe("The cache is made."),
    name: z
      .string()
      .min(1)
      .nullable()
      .describe(
        "Its resource name (`cachedContents/…`); null: the prefix is below the model's cache minimum.",
      ),
    expires_at: EpochMsSchema.describe("When it expires, as its creation or last renewal said."),
    tokens: z.number().int().nonnegative().describe("The tokens it holds."),
  }),
]);

/** Where a run is. */
export type RunStatus = z.infer<typeof RunStatusSchema>;
export type RunState = z.infer<typeof RunStateSchema>;
export type DaemonInfo = z.infer<typeof DaemonInfoSchema>;
export type DaemonPresence = z.infer<typeof DaemonPresenceSchema>;
export type RetentionLease = z.infer<typeof RetentionLeaseSchema>;
export type GroupBudget = z.infer<typeof GroupBudgetSchema>;
export type GroupSpend = z.infer<typeof GroupSpendSchema>;
export type CallSlots = z.infer<typeof CallSlotsSchema>;
export type GeminiCacheEntry = z.infer<typeof GeminiCacheEntrySchema>;
export type ProviderThrottleNotice = z.infer<typeof ProviderThrottleSchema>;

/** What {@link queuedRunState} needs: the run, when its spec was made, and what the spec says of it. */
export interface QueuedRunInit {
  runId: string;
  /** The spec's `created_at`. @unit epoch ms */
  createdAt: number;
  /** The time of this write. @unit epoch ms */
  now: number;
  /** The stream sequence of the spec that owns the run, when known. */
  specSeq?: number | undefined;
  parentAgentId?: string | undefined;
  label?: string | undefined;
  groupId?: string | undefined;
}

/**
 * A run's registry entry before any daemon claimed it: queued, attempt 0, nothing published. The
 * one constructor of a first entry, for the client that queues a run, an abort that flags one not
 * yet registered, and a daemon that claims or ends one without an entry.
 */
export function queuedRunState(init: QueuedRunInit): RunState {
  const state: RunState = {
    v: PROTOCOL_VERSION,
    run_id: init.runId,
    status: "queued",
    attempt: 0,
    last_seq: 0,
    created_at: init.createdAt,
    updated_at: init.now,
  };
  if (init.specSeq !== undefined) state.spec_seq = init.specSeq;
  if (init.parentAgentId !== undefined) state.parent_agent_id = init.parentAgentId;
  if (init.label !== undefined) state.label = init.label;
  if (init.groupId !== undefined) state.group_id = init.groupId;
  return state;
}
