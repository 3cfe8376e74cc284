// Decode and validate in one step. Hostile bytes are refused before the schema runs (size, UTF-8,
// JSON, depth, prototype keys), and every refusal is a ProtocolError with a code and a field path.
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
import { ProtocolError, type ProtocolErrorCode } from "./errors.js";
import {
  type ForkEvent,
  type ForkEventEnvelope,
  ForkEventEnvelopeSchema,
  ForkEventSchema,
  isForkEventType,
} from "./events.js";
import { parseJsonText } from "./json-text.js";
import {
  MAX_CONTROL_BYTES,
  MAX_EVENT_BYTES,
  MAX_JSON_DEPTH,
  MAX_PREFIX_BYTES,
  MAX_SPEC_BYTES,
} from "./limits.js";
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
import {
  ForkPrefixSchema,
  type ForkSpec,
  type ForkSpecInput,
  ForkSpecSchema,
  PROTOCOL_VERSION,
} from "./spec.js";

/** Encodes a value for the wire and decodes it back, validated. */
export interface Codec<Output, Input = Output> {
  /** Validates `value` and returns its UTF-8 JSON bytes. Throws {@link ProtocolError}. */
  encode(value: Input): Uint8Array;
  /** Parses and validates bytes (or a string). Throws {@link ProtocolError}. */
  decode(data: Uint8Array | string): Output;
  /** Largest payload accepted. @unit bytes */
  readonly maxBytes: number;
}

const utf8Decoder = new TextDecoder("utf-8", { fatal: true });
const utf8Encoder = new TextEncoder();

// Keys that would reach an object's prototype when copied with assignment.
const FORBIDDEN_KEYS = new Set(["__proto__"]);

// One open container met by the depth scan: where it is, and the key or index inside it.
interface ScanFrame {
  array: boolean;
  index: number;
  keyStart: number;
  keyEnd: number;
  expectKey: boolean;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Refuses JSON text nested deeper than {@link MAX_JSON_DEPTH} before it is parsed, in one linear pass
 * over the text: `JSON.parse` of a megabyte of `[[[[…` allocates a tree first, and the shape walk
 * after it would pay for every node again. Malformed text is left to the parser; the path of the
 * first too-deep container is rebuilt from the open containers' indexes and keys only on refusal.
 * Returns whether any key is written with an escape, which the native parser may misread (see
 * json-text.ts), so that the same pass decides how the text is parsed.
 */
function checkJsonDepth(text: string): { escapedKey: boolean } {
  const frames: ScanFrame[] = [];
  const length = text.length;
  let escapedKey = false;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      const start = i;
      let escaped = false;
      for (i++; i < length; i++) {
        const inner = text.charCodeAt(i);
        if (inner === BACKSLASH) {
          escaped = true;
          i++;
        } else if (inner === QUOTE) break;
      }
      const top = frames[frames.length - 1];
      if (top && !top.array && top.expectKey) {
        top.keyStart = start;
        top.keyEnd = i + 1;
        top.expectKey = false;
        if (escaped) escapedKey = true;
      }
    } else if (code === 0x5b /* [ */ || code === 0x7b /* { */) {
      if (frames.length >= MAX_JSON_DEPTH) {
        throw new ProtocolError("too_deep", `JSON nesting exceeds ${MAX_JSON_DEPTH} levels`, {
          path: scanPath(text, frames),
        });
      }
      frames.push({ array: code === 0x5b, index: 0, keyStart: 0, keyEnd: 0, expectKey: code === 0x7b });
    } else if (code === 0x5d /* ] */ || code === 0x7d /* } */) {
      frames.pop();
    } else if (code === 0x2c /* , */) {
      const top = frames[frames.length - 1];
      if (top?.array) top.index++;
      else if (top) top.expectKey = true;
    }
  }
  return { escapedKey };
}

