// Decode and validate in one step. Hostile bytes are refused before the schema runs (size, UTF-8,
// JSON, depth, prototype keys), and every refusal is a ProtocolError with a code and a field path.
import type { z } from "zod";
import {
  AbortRequestSchema,
  PermissionRequestSchema,
  PermissionResponseSchema,
  ToolHostRequestSchema,
  ToolHostResponseSchema,
} from "./control.js";
import { ProtocolError, type ProtocolErrorCode } from "./errors.js";
import { ForkEventSchema } from "./events.js";
import { MAX_EVENT_BYTES, MAX_JSON_DEPTH, MAX_PREFIX_BYTES, MAX_SPEC_BYTES } from "./limits.js";
import { DaemonInfoSchema, RunStateSchema } from "./registry.js";
import { ForkPrefixSchema, ForkSpecSchema, PROTOCOL_VERSION } from "./spec.js";

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

/** Walks parsed JSON without recursion: nesting depth and forbidden keys. */
function checkJsonShape(root: unknown): void {
  const stack: { value: unknown; depth: number; path: (string | number)[] }[] = [
    { value: root, depth: 0, path: [] },
  ];
  while (stack.length > 0) {
    const { value, depth, path } = stack.pop()!;
    if (value === null || typeof value !== "object") continue;
    if (depth >= MAX_JSON_DEPTH) {
      throw new ProtocolError("too_deep", `JSON nesting exceeds ${MAX_JSON_DEPTH} levels`, { path });
    }
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        if (item !== null && typeof item === "object")
          stack.push({ value: item, depth: depth + 1, path: [...path, i] });
      }
      continue;
    }
    for (const key of Object.keys(value)) {
      if (FORBIDDEN_KEYS.has(key)) {
        throw new ProtocolError("forbidden_key", `key ${JSON.stringify(key)} is not accepted`, {
          path: [...path, key],
        });
      }
      const item = (value as Record<string, unknown>)[key];
      if (item !== null && typeof item === "object")
        stack.push({ value: item, depth: depth + 1, path: [...path, key] });
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
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    if (cause instanceof RangeError)
      throw new ProtocolError("too_deep", "JSON nesting too deep to parse", { cause });
    throw new ProtocolError("invalid_json", `payload is not JSON: ${(cause as Error).message}`, { cause });
  }
  checkJsonShape(value);
  return value;
}

interface CodecOptions<Output> {
  /** Code for a schema failure. */
  invalidCode: ProtocolErrorCode;
  what: string;
  maxBytes: number;
  versioned: boolean;
  /** Puts back parts of the raw JSON that must survive byte for byte (zod rebuilds objects and reorders keys). */
  restoreRaw?: (raw: unknown, parsed: Output) => Output;
}

function schemaError(code: ProtocolErrorCode, what: string, error: z.ZodError): ProtocolError {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map((p) => (typeof p === "symbol" ? String(p) : p));
  const where = path.length > 0 ? ` at ${path.join(".")}` : "";
  return new ProtocolError(code, `invalid ${what}${where}: ${issue?.message ?? "schema mismatch"}`, {
    path,
    cause: error,
  });
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

/** Builds a {@link Codec} for one zod schema. */
export function createCodec<S extends z.ZodType>(
  schema: S,
  options: CodecOptions<z.output<S>>,
): Codec<z.output<S>, z.input<S>> {
  const validate = (raw: unknown): z.output<S> => {
    if (options.versioned) checkVersion(raw, options.what);
    const result = schema.safeParse(raw);
    if (!result.success) throw schemaError(options.invalidCode, options.what, result.error);
    return options.restoreRaw ? options.restoreRaw(raw, result.data) : result.data;
  };
  return {
    maxBytes: options.maxBytes,
    decode: (data) => validate(parseWireJson(data, options.maxBytes)),
    encode: (value) => {
      validate(value);
      const bytes = utf8Encoder.encode(JSON.stringify(value));
      if (bytes.byteLength > options.maxBytes) {
        throw new ProtocolError(
          "payload_too_large",
          `${options.what} of ${bytes.byteLength} bytes exceeds the limit of ${options.maxBytes}`,
        );
      }
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

/** Fork specs: `invalid_spec`, `unsupported_version`, `payload_too_large`, … */
export const forkSpecCodec = createCodec(ForkSpecSchema, {
  invalidCode: "invalid_spec",
  what: "fork spec",
  maxBytes: MAX_SPEC_BYTES,
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

/** Stored prefixes in the object store. */
export const forkPrefixCodec = createCodec(ForkPrefixSchema, {
  invalidCode: "invalid_message",
  what: "stored prefix",
  maxBytes: MAX_PREFIX_BYTES,
  versioned: false,
  restoreRaw: restorePrefix,
});

/** Run events. */
export const forkEventCodec = createCodec(ForkEventSchema, {
  invalidCode: "invalid_event",
  what: "event",
  maxBytes: MAX_EVENT_BYTES,
  versioned: true,
});

const message = (what: string) => ({
  invalidCode: "invalid_message" as const,
  what,
  maxBytes: MAX_EVENT_BYTES,
  versioned: true,
});

export const abortRequestCodec = createCodec(AbortRequestSchema, message("abort request"));
export const runStateCodec = createCodec(RunStateSchema, message("run state"));
export const daemonInfoCodec = createCodec(DaemonInfoSchema, message("daemon info"));
export const permissionRequestCodec = createCodec(PermissionRequestSchema, message("permission request"));
export const permissionResponseCodec = createCodec(PermissionResponseSchema, message("permission response"));
export const toolHostRequestCodec = createCodec(ToolHostRequestSchema, message("tool host request"));
export const toolHostResponseCodec = createCodec(ToolHostResponseSchema, message("tool host response"));
