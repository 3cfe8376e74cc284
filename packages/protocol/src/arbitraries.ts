// fast-check arbitraries that generate valid wire messages, for the property-based tests. Test-only:
// not exported from index.ts and not compiled into dist (see tsconfig.json's exclude).
//
// Every arbitrary yields the *decoded* form of a message: all fields that have a default are present,
// numbers are JSON-safe (no -0, NaN or Infinity), objects have Object.prototype. Anthropic shapes
// carry unknown fields and unknown block types, with their keys in a random order, because the codec
// must pass those through untouched.
import fc from "fast-check";
import type {
  AssistantMessage,
  CacheSafeParams,
  ContentBlock,
  MessageParam,
  ProviderUsage,
  ToolDefinition,
} from "./anthropic.js";
import type {
  AbortRequest,
  PermissionRequest,
  PermissionResponse,
  SteerRequest,
  ToolHostRequest,
  ToolHostResponse,
} from "./control.js";
import type { ForkEvent, ForkEventOf, ForkEventType, ForkReport, ForkResult, WireError } from "./events.js";
import { MAX_RUN_ID_LENGTH } from "./limits.js";
import type { DaemonInfo, RetentionLease, RunState } from "./registry.js";
import {
  type CacheLeader,
  type ForkCall,
  type ForkPrefix,
  type ForkSpec,
  type Isolation,
  type Limits,
  MAX_CACHE_LEADER_WAIT_MS,
  type Overrides,
  type ParentIdentity,
  type PermissionPolicy,
  type PrefixSource,
  type ToolFilterSpec,
  type ToolHostRef,
  type TraceContext,
} from "./spec.js";
import type { UsageTotals } from "./usage.js";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

// fc.record with objects that have Object.prototype (a null prototype would not survive JSON anyway).
function record<T>(
  model: { [K in keyof T]: fc.Arbitrary<T[K]> },
  requiredKeys: (keyof T)[] = Object.keys(model) as (keyof T)[],
): fc.Arbitrary<T> {
  return fc.record(model, { requiredKeys, noNullPrototype: true }) as unknown as fc.Arbitrary<T>;
}

const RUN_ID_CHARS = [..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_=-"];
const HEX = [..."0123456789abcdef"];

/** Any string, lone surrogates and control characters included. */
export const anyString = (maxLength = 24): fc.Arbitrary<string> => fc.string({ unit: "binary", maxLength });
/** A non-empty string. */
export const nonEmpty = (maxLength = 24): fc.Arbitrary<string> =>
  fc.string({ unit: "binary", minLength: 1, maxLength });
/** A valid run id, up to {@link MAX_RUN_ID_LENGTH} characters (the bounds are hit often). */
export const runIdArb: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: fc.constantFrom(...RUN_ID_CHARS), minLength: 1, maxLength: 24 }),
  fc.string({ unit: fc.constantFrom(...RUN_ID_CHARS), minLength: 1, maxLength: MAX_RUN_ID_LENGTH }),
  fc.string({
    unit: fc.constantFrom(...RUN_ID_CHARS),
    minLength: MAX_RUN_ID_LENGTH,
    maxLength: MAX_RUN_ID_LENGTH,
  }),
);
const hex = (length: number) =>
  fc.string({ unit: fc.constantFrom(...HEX), minLength: length, maxLength: length });
export const sha256Arb: fc.Arbitrary<string> = hex(64);
const posInt = fc.integer({ min: 1, max: 2 ** 31 });
const nonNegInt = fc.integer({ min: 0, max: 2 ** 31 });
// -0 becomes 0 on the wire: normalise it away so deep equality holds.
const nonNegNumber = fc.double({ min: 0, max: 1e12, noNaN: true }).map((x) => x + 0);
const anyNumber = fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => x + 0);
export const epochMsArb: fc.Arbitrary<number> = fc.oneof(
  fc.integer({ min: 0, max: 4_102_444_800_000 }),
  fc.double({ min: 0, max: 4_102_444_800_000, noNaN: true }).map((x) => x + 0),
);
// Object keys: anything but __proto__ (the codec refuses it); `constructor` and friends are data.
const keyArb = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.constantFrom("constructor", "prototype", "toString", "hasOwnProperty", "0", "10", "type"),
);
const safeKey = keyArb.filter((k) => k !== "__proto__");

