// One factory turns whatever a model call threw (an SDK error with an HTTP status, an error event
// inside the stream, a reset socket, a timeout, an abort) into an LlmError with a code and `retryable`.
// The SDK's error module alone (the same classes the SDK throws): importing the SDK's index would
// load its whole API surface into every process that classifies an error.
import { APIConnectionError, APIConnectionTimeoutError, APIError } from "@anthropic-ai/sdk/error";
import { LlmError, type LlmErrorCode } from "@forkd/core";
import type { ProviderUsage } from "@forkd/protocol";

/** Codes worth another attempt: the provider or the network was briefly unable, not the request wrong. */
const RETRYABLE_CODES: ReadonlySet<LlmErrorCode> = new Set<LlmErrorCode>([
  "rate_limited",
  "overloaded",
  "server_error",
  "connection",
  "timeout",
  "stream_interrupted",
]);

/** Whether a failure of this code may succeed when tried again. */
export function isRetryableCode(code: LlmErrorCode): boolean {
  return RETRYABLE_CODES.has(code);
}

/** The code of an HTTP error status. */
export function errorCodeForStatus(status: number): LlmErrorCode {
  switch (status) {
    case 400:
    case 422:
      return "invalid_request";
    case 401:
      return "authentication";
    case 403:
      return "permission";
    case 404:
      return "not_found";
    case 408:
      return "timeout";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limited";
    case 529:
      return "overloaded";
    default:
      return status >= 500 && status <= 599 ? "server_error" : "unknown";
  }
}

/** The code of an Anthropic `error.type`, as carried by an `error` event inside a stream. */
export function errorCodeForType(type: string | null | undefined): LlmErrorCode {
  switch (type) {
    case "invalid_request_error":
      return "invalid_request";
    case "authentication_error":
      return "authentication";
    case "permission_error":
      return "permission";
    case "not_found_error":
      return "not_found";
    case "request_too_large":
      return "request_too_large";
    case "rate_limit_error":
      return "rate_limited";
    case "overloaded_error":
      return "overloaded";
    case "api_error":
      return "server_error";
    case "timeout_error":
      return "timeout";
    default:
      return "unknown";
  }
}

/** What was known about the call when it failed. */
export interface FailureContext {
  /** The caller's own signal aborted: the failure is an abort, whatever the SDK made of it. */
  aborted?: boolean;
  /** The client's own timeout fired. */
  timedOut?: boolean;
  /** Output had begun streaming: a retryable failure becomes `stream_interrupted`. */
  outputBegan?: boolean;
  partialUsage?: ProviderUsage | undefined;
  partialText?: string | undefined;
}

/**
 * Classifies what a model call threw. The only place that decides codes and `retryable`.
 *
 * - the caller's abort → `aborted`, never retryable;
 * - an HTTP status → by {@link errorCodeForStatus};
 * - an `error` event in the stream → by its `error.type`;
 * - a timeout → `timeout`; a refused or reset connection → `connection`;
 * - after output began, any retryable failure → `stream_interrupted` (retryable, never replayed here).
 */
export function toLlmError(error: unknown, context: FailureContext = {}): LlmError {
  const partial = { partialUsage: context.partialUsage, partialText: context.partialText };
  if (context.aborted) {
    return new LlmError("aborted", "The model call was aborted.", { ...partial, cause: error });
  }
  const { code, status, message } = context.timedOut
    ? { code: "timeout" as const, status: undefined, message: "The model call timed out." }
    : classify(error);
  if (context.outputBegan && isRetryableCode(code)) {
    return new LlmError(
      "stream_interrupted",
      `The response stream broke after output had begun (${code}: ${message}); the turn was not replayed.`,
      { retryable: true, status, ...partial, cause: error },
    );
  }
  return new LlmError(code, message, {
    retryable: isRetryableCode(code),
    status,
    ...partial,
    cause: error,
  });
}

interface Classification {
  code: LlmErrorCode;
  status: number | undefined;
  message: string;
}

function classify(error: unknown): Classification {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof LlmError) {
    return { code: error.code, status: error.status, message };
  }
  if (error instanceof APIError && typeof error.status === "number") {
    return { code: errorCodeForStatus(error.status), status: error.status, message };
  }
  // An `error` event inside a 200 stream: no status, only the body's `error.type`.
  if (error instanceof APIError && !(error instanceof APIConnectionError) && typeof error.type === "string") {
    return { code: errorCodeForType(error.type), status: undefined, message };
  }
  for (const link of causeChain(error)) {
    const code = typeof link === "object" && link !== null ? (link as { code?: unknown }).code : undefined;
    if (
      link instanceof APIConnectionTimeoutError ||
      code === "ETIMEDOUT" ||
      code === "UND_ERR_CONNECT_TIMEOUT"
    ) {
      return { code: "timeout", status: undefined, message };
    }
    if (
      link instanceof APIConnectionError ||
      (typeof code === "string" && CONNECTION_ERROR_CODES.has(code))
    ) {
      return { code: "connection", status: undefined, message };
    }
    // undici ends a body whose socket closed early with `TypeError: terminated`.
    if (link instanceof TypeError && (link.message === "terminated" || link.message === "fetch failed")) {
      return { code: "connection", status: undefined, message };
    }
  }
  return { code: "unknown", status: undefined, message };
}

/** Node and undici codes of a connection that failed or broke. */
const CONNECTION_ERROR_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
]);

/** The error and its causes, outermost first, stopping at cycles and after a few links. */
function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  let link: unknown = error;
  while (link !== undefined && link !== null && chain.length < 8 && !chain.includes(link)) {
    chain.push(link);
    link = typeof link === "object" ? (link as { cause?: unknown }).cause : undefined;
  }
  return chain;
}
