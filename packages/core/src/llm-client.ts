// The one seam between fork semantics and a model provider. The turn loop calls it; @forkd/llm
// implements it on the Anthropic SDK; tests and the in-process fork can use any implementation.
import {
  type AssistantMessage,
  type CacheSafeParams,
  ForkdError,
  type ProviderCacheMissReason,
  type ProviderUsage,
} from "@forkd/protocol";

/** A full Messages API request: the cache-safe params plus what a request needs on top. */
export type LlmRequest = CacheSafeParams & {
  max_tokens: number;
  /**
   * The `anthropic-beta` list to send the request with (the parent's, for a child). Not part of
   * the body: a client sends it as the header.
   */
  betas?: readonly string[];
};

/** What happened while a response streamed. Delivered in order, synchronously from the stream. */
export type LlmStreamEvent =
  /** The first byte of the response arrived: from here the provider has begun answering (and its cache entry is readable). */
  | { type: "response_started"; ttftMs: number; requestId?: string | undefined }
  | { type: "text_delta"; text: string }
  | { type: "thinking_delta"; thinking: string }
  /** A retryable failure happened before any output; the client waits `delayMs` and tries again. */
  | { type: "retry"; attempt: number; delayMs: number; error: LlmErrorCode; status?: number | undefined };

/** One complete model response. */
export interface LlmResponse {
  id: string;
  model: string;
  message: AssistantMessage;
  stop_reason: string | null;
  usage: ProviderUsage;
  /** Time from sending the request to its first byte. @unit ms */
  ttftMs: number;
  /** Time from sending the request to the end of the response. @unit ms */
  durationMs: number;
  /**
   * The provider's `diagnostics.cache_miss_reason`, when the request asked for diagnostics and the
   * provider found where it left the earlier request's prefix. Absent otherwise (also while the
   * provider's comparison is still pending, which it reports as `null`).
   */
  cacheMissReason?: ProviderCacheMissReason;
}

/** Options of one call. */
export interface LlmCallOptions {
  /** Aborts the request, mid-stream included; the promise rejects with an `LlmError` of code `aborted`. */
  signal?: AbortSignal;
  /** Observes the stream. */
  onEvent?: (event: LlmStreamEvent) => void;
}

/** A model provider, seen from the turn loop. */
export interface LlmClient {
  /**
   * Sends `request` exactly as given (no re-rendering, no reordering) and resolves with the full response.
   * Rejects with {@link LlmError}.
   */
  createMessage(request: LlmRequest, options?: LlmCallOptions): Promise<LlmResponse>;
}

/** Why a model call failed. */
export type LlmErrorCode =
  | "aborted"
  | "rate_limited"
  | "overloaded"
  | "server_error"
  | "connection"
  | "timeout"
  | "invalid_request"
  | "authentication"
  | "permission"
  | "not_found"
  | "request_too_large"
  /** The stream broke after output had begun; the turn is not replayed silently (see docs/llm.md). */
  | "stream_interrupted"
  /**
   * The call was never sent: a graceful stop of the run came while it waited for a cluster-wide call
   * slot. The turn loop ends the run stopped, as at a turn boundary.
   */
  | "not_started"
  | "unknown";

/** A failed model call, with whatever usage the provider had already reported. */
export class LlmError extends ForkdError<LlmErrorCode> {
  override readonly name = "LlmError";
  readonly code: LlmErrorCode;
  readonly retryable: boolean;
  readonly status: number | undefined;
  /** Usage reported before the failure (an aborted turn still consumed input). */
  readonly partialUsage: ProviderUsage | undefined;
  /** Text that streamed before the failure. */
  readonly partialText: string | undefined;

  constructor(
    code: LlmErrorCode,
    message: string,
    options: {
      retryable?: boolean;
      status?: number | undefined;
      partialUsage?: ProviderUsage | undefined;
      partialText?: string | undefined;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.status = options.status;
    this.partialUsage = options.partialUsage;
    this.partialText = options.partialText;
  }
}