/** Any JSON value, nested at most `maxDepth` containers deep. */
export function jsonArb(maxDepth = 3): fc.Arbitrary<Json> {
  const { json } = fc.letrec<{ json: Json }>((tie) => ({
    json: fc.oneof(
      { depthSize: "small", maxDepth },
      fc.constant(null),
      fc.boolean(),
      fc.integer(),
      anyNumber,
      anyString(),
      fc.array(tie("json"), { maxLength: 4 }),
      fc.dictionary(safeKey, tie("json"), { maxKeys: 4, noNullPrototype: true }),
    ),
  }));
  return json;
}

/** A JSON object (tool inputs, JSON Schemas of tools). */
export const jsonObjectArb: fc.Arbitrary<Record<string, Json>> = fc.dictionary(safeKey, jsonArb(2), {
  maxKeys: 5,
  noNullPrototype: true,
});

/**
 * Adds unknown fields (keys not in the object) and rebuilds the object with its keys in a random
 * order: the shapes a newer provider or parent may send.
 */
export function withUnknownFields<T extends object>(base: fc.Arbitrary<T>): fc.Arbitrary<T> {
  return fc
    .tuple(base, fc.dictionary(safeKey, jsonArb(2), { maxKeys: 3, noNullPrototype: true }))
    .chain(([obj, extra]) => {
      const merged: Record<string, unknown> = { ...(obj as Record<string, unknown>) };
      for (const [key, value] of Object.entries(extra)) if (!Object.hasOwn(merged, key)) merged[key] = value;
      const keys = Object.keys(merged);
      return fc.shuffledSubarray(keys, { minLength: keys.length, maxLength: keys.length }).map((order) => {
        const out: Record<string, unknown> = {};
        for (const key of order) out[key] = merged[key];
        return out as T;
      });
    });
}

const cacheControlArb = record<{ type: "ephemeral"; ttl?: "5m" | "1h" }>(
  { type: fc.constant("ephemeral"), ttl: fc.constantFrom("5m", "1h") },
  ["type"],
);

/** A text block, sometimes with `cache_control`. */
export const textBlockArb: fc.Arbitrary<ContentBlock> = withUnknownFields(
  record<{ type: "text"; text: string; cache_control?: object }>(
    { type: fc.constant("text"), text: anyString(60), cache_control: cacheControlArb },
    ["type", "text"],
  ),
);

const toolUseBlockArb: fc.Arbitrary<ContentBlock> = withUnknownFields(
  record({ type: fc.constant("tool_use"), id: nonEmpty(), name: nonEmpty(), input: jsonObjectArb }),
);

const toolResultBlockArb: fc.Arbitrary<ContentBlock> = withUnknownFields(
  record<{ type: "tool_result"; tool_use_id: string; content?: string | ContentBlock[]; is_error?: boolean }>(
    {
      type: fc.constant("tool_result"),
      tool_use_id: nonEmpty(),
      content: fc.oneof(anyString(60), fc.array(textBlockArb, { maxLength: 2 })),
      is_error: fc.boolean(),
    },
    ["type", "tool_use_id"],
  ),
);

// Block types forkd does not know (thinking, images, server tools, a future kind): passed through.
const otherBlockArb: fc.Arbitrary<ContentBlock> = withUnknownFields(
  record({
    type: fc.oneof(
      fc.constantFrom("thinking", "redacted_thinking", "image", "server_tool_use", "web_search_tool_result"),
      fc.string({ minLength: 1, maxLength: 12 }),
    ),
    payload: jsonArb(2),
  }),
);

/** Any content block. */
export const contentBlockArb: fc.Arbitrary<ContentBlock> = fc.oneof(
  textBlockArb,
  toolUseBlockArb,
  toolResultBlockArb,
  otherBlockArb,
);

export const messageParamArb: fc.Arbitrary<MessageParam> = withUnknownFields(
  record<MessageParam>({
    role: fc.constantFrom("user", "assistant"),
    content: fc.oneof(anyString(60), fc.array(contentBlockArb, { maxLength: 4 })),
  }),
);

export const assistantMessageArb: fc.Arbitrary<AssistantMessage> = withUnknownFields(
  record<AssistantMessage>({
    role: fc.constant("assistant"),
    content: fc.array(contentBlockArb, { maxLength: 4 }),
  }),
);

const toolDefinitionArb: fc.Arbitrary<ToolDefinition> = withUnknownFields(
  record<ToolDefinition & { description?: string; input_schema?: object }>(
    { name: nonEmpty(), description: anyString(40), input_schema: jsonObjectArb },
    ["name"],
  ),
);

