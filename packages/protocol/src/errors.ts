// The base of every error forkd throws, its one conversion to the wire, and the typed errors for
// everything that can go wrong between bytes on the wire and a validated message.
import type { WireError } from "./events.js";

/**
 * Base class of every error a forkd package throws (`ProtocolError`, `CoreError`, `LlmError`,
 * `DaemonError`, `ClientError`, `CliError`, `SimError`, …): a string-literal `code` callers can
 * `switch` on, whether the same operation may succeed if tried again, and the form a `failed` event
 * carries ({@link ForkdError.toWire}).
 */
export abstract class ForkdError<Code extends string = string> extends Error {
  /** What kind of failure this is; stable across releases. */
  abstract readonly code: Code;
  /** Whether the same operation may succeed if tried again unchanged. */
  abstract readonly retryable: boolean;

  /**
   * @param message - a sentence a person can act on.
   * @param options - `cause`: the underlying error. An undefined one is left out, so that an error
   *   without a cause has no `cause` property (and prints none), whoever built it.
   */
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }

  /** The form a `failed` event carries. */
  toWire(): WireError {
    return { code: this.code, message: this.message, retryable: this.retryable };
  }
}

/**
 * The wire form of anything thrown: a {@link ForkdError}'s own, anything else `internal` with its
 * message. The one place an error becomes a `failed` event's `error`.
 */
export function toWireError(error: unknown): WireError {
  if (error instanceof ForkdError) return error.toWire();
  return {
    code: "internal",
    message: error instanceof Error ? error.message : String(error),
    retryable: false,
  };
}

/** Every {@link ProtocolErrorCode}, in the order the codec's checks run. */
export const PROTOCOL_ERROR_CODES = [
  "payload_too_large",
  "invalid_utf8",
  "invalid_json",
  "too_deep",
  "forbidden_key",
  "unsupported_version",
  "invalid_spec",
  "invalid_event",
  "invalid_message",
  "invalid_subject_token",
] as const;

/** Why a wire message was rejected. String literals so callers can `switch` exhaustively. */
export type ProtocolErrorCode = (typeof PROTOCOL_ERROR_CODES)[number];

/** True when `code` is one of {@link PROTOCOL_ERROR_CODES}. */
export function isProtocolErrorCode(code: unknown): code is ProtocolErrorCode {
  return typeof code === "string" && (PROTOCOL_ERROR_CODES as readonly string[]).includes(code);
}

/** The serialisable form of a {@link ProtocolError}, as carried inside a `failed` event. */
export interface ProtocolErrorJSON {
  name: "ProtocolError";
  code: ProtocolErrorCode;
  message: string;
  /** Path of the offending field, e.g. `["prefix", "params", "messages", 3, "role"]`. Empty when the whole payload is at fault. */
  path: (string | number)[];
  retryable: false;
}

/**
 * A message on the wire that cannot be accepted. Never retryable: the same bytes fail the same way.
 */
export class ProtocolError extends ForkdError<ProtocolErrorCode> {
  override readonly name = "ProtocolError";
  readonly code: ProtocolErrorCode;
  readonly path: (string | number)[];
  readonly retryable = false as const;

  constructor(
    code: ProtocolErrorCode,
    message: string,
    options: { path?: (string | number)[]; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.code = code;
    this.path = options.path ?? [];
  }

  override toWire(): WireError {
    return { code: this.code, message: this.message, retryable: false, path: [...this.path] };
  }

  toJSON(): ProtocolErrorJSON {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      path: [...this.path],
      retryable: false,
    };
  }

  /**
   * Rebuilds an error from its {@link ProtocolError.toJSON} form (e.g. read back from a `failed` event).
   * `fromJSON(JSON.parse(JSON.stringify(e))).toJSON()` deep-equals `e.toJSON()`.
   */
  static fromJSON(json: ProtocolErrorJSON): ProtocolError {
    return new ProtocolError(json.code, json.message, { path: [...json.path] });
  }
}