function scanPath(text: string, frames: readonly ScanFrame[]): (string | number)[] {
  return frames.map((frame) => {
    if (frame.array) return frame.index;
    try {
      return String(JSON.parse(text.slice(frame.keyStart, frame.keyEnd)));
    } catch {
      return text.slice(frame.keyStart + 1, frame.keyEnd - 1);
    }
  });
}

// A node of the forbidden-key walk: its parent and its key there, so that a path is built only for
// the one refusal, never copied per node (copying made the walk quadratic in the nesting depth).
interface WalkNode {
  value: object;
  parent: WalkNode | undefined;
  key: string | number;
}

function walkPath(node: WalkNode | undefined, last: string): (string | number)[] {
  const path: (string | number)[] = [last];
  for (let current = node; current?.parent; current = current.parent) path.push(current.key);
  return path.reverse();
}

/** Walks parsed JSON without recursion for forbidden keys, however they were escaped in the text. */
function checkForbiddenKeys(root: unknown): void {
  if (root === null || typeof root !== "object") return;
  const stack: WalkNode[] = [{ value: root, parent: undefined, key: "" }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const value = node.value;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        if (item !== null && typeof item === "object") stack.push({ value: item, parent: node, key: i });
      }
      continue;
    }
    for (const key of Object.keys(value)) {
      if (FORBIDDEN_KEYS.has(key)) {
        throw new ProtocolError("forbidden_key", `key ${JSON.stringify(key)} is not accepted`, {
          path: walkPath(node, key),
        });
      }
      const item = (value as Record<string, unknown>)[key];
      if (item !== null && typeof item === "object") stack.push({ value: item, parent: node, key });
    }
  }
}

/**
 * Bytes to JSON with the pre-schema checks. Exported for messages that have no schema of their own.
 * @param maxBytes refuse anything larger. @unit bytes
 */
export function parseWireJson(data: Uint8Array | string, maxBytes: number): unknown {
  const size = typeof data === "string" ? Buffer.byteLength(data, "utf8") : data.byteLength;
  if (size > maxBytes) {
    throw new ProtocolError("payload_too_large", `payload of ${size} bytes exceeds the limit of ${maxBytes}`);
  }
  let text: string;
  if (typeof data === "string") {
    text = data;
  } else {
    try {
      text = utf8Decoder.decode(data);
    } catch (cause) {
      throw new ProtocolError("invalid_utf8", "payload is not valid UTF-8", { cause });
    }
  }
  const { escapedKey } = checkJsonDepth(text);
  let value: unknown;
  try {
    value = parseJsonText(text, escapedKey);
  } catch (cause) {
    if (cause instanceof RangeError)
      throw new ProtocolError("too_deep", "JSON nesting too deep to parse", { cause });
    throw new ProtocolError("invalid_json", `payload is not JSON: ${(cause as Error).message}`, { cause });
  }
  checkForbiddenKeys(value);
  return value;
}

/** How {@link createCodec} validates one kind of message. */
export interface CodecOptions<Output> {
  /** Code for a schema failure. */
  invalidCode: ProtocolErrorCode;
  /** Name of the message in error texts, e.g. `"fork spec"`. */
  what: string;
  /** Largest payload accepted, in either direction. @unit bytes */
  maxBytes: number;
  /** Refuse a `v` above {@link PROTOCOL_VERSION} with `unsupported_version` before the schema runs. */
  versioned: boolean;
  /** Puts back parts of the raw JSON that must survive byte for byte (zod rebuilds objects and reorders keys). */
  restoreRaw?: (raw: unknown, parsed: Output) => Output;
}

type Issue = z.ZodError["issues"][number];

// The issue to report. A union that failed (e.g. `content`: string or blocks) reports the branch that
// got furthest, so the path names the bad field (`content.0.type`) rather than the union.
function reportedIssue(issue: Issue): { path: PropertyKey[]; message: string } {
  let path: PropertyKey[] = [...issue.path];
  let current = issue;
  while (current.code === "invalid_union") {
    let best: Issue | undefined;
    for (const branch of current.errors) {
      const first = branch[0];
      if (first && first.path.length > (best?.path.length ?? 0)) best = first;
    }
    if (!best) break;
    path = [...path, ...best.path];
    current = best;
  }
  return { path, message: current.message };
}