/** The parent's request: known fields of every shape, unknown fields, keys in any order. */
export const cacheSafeParamsArb: fc.Arbitrary<CacheSafeParams> = withUnknownFields(
  record<CacheSafeParams>(
    {
      model: nonEmpty(),
      max_tokens: posInt,
      system: fc.oneof(anyString(60), fc.array(textBlockArb, { maxLength: 3 })),
      tools: fc.array(toolDefinitionArb, { maxLength: 3 }),
      tool_choice: withUnknownFields(record({ type: fc.constantFrom("auto", "any", "tool", "none") })),
      thinking: withUnknownFields(record({ type: fc.constantFrom("enabled", "disabled") })),
      messages: fc.array(messageParamArb, { minLength: 1, maxLength: 4 }),
      temperature: fc.double({ min: 0, max: 1, noNaN: true }).map((x) => x + 0),
      top_p: fc.double({ min: 0, max: 1, noNaN: true }).map((x) => x + 0),
      top_k: fc.integer({ min: 0, max: 500 }),
      stop_sequences: fc.array(anyString(8), { maxLength: 3 }),
      metadata: jsonObjectArb,
    },
    ["model", "messages"],
  ),
);

export const forkPrefixArb: fc.Arbitrary<ForkPrefix> = record<ForkPrefix>(
  { params: cacheSafeParamsArb, reply: assistantMessageArb },
  ["params"],
);

export const prefixSourceArb: fc.Arbitrary<PrefixSource> = fc.oneof(
  record({ kind: fc.constant("inline" as const), prefix: forkPrefixArb }),
  record({
    kind: fc.constant("ref" as const),
    hash: sha256Arb,
    size: fc.integer({ min: 1, max: 64 * 1024 * 1024 }),
  }),
  record({ kind: fc.constant("none" as const) }),
);

const toolFilterArb: fc.Arbitrary<ToolFilterSpec> = fc.oneof(
  record({ kind: fc.constant("all" as const) }),
  record({ kind: fc.constant("allow" as const), tools: fc.array(nonEmpty(), { maxLength: 4 }) }),
  record({ kind: fc.constant("memory" as const), memory_dir: nonEmpty() }),
);

const parentArb = record<ParentIdentity>(
  {
    agent_id: nonEmpty(),
    session_id: anyString(),
    run_id: runIdArb,
    lineage: fc.array(runIdArb, { maxLength: 5 }),
    host: anyString(),
  },
  ["agent_id", "lineage"],
);

const limitsArb = record<Limits>(
  {
    max_turns: nonNegInt,
    timeout_ms: posInt,
    budget: record<NonNullable<Limits["budget"]>>(
      {
        max_cost_usd: fc.double({ min: 0.001, max: 1000, noNaN: true }),
        max_output_tokens: posInt,
        max_input_tokens: posInt,
      },
      [],
    ),
  },
  ["max_turns"],
);

const overridesArb = record<Overrides>(
  { model: nonEmpty(), max_tokens: posInt, system_reminder: anyString(80) },
  [],
);

const isolationArb = record<Isolation>({ worktree: fc.boolean(), base_ref: nonEmpty(), cwd: anyString() }, [
  "worktree",
]);

const permissionPolicyArb = record<PermissionPolicy>({
  mode: fc.constantFrom("allow", "ask", "deny"),
  timeout_ms: posInt,
});

const toolHostRefArb = record<ToolHostRef>({ id: runIdArb, tools: fc.array(nonEmpty(), { maxLength: 4 }) });

const traceArb = record<TraceContext>(
  {
    traceparent: fc.tuple(hex(2), hex(32), hex(16), hex(2)).map((parts) => parts.join("-")),
    tracestate: anyString(40),
  },
  ["traceparent"],
);

const forkCallArb = record<ForkCall>({ tool_use_id: nonEmpty(), description: anyString() }, ["tool_use_id"]);

/** A fork spec as decoded (every defaulted field present). */
export const forkSpecArb: fc.Arbitrary<ForkSpec> = record<ForkSpec>(
  {
    v: fc.constant(1 as const),
    run_id: runIdArb,
    parent: parentArb,
    label: anyString(),
    group_id: runIdArb,
    group_token: hex(64),
    query_source: anyString(),
    directive: nonEmpty(200),
    fork_call: forkCallArb,
    prefix: prefixSourceArb,
    tool_filter: toolFilterArb,
    overrides: overridesArb,
    limits: limitsArb,
    isolation: isolationArb,
    permissions: permissionPolicyArb,
    tool_host: toolHostRefArb,
    trace: traceArb,
    created_at: epochMsArb,
    deadline_at: epochMsArb,
    cache_leader: record<CacheLeader>(
      { run_id: runIdArb, wait_ms: fc.integer({ min: 1, max: MAX_CACHE_LEADER_WAIT_MS }) },
      ["run_id", "wait_ms"],
    ),
  },
  [
    "v",
    "run_id",
    "parent",
    "query_source",
    "directive",
    "prefix",
    "tool_filter",
    "overrides",
    "limits",
    "isolation",
    "permissions",
    "created_at",
  ],
);

