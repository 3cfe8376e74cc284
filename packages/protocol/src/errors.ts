// Typed errors for everything that can go wrong between bytes on the wire and a validated message.

/** Why a wire message was rejected. String literals so callers can `switch` exhaustively. */
export type ProtocolErrorCode =
  | "invalid_json"
  | "invalid_utf8"
  | "invalid_message"
  | "invalid_spec"
  | "invalid_event"
  | "unsupported_version"
  | "payload_too_large"
  | "too_deep"
  | "forbidden_key"
  | "invalid_subject_token";

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
export class ProtocolError extends Error {
  override readonly name = "ProtocolError";
  readonly code: ProtocolErrorCode;
  readonly path: (string | number)[];
  readonly retryable = false as const;

  constructor(
    code: ProtocolErrorCode,
    message: string,
    options: { path?: (string | number)[]; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.path = options.path ?? [];
  }

  toJSON(): ProtocolErrorJSON {
    return { name: this.name, code: this.code, message: this.message, path: this.path, retryable: false };
  }
}
