// What the JetStream KV buckets hold: one entry per run, one per live daemon.
import { z } from "zod";
import { WireErrorSchema } from "./events.js";
import { EpochMsSchema, PROTOCOL_VERSION, RunIdSchema } from "./spec.js";
import { UsageTotalsSchema } from "./usage.js";

export const RunStatusSchema = z.enum(["queued", "running", "completed", "failed", "aborted"]);

/** Key `<run_id>` in the runs bucket. */
export const RunStateSchema = z.object({
  v: z.literal(PROTOCOL_VERSION),
  run_id: RunIdSchema,
  status: RunStatusSchema,
  /** Highest attempt that claimed the run; a daemon holding a lower one is fenced. */
  attempt: z
    .number()
    .int()
    .nonnegative()
    .describe(
      "Highest attempt that claimed the run (0 while queued); a daemon holding a lower one is fenced.",
    ),
  daemon_id: z.string().min(1).optional().describe("The daemon running (or that last ran) the run."),
  /** Last event seq published. */
  last_seq: z.number().int().nonnegative().describe("Last event seq published (0 before the first)."),
  label: z.string().optional(),
  parent_agent_id: z.string().optional(),
  model: z.string().optional(),
  turn: z.number().int().nonnegative().optional(),
  created_at: EpochMsSchema,
  updated_at: EpochMsSchema,
  started_at: EpochMsSchema.optional(),
  ended_at: EpochMsSchema.optional(),
  heartbeat_at: EpochMsSchema.optional(),
  /** Set by an abort; a spec picked up or redelivered afterwards is not run. */
  abort: z
    .object({ reason: z.string(), requested_at: EpochMsSchema, by: z.string().optional() })
    .optional()
    .describe("Set by an abort; a spec picked up or redelivered afterwards is not run."),
  usage: UsageTotalsSchema.optional(),
  error: WireErrorSchema.optional(),
});

/** Key `<daemon_id>` in the daemons bucket, refreshed by the daemon's heartbeat. */
export const DaemonInfoSchema = z.object({
  v: z.literal(PROTOCOL_VERSION),
  daemon_id: RunIdSchema,
  host: z.string(),
  pid: z.number().int().positive(),
  version: z.string().describe("The daemon's package version."),
  /** Highest protocol version it reads. */
  protocol: z
    .number()
    .int()
    .positive()
    .describe("Highest protocol version it reads; a parent checks it before sending a newer `v`."),
  state: z.enum(["starting", "running", "draining", "stopped"]),
  capacity: z.number().int().positive().describe("Runs it executes at once."),
  load: z.number().int().nonnegative().describe("Runs it executes now."),
  started_at: EpochMsSchema,
  heartbeat_at: EpochMsSchema,
  metrics_url: z.string().optional(),
});

export type RunStatus = z.infer<typeof RunStatusSchema>;
export type RunState = z.infer<typeof RunStateSchema>;
export type DaemonInfo = z.infer<typeof DaemonInfoSchema>;