/** A fork spec whose prefix is inline. */
export const inlineForkSpecArb: fc.Arbitrary<ForkSpec> = fc
  .tuple(forkSpecArb, forkPrefixArb)
  .map(([spec, prefix]) => ({ ...spec, prefix: { kind: "inline" as const, prefix } }));

export const usageTotalsArb: fc.Arbitrary<UsageTotals> = record<UsageTotals>(
  {
    input_tokens: nonNegInt,
    cache_write_5m_tokens: nonNegInt,
    cache_write_1h_tokens: nonNegInt,
    cache_read_tokens: nonNegInt,
    output_tokens: nonNegInt,
    cache_storage_token_seconds: nonNegNumber,
    llm_calls: nonNegInt,
    cost_usd: fc.option(nonNegNumber, { nil: null }),
    unpriced_models: fc.array(nonEmpty(), { maxLength: 2 }),
  },
  [
    "input_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
    "cache_read_tokens",
    "output_tokens",
    "llm_calls",
    "cost_usd",
  ],
);

export const wireErrorArb: fc.Arbitrary<WireError> = record<WireError>(
  {
    code: nonEmpty(),
    message: anyString(80),
    retryable: fc.boolean(),
    path: fc.array(fc.oneof(anyString(8), fc.nat(100)), { maxLength: 4 }),
  },
  ["code", "message", "retryable"],
);

const providerUsageArb: fc.Arbitrary<ProviderUsage> = withUnknownFields(
  record<ProviderUsage>(
    {
      input_tokens: nonNegInt,
      output_tokens: nonNegInt,
      cache_creation_input_tokens: fc.option(nonNegInt, { nil: null }),
      cache_read_input_tokens: fc.option(nonNegInt, { nil: null }),
      cache_storage_token_seconds: fc.option(nonNegNumber, { nil: null }),
      cache_creation: fc.option(
        record({ ephemeral_5m_input_tokens: nonNegInt, ephemeral_1h_input_tokens: nonNegInt }),
        { nil: null },
      ),
    },
    ["input_tokens", "output_tokens"],
  ),
);

const reportArb = record<ForkReport>(
  {
    scope: anyString(),
    result: anyString(),
    key_files: fc.array(anyString(), { maxLength: 3 }),
    files_changed: fc.array(anyString(), { maxLength: 3 }),
    issues: anyString(),
  },
  [],
);

export const forkResultArb: fc.Arbitrary<ForkResult> = record<ForkResult>(
  {
    final_text: anyString(200),
    report: reportArb,
    usage: usageTotalsArb,
    turns: nonNegInt,
    tool_uses: nonNegInt,
    duration_ms: nonNegNumber,
    cache_shared: fc.boolean(),
    stop: fc.constantFrom(
      "end_turn",
      "max_turns",
      "max_tokens",
      "budget",
      "stop_sequence",
      "refusal",
      "stopped",
    ),
    stop_reason: anyString(),
    commit: record({
      sha: hex(40),
      branch: anyString(),
      files_changed: fc.array(anyString(), { maxLength: 3 }),
    }),
  },
  ["final_text", "usage", "turns", "tool_uses", "duration_ms", "cache_shared", "stop"],
);

const envelopeArb = record(
  {
    v: fc.constant(1 as const),
    run_id: runIdArb,
    seq: posInt,
    attempt: fc.integer({ min: 1, max: 20 }),
    ts: epochMsArb,
    group_id: runIdArb,
  },
  ["v", "run_id", "seq", "attempt", "ts"],
);

function event<T extends ForkEventType>(
  type: T,
  body: Record<string, fc.Arbitrary<unknown>>,
  required: string[] = Object.keys(body),
): fc.Arbitrary<ForkEventOf<T>> {
  return fc
    .tuple(envelopeArb, record<Record<string, unknown>>(body, required))
    .map(([envelope, fields]) => ({ ...envelope, type, ...fields }) as ForkEventOf<T>);
}

