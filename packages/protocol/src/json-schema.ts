// JSON Schema (draft 2020-12) of every message on the wire, generated from the zod schemas, for
// readers that are not TypeScript. `pnpm --filter @forkd/protocol schema` writes them to docs/schema.
import { z } from "zod";
import {
  AbortRequestSchema,
  PermissionRequestSchema,
  PermissionResponseSchema,
  SteerReplySchema,
  SteerRequestSchema,
  ToolHostRequestSchema,
  ToolHostResponseSchema,
} from "./control.js";
import { FORK_EVENT_TYPES, ForkEventEnvelopeSchema, ForkEventSchema, type ForkEventType } from "./events.js";
import {
  CallSlotsSchema,
  DaemonInfoSchema,
  DaemonPresenceSchema,
  GeminiCacheEntrySchema,
  GroupBudgetSchema,
  GroupSpendSchema,
  ProviderThrottleSchema,
  RetentionLeaseSchema,
  RunStateSchema,
} from "./registry.js";
import { ForkPrefixSchema, ForkSpecSchema } from "./spec.js";

interface Entry {
  schema: z.ZodType;
  title: string;
  description: string;
}

// The tables below are built per call, not at import: code that runs at import is a static mutant,
// which `pnpm mutation` cannot measure, and these calls only generate the docs' schemas.
const eventDescriptions = (): Record<ForkEventType, string> => ({
  accepted: "A daemon claimed the run (first event of every attempt).",
  started: "The turn loop starts: the model is known and whether the parent's cache is shared.",
  "llm.request": "A model request of one turn is sent.",
  "llm.delta": "Streamed text, batched: several provider deltas per event.",
  "llm.message": "The model's complete reply of one turn, with the provider's usage.",
  "tool.call": "The model called a tool; this is the tool ledger's entry.",
  "permission.requested": "A tool call waits for the parent's approval.",
  "permission.resolved": "The parent answered (or the wait timed out).",
  "tool.result": "A tool call finished; its result is appended to the conversation.",
  "tool.denied": "A tool call was refused (filter, permission, recursion guard).",
  "cache.break": "The first turn read far less from the cache than the inherited prefix should have given.",
  steered: "A steering message from the parent was added as a user message before this turn.",
  paused: "The run waits at a turn boundary: its group's shared budget is spent.",
  resumed: "The run goes on after a pause.",
  heartbeat: "The run is alive; published while nothing else is.",
  completed: "Terminal: the run finished and returns its result.",
  failed: "Terminal: the run failed with an error.",
  aborted: "Terminal: the run was aborted.",
});

/** File name stem of one event type's schema: `fork-event-llm-delta` for `llm.delta`. */
function eventSchemaName(type: ForkEventType): string {
  return `fork-event-${type.replaceAll(".", "-")}`;
}