function schemaError(code: ProtocolErrorCode, what: string, error: z.ZodError): ProtocolError {
  const first = error.issues[0];
  const issue = first ? reportedIssue(first) : { path: [], message: "schema mismatch" };
  const path = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
  const where = path.length > 0 ? ` at ${path.join(".")}` : "";
  return new ProtocolError(code, `invalid ${what}${where}: ${issue.message}`, { path, cause: error });
}

function checkVersion(raw: unknown, what: string): void {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return;
  const v = (raw as { v?: unknown }).v;
  if (typeof v === "number" && Number.isInteger(v) && v > PROTOCOL_VERSION) {
    throw new ProtocolError(
      "unsupported_version",
      `${what} has protocol version ${v}; this side reads up to ${PROTOCOL_VERSION}`,
      { path: ["v"] },
    );
  }
}

// Parsed JSON to a validated message: version first, then the schema, then the raw parts put back.
function validator<S extends z.ZodType>(
  schema: S,
  options: CodecOptions<z.output<S>>,
): (raw: unknown) => z.output<S> {
  return (raw) => {
    if (options.versioned) checkVersion(raw, options.what);
    const result = schema.safeParse(raw);
    if (!result.success) throw schemaError(options.invalidCode, options.what, result.error);
    return options.restoreRaw ? options.restoreRaw(raw, result.data) : result.data;
  };
}

/**
 * Builds a {@link Codec} for one zod schema.
 *
 * `encode` serialises the value and then runs exactly the checks `decode` runs on those bytes (size,
 * depth, forbidden keys, version, schema), so a sender can never publish what a receiver refuses.
 */
export function createCodec<S extends z.ZodType>(
  schema: S,
  options: CodecOptions<z.output<S>>,
): Codec<z.output<S>, z.input<S>> {
  const validate = validator(schema, options);
  return {
    maxBytes: options.maxBytes,
    decode: (data) => validate(parseWireJson(data, options.maxBytes)),
    encode: (value) => {
      let text: string | undefined;
      try {
        text = JSON.stringify(value);
      } catch (cause) {
        throw new ProtocolError(
          options.invalidCode,
          `${options.what} cannot be serialised as JSON: ${(cause as Error).message}`,
          { cause },
        );
      }
      if (text === undefined) {
        throw new ProtocolError(options.invalidCode, `${options.what} cannot be serialised as JSON`);
      }
      const bytes = utf8Encoder.encode(text);
      validate(parseWireJson(bytes, options.maxBytes));
      return bytes;
    },
  };
}

// The prefix must reach the provider exactly as the parent sent it: keep the raw JSON objects.
function restorePrefix<T extends { params: unknown; reply?: unknown }>(raw: unknown, parsed: T): T {
  const rawPrefix = raw as { params: unknown; reply?: unknown };
  const restored = { ...parsed, params: rawPrefix.params as T["params"] };
  if (rawPrefix.reply !== undefined) restored.reply = rawPrefix.reply as T["reply"];
  return restored;
}

/**
 * A fork spec codec with another size limit, for a deployment whose NATS `max_payload` was raised.
 * The schema's own bounds (e.g. the directive's length) still apply.
 * @param options.maxBytes largest spec accepted. @unit bytes @default MAX_SPEC_BYTES
 */