const turnArb = fc.integer({ min: 1, max: 500 });

/** One arbitrary per event type. */
export const eventArbs: { [T in ForkEventType]: fc.Arbitrary<ForkEventOf<T>> } = {
  accepted: event(
    "accepted",
    {
      daemon_id: nonEmpty(),
      host: anyString(),
      queue_wait_ms: anyNumber,
      delivery: fc.integer({ min: 1, max: 10 }),
      resumed: fc.boolean(),
    },
    ["daemon_id", "queue_wait_ms", "delivery", "resumed"],
  ),
  started: event("started", {
    model: anyString(),
    prefix_hash: fc.option(sha256Arb, { nil: null }),
    cache_shared: fc.boolean(),
  }),
  "llm.request": event("llm.request", { turn: turnArb, model: anyString(), message_count: nonNegInt }),
  "llm.delta": event("llm.delta", { turn: turnArb, text: anyString(200) }),
  "llm.message": event(
    "llm.message",
    {
      turn: turnArb,
      message: assistantMessageArb,
      stop_reason: fc.option(fc.constantFrom("end_turn", "tool_use", "max_tokens", "refusal"), { nil: null }),
      usage: providerUsageArb,
      ttft_ms: nonNegNumber,
      duration_ms: nonNegNumber,
    },
    ["turn", "message", "stop_reason", "usage"],
  ),
  "tool.call": event("tool.call", {
    turn: turnArb,
    tool_use_id: anyString(),
    name: anyString(),
    input: jsonArb(),
  }),
  "permission.requested": event("permission.requested", {
    turn: turnArb,
    tool_use_id: anyString(),
    name: anyString(),
    timeout_ms: posInt,
  }),
  "permission.resolved": event(
    "permission.resolved",
    {
      turn: turnArb,
      tool_use_id: anyString(),
      decision: fc.constantFrom("allow", "deny", "timeout"),
      reason: anyString(),
    },
    ["turn", "tool_use_id", "decision"],
  ),
  "tool.result": event(
    "tool.result",
    {
      turn: turnArb,
      tool_use_id: anyString(),
      name: anyString(),
      content: anyString(200),
      is_error: fc.boolean(),
      duration_ms: nonNegNumber,
      interrupted: fc.boolean(),
    },
    ["turn", "tool_use_id", "name", "content", "is_error", "duration_ms"],
  ),
  "tool.denied": event("tool.denied", {
    turn: turnArb,
    tool_use_id: anyString(),
    name: anyString(),
    code: anyString(),
    reason: anyString(),
  }),
  "cache.break": event(
    "cache.break",
    {
      turn: turnArb,
      layer: fc.constantFrom("model", "tools", "system", "messages", "none"),
      prompt_tokens: nonNegInt,
      cache_read_tokens: nonNegInt,
      detail: anyString(),
      cause: fc.constantFrom(
        "model",
        "betas",
        "tools",
        "system",
        "messages",
        "expired_or_evicted",
        "unknown",
      ),
      expected_read_tokens: nonNegInt,
      missed_tokens: nonNegInt,
      miss_cost_usd: fc.double({ min: 0, max: 1e6, noNaN: true }),
      provider_reason: fc.oneof(
        fc.record({
          type: fc.constantFrom("model_changed", "system_changed", "tools_changed", "messages_changed"),
          cache_missed_input_tokens: nonNegInt,
        }),
        fc.record({ type: fc.constantFrom("previous_message_not_found", "unavailable") }),
      ),
    },
    ["turn", "layer", "prompt_tokens", "cache_read_tokens", "detail"],
  ),
  steered: event("steered", { turn: turnArb, steer_id: runIdArb, text: anyString(200), by: anyString() }, [
    "turn",
    "steer_id",
    "text",
  ]),
  paused: event(
    "paused",
    {
      turn: turnArb,
      reason: anyString(),
      spent_usd: anyNumber,
      cap_usd: anyNumber,
      spent_tokens: nonNegInt,
      cap_tokens: nonNegInt,
    },
    ["turn", "reason"],
  ),
  resumed: event("resumed", { turn: turnArb, paused_ms: nonNegNumber }),
  heartbeat: event("heartbeat", { daemon_id: nonEmpty(), turn: nonNegInt }),
  completed: event("completed", { result: forkResultArb }),
  failed: event("failed", { error: wireErrorArb, usage: usageTotalsArb }),
  aborted: event("aborted", { reason: anyString(), usage: usageTotalsArb }),
};