function entries(): [string, Entry][] {
  const events = ForkEventSchema.options.map((schema): [string, Entry] => {
    const type = schema.shape.type.value;
    return [
      eventSchemaName(type),
      { schema, title: `forkd ${type} event`, description: eventDescriptions()[type] },
    ];
  });
  const order = new Map<string, number>(FORK_EVENT_TYPES.map((type, i) => [eventSchemaName(type), i]));
  events.sort(([a], [b]) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
  return [
    [
      "fork-spec",
      {
        schema: ForkSpecSchema,
        title: "forkd fork spec",
        description:
          "Everything a daemon needs to run one child. Published on `<prefix>.fork.<run_id>` (work-queue stream).",
      },
    ],
    [
      "fork-prefix",
      {
        schema: ForkPrefixSchema,
        title: "forkd fork prefix",
        description:
          "The inherited conversation: inline in a spec, or stored in the prefixes object store under the SHA-256 of its bytes.",
      },
    ],
    [
      "fork-event",
      {
        schema: ForkEventSchema,
        title: "forkd fork event",
        description: "Any event of a run, published on `<prefix>.fork.<run_id>.events` (limits stream).",
      },
    ],
    [
      "fork-event-envelope",
      {
        schema: ForkEventEnvelopeSchema,
        title: "forkd fork event envelope",
        description:
          "The fields every event has, whatever its type; what an observer relies on for an unknown type.",
      },
    ],
    ...events,
    [
      "abort-request",
      {
        schema: AbortRequestSchema,
        title: "forkd abort request",
        description:
          "Published on `<prefix>.fork.<run_id>.abort` (core NATS) and mirrored into the run's registry entry.",
      },
    ],
    [
      "steer-request",
      {
        schema: SteerRequestSchema,
        title: "forkd steer request",
        description:
          "Published on `<prefix>.fork.<run_id>.steer` (request/reply): a user message added to a running child at its next turn boundary.",
      },
    ],
    [
      "steer-reply",
      {
        schema: SteerReplySchema,
        title: "forkd steer reply",
        description: "The reply of the daemon running a steered run.",
      },
    ],
    [
      "permission-request",
      {
        schema: PermissionRequestSchema,
        title: "forkd permission request",
        description:
          "A daemon asks the parent, on `<prefix>.fork.<run_id>.permission`, whether a tool call may run.",
      },
    ],
    [
      "permission-response",
      {
        schema: PermissionResponseSchema,
        title: "forkd permission response",
        description: "The parent's reply to a permission request.",
      },
    ],
    [
      "tool-host-request",
      {
        schema: ToolHostRequestSchema,
        title: "forkd tool host request",
        description: "A daemon asks a tool host, on `<prefix>.toolhost.<host_id>`, to run a tool.",
      },
    ],
    [
      "tool-host-response",
      {
        schema: ToolHostResponseSchema,
        title: "forkd tool host response",
        description: "A tool host's reply: the tool result.",
      },
    ],
    [
      "run-state",
      {
        schema: RunStateSchema,
        title: "forkd run state",
        description: "Key `<run_id>` in the runs KV bucket.",
      },
    ],
    [
      "group-budget",
      {
        schema: GroupBudgetSchema,
        title: "forkd group budget",
        description: "Key `budget.<group_id>` of the runs bucket: a group's cap, signed by its owner.",
      },
    ],
    [
      "group-spend",
      {
        schema: GroupSpendSchema,
        title: "forkd group spend",
        description:
          "Key `spend.<group_id>` of the runs bucket, written by daemons only: what a group spent and has reserved.",
      },
    ],
    [
      "daemon-info",
      {
        schema: DaemonInfoSchema,
        title: "forkd daemon info",
        description: "Key `<daemon_id>` in the daemons KV bucket, refreshed by the daemon's heartbeat.",
      },
    ],
    [
      "retention-lease",
      {
        schema: RetentionLeaseSchema,
        title: "forkd retention lease",
        description:
          "Key `lease.retention` in the daemons KV bucket: the daemon that sweeps finished runs and unused prefixes, and its last sweep.",
      },
    ],
    [
      "call-slots",
      {
        schema: CallSlotsSchema,
        title: "forkd call slots",
        description:
          "Key `limit.<kind>.<token>` in the daemons KV bucket: the model calls holding a slot of one cluster-wide limit, and those waiting.",
      },
    ],
    [
      "gemini-cache-entry",
      {
        schema: GeminiCacheEntrySchema,
        title: "forkd Gemini cache entry",
        description:
          "Key `gemini_cache.<key id>.<display name>` in the daemons KV bucket: one creation (and one renewal per TTL) of a Gemini fan-out's explicit cache across daemons.",
      },
    ],
    [
      "daemon-presence",
      {
        schema: DaemonPresenceSchema,
        title: "forkd daemon presence",
        description:
          "Published on `<prefix>.presence.<daemon_id>` (core NATS) several times a second: the runs the daemon holds.",
      },
    ],
    [
      "provider-throttle",
      {
        schema: ProviderThrottleSchema,
        title: "forkd provider throttle notice",
        description:
          "Published on `<prefix>.provider.throttle` (core NATS) when the provider refused a daemon's request with 429 or 529.",
      },
    ],
  ];
}

// Keywords first in this order, then the others alphabetically; property names keep their declaration order.
const keywordOrder = () => [
  "$schema",
  "$id",
  "$comment",
  "title",
  "description",
  "type",
  "const",
  "enum",
  "default",
];

function keywordRank(key: string): number {
  const order = keywordOrder();
  const i = order.indexOf(key);
  return i === -1 ? order.length : i;
}

function canonical(value: unknown, keepOrder = false): unknown {
  if (Array.isArray(value)) return value.map((item) => canonical(item));
  if (value === null || typeof value !== "object") return value;
  const keys = Object.keys(value);
  if (!keepOrder) keys.sort((a, b) => keywordRank(a) - keywordRank(b) || (a < b ? -1 : a > b ? 1 : 0));
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const child = (value as Record<string, unknown>)[key];
    out[key] =
      keepOrder || (key !== "properties" && key !== "$defs") ? canonical(child) : canonical(child, true);
  }
  return out;
}

/**
 * The JSON Schema (draft 2020-12) of every message on the wire, keyed by name: `fork-spec`,
 * `fork-prefix`, `fork-event`, `fork-event-envelope`, one `fork-event-<type>` per event type (dots
 * become dashes), `abort-request`, `permission-request`, `permission-response`, `tool-host-request`,
 * `tool-host-response`, `run-state`, `daemon-info`.
 *
 * Schemas describe what a sender may write (zod's `io: "input"`): fields with a default are optional,
 * and unknown fields are allowed because readers ignore them. Keys are in a stable order; each call
 * returns fresh objects.
 */
export function protocolJsonSchemas(): Record<string, object> {
  const out: Record<string, object> = {};
  for (const [name, { schema, title, description }] of entries()) {
    const json = z.toJSONSchema(schema, { io: "input", target: "draft-2020-12" });
    out[name] = canonical({
      ...json,
      $id: `${name}.schema.json`,
      $comment: "Generated from @forkd/protocol by `pnpm --filter @forkd/protocol schema`; do not edit.",
      title,
      description,
    }) as object;
  }
  return out;
}