export function createForkSpecCodec(options: { maxBytes?: number } = {}): Codec<ForkSpec, ForkSpecInput> {
  return createCodec(ForkSpecSchema, {
    invalidCode: "invalid_spec",
    what: "fork spec",
    maxBytes: options.maxBytes ?? MAX_SPEC_BYTES,
    versioned: true,
    restoreRaw: (raw, parsed) => {
      if (parsed.prefix.kind !== "inline") return parsed;
      const rawPrefix = (raw as { prefix: { prefix: unknown } }).prefix.prefix;
      return {
        ...parsed,
        prefix: { kind: "inline" as const, prefix: restorePrefix(rawPrefix, parsed.prefix.prefix) },
      };
    },
  });
}

/** Fork specs: `invalid_spec`, `unsupported_version`, `payload_too_large`, … */
export const forkSpecCodec = createForkSpecCodec();

// Whose run a spec is, and nothing of its conversation (see decodeSpecOwnership).
const ForkSpecOwnershipSchema = ForkSpecSchema.pick({
  v: true,
  run_id: true,
  group_id: true,
  owner_token: true,
}).extend({ prefix: z.object({ kind: z.enum(["inline", "ref", "none"]) }) });

/** The fields of a fork spec that say whose run it is (see {@link decodeSpecOwnership}). */
export type ForkSpecOwnership = z.infer<typeof ForkSpecOwnershipSchema>;

/**
 * Reads only whose run a stored spec is (run id, group, owner token, the prefix's kind), without the
 * rest: a spec's inline conversation may be hundreds of kilobytes, and a daemon that ends a queued run
 * for its owner needs none of it (a 40-run cascade read 40 specs in full at once). The size limit, UTF-8
 * and the version are checked as by every codec; the depth and forbidden-key walks are not needed —
 * the native parser does not recurse (the reader for escaped keys does, and a stack overflow there is
 * `invalid_json`), and only the fields named here are read (the schema strips the rest).
 * Running the spec still needs {@link forkSpecCodec}, which refuses what this does not look at.
 * Throws {@link ProtocolError}.
 */
export function decodeSpecOwnership(data: Uint8Array): ForkSpecOwnership {
  if (data.byteLength > MAX_SPEC_BYTES) {
    throw new ProtocolError(
      "payload_too_large",
      `payload of ${data.byteLength} bytes exceeds the limit of ${MAX_SPEC_BYTES}`,
    );
  }
  let raw: unknown;
  try {
    raw = parseJsonText(utf8Decoder.decode(data));
  } catch (cause) {
    throw new ProtocolError("invalid_json", "fork spec is not UTF-8 JSON", { cause });
  }
  checkVersion(raw, "fork spec");
  const result = ForkSpecOwnershipSchema.safeParse(raw);
  if (!result.success) throw schemaError("invalid_spec", "fork spec", result.error);
  return result.data;
}

/** Stored prefixes in the object store. */
export const forkPrefixCodec = createCodec(ForkPrefixSchema, {
  invalidCode: "invalid_message",
  what: "stored prefix",
  maxBytes: MAX_PREFIX_BYTES,
  versioned: false,
  restoreRaw: restorePrefix,
});

const eventOptions = {
  invalidCode: "invalid_event",
  what: "event",
  maxBytes: MAX_EVENT_BYTES,
  versioned: true,
} as const;

/** Run events. Refuses event types this version does not know; observers use {@link decodeEventLenient}. */
export const forkEventCodec = createCodec(ForkEventSchema, eventOptions);

const validateEvent = validator(ForkEventSchema, eventOptions);
const validateEnvelope = validator(ForkEventEnvelopeSchema, eventOptions);

/** What {@link decodeEventLenient} returns. */
export type LenientForkEvent =
  | {
      /** An event of a type this version knows, fully validated. */
      kind: "event";
      event: ForkEvent;
    }
  | {
      /** A well-formed event of a type added after this version (an additive change): skip it or show it raw. */
      kind: "unknown";
      /** Its `type`. */
      type: string;
      /** The validated common fields; `seq` still counts for contiguity. */
      envelope: ForkEventEnvelope;
      /** The whole event as parsed, unknown fields included. */
      raw: Readonly<Record<string, unknown>>;
    };