/** Any event. */
export const forkEventArb: fc.Arbitrary<ForkEvent> = fc.oneof(
  ...(Object.values(eventArbs) as fc.Arbitrary<ForkEvent>[]),
);

export const abortRequestArb: fc.Arbitrary<AbortRequest> = record<AbortRequest>(
  {
    v: fc.constant(1 as const),
    run_id: runIdArb,
    reason: anyString(),
    requested_at: epochMsArb,
    by: anyString(),
    mode: fc.constantFrom("abort", "stop"),
  },
  ["v", "run_id", "reason", "requested_at"],
);

export const steerRequestArb: fc.Arbitrary<SteerRequest> = record<SteerRequest>(
  {
    v: fc.constant(1 as const),
    run_id: runIdArb,
    steer_id: runIdArb,
    text: nonEmpty(200),
    requested_at: epochMsArb,
    by: anyString(),
  },
  ["v", "run_id", "steer_id", "text", "requested_at"],
);

export const permissionRequestArb: fc.Arbitrary<PermissionRequest> = record<PermissionRequest>({
  v: fc.constant(1 as const),
  run_id: runIdArb,
  tool_use_id: nonEmpty(),
  name: nonEmpty(),
  input: jsonArb(),
  requested_at: epochMsArb,
});

export const permissionResponseArb: fc.Arbitrary<PermissionResponse> = record<PermissionResponse>(
  { v: fc.constant(1 as const), decision: fc.constantFrom("allow", "deny"), reason: anyString() },
  ["v", "decision"],
);

export const toolHostRequestArb: fc.Arbitrary<ToolHostRequest> = record<ToolHostRequest>({
  v: fc.constant(1 as const),
  run_id: runIdArb,
  tool_use_id: nonEmpty(),
  name: nonEmpty(),
  input: jsonArb(),
});

export const toolHostResponseArb: fc.Arbitrary<ToolHostResponse> = record<ToolHostResponse>({
  v: fc.constant(1 as const),
  content: anyString(200),
  is_error: fc.boolean(),
});

export const runStateArb: fc.Arbitrary<RunState> = record<RunState>(
  {
    v: fc.constant(1 as const),
    run_id: runIdArb,
    status: fc.constantFrom("queued", "running", "paused", "completed", "failed", "aborted"),
    attempt: nonNegInt,
    daemon_id: nonEmpty(),
    last_seq: nonNegInt,
    label: anyString(),
    parent_agent_id: anyString(),
    group_id: runIdArb,
    model: anyString(),
    turn: nonNegInt,
    created_at: epochMsArb,
    updated_at: epochMsArb,
    started_at: epochMsArb,
    ended_at: epochMsArb,
    heartbeat_at: epochMsArb,
    abort: record<NonNullable<RunState["abort"]>>(
      {
        reason: anyString(),
        requested_at: epochMsArb,
        by: anyString(),
        mode: fc.constantFrom("abort", "stop"),
      },
      ["reason", "requested_at"],
    ),
    usage: usageTotalsArb,
    error: wireErrorArb,
  },
  ["v", "run_id", "status", "attempt", "last_seq", "created_at", "updated_at"],
);

export const retentionLeaseArb: fc.Arbitrary<RetentionLease> = record<RetentionLease>(
  {
    v: fc.constant(1 as const),
    holder: runIdArb,
    until: epochMsArb,
    retention_ms: posInt,
    prefix_retention_ms: posInt,
    last_sweep: record(
      { at: epochMsArb, runs_removed: nonNegInt, prefixes_removed: nonNegInt, took_ms: nonNegInt },
      ["at", "runs_removed", "prefixes_removed", "took_ms"],
    ),
  },
  ["v", "holder", "until", "retention_ms", "prefix_retention_ms"],
);

export const daemonInfoArb: fc.Arbitrary<DaemonInfo> = record<DaemonInfo>(
  {
    v: fc.constant(1 as const),
    daemon_id: runIdArb,
    host: anyString(),
    pid: posInt,
    version: anyString(),
    protocol: fc.integer({ min: 1, max: 5 }),
    state: fc.constantFrom("starting", "running", "draining", "stopped"),
    capacity: posInt,
    load: nonNegInt,
    started_at: epochMsArb,
    heartbeat_at: epochMsArb,
    metrics_url: anyString(),
  },
  [
    "v",
    "daemon_id",
    "host",
    "pid",
    "version",
    "protocol",
    "state",
    "capacity",
    "load",
    "started_at",
    "heartbeat_at",
  ],
);