/**
 * Decodes an event for an observer, tolerating event types it does not know.
 *
 * A known type is validated in full and a malformed one throws `invalid_event`, exactly as
 * {@link forkEventCodec}. An unknown type with a valid envelope (`v`, `run_id`, `seq`, `attempt`,
 * `ts`, `type`) is returned as `{ kind: "unknown" }` instead of throwing. Pre-checks (size, UTF-8,
 * JSON, depth, forbidden keys) and `unsupported_version` still throw.
 */
export function decodeEventLenient(data: Uint8Array | string): LenientForkEvent {
  const raw = parseWireJson(data, MAX_EVENT_BYTES);
  const type = raw !== null && typeof raw === "object" ? (raw as { type?: unknown }).type : undefined;
  if (isForkEventType(type)) return { kind: "event", event: validateEvent(raw) };
  const envelope = validateEnvelope(raw);
  return { kind: "unknown", type: envelope.type, envelope, raw: raw as Record<string, unknown> };
}

const message = (what: string, maxBytes = MAX_EVENT_BYTES) => ({
  invalidCode: "invalid_message" as const,
  what,
  maxBytes,
  versioned: true,
});

/** Aborts on `agent.fork.<run_id>.abort` and in the run registry. */
export const abortRequestCodec = createCodec(AbortRequestSchema, message("abort request", MAX_CONTROL_BYTES));
/** Steering messages on `agent.fork.<run_id>.steer`. */
export const steerRequestCodec = createCodec(SteerRequestSchema, message("steer request", MAX_CONTROL_BYTES));
/** The running daemon's reply to a steering message. */
export const steerReplyCodec = createCodec(SteerReplySchema, message("steer reply", MAX_CONTROL_BYTES));
/** Entries of the runs KV bucket. */
export const runStateCodec = createCodec(RunStateSchema, message("run state"));
/** Group budgets (`budget.<group_id>` in the runs KV bucket). */
export const groupBudgetCodec = createCodec(GroupBudgetSchema, message("group budget", MAX_CONTROL_BYTES));
export const groupSpendCodec = createCodec(GroupSpendSchema, message("group spend"));
/** Shared call limits (`limit.<scope>` in the daemons KV bucket). */
export const callSlotsCodec = createCodec(CallSlotsSchema, message("call slots"));
/** A Gemini fan-out cache's entry (`gemini_cache.<key id>.<name>` in the daemons KV bucket). */
export const geminiCacheEntryCodec = createCodec(GeminiCacheEntrySchema, message("gemini cache entry"));
/** Entries of the daemons KV bucket. */
export const daemonInfoCodec = createCodec(DaemonInfoSchema, message("daemon info"));
/** The retention lease in the daemons KV bucket. */
export const retentionLeaseCodec = createCodec(RetentionLeaseSchema, message("retention lease"));
/** Presence beats on `agent.presence.<daemon_id>`. */
export const daemonPresenceCodec = createCodec(DaemonPresenceSchema, message("daemon presence"));
/** "Slow down" notices on `agent.provider.throttle`. */
export const providerThrottleCodec = createCodec(
  ProviderThrottleSchema,
  message("provider throttle notice", MAX_CONTROL_BYTES),
);
/** Requests on `agent.fork.<run_id>.permission` (daemon to parent). */
export const permissionRequestCodec = createCodec(PermissionRequestSchema, message("permission request"));
/** Replies to a permission request (parent to daemon). */
export const permissionResponseCodec = createCodec(
  PermissionResponseSchema,
  message("permission response", MAX_CONTROL_BYTES),
);
/** Requests on `agent.toolhost.<host_id>` (daemon to tool host). */
export const toolHostRequestCodec = createCodec(ToolHostRequestSchema, message("tool host request"));
/** Replies of a tool host. */
export const toolHostResponseCodec = createCodec(ToolHostResponseSchema, message("tool host response"));
