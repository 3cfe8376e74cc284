// Errors in Google's shape: `{"error": {"code", "message", "status"}}`, with the API's wording and
// its canonical status names (INVALID_ARGUMENT, PERMISSION_DENIED, NOT_FOUND…).
import { SimError } from "../errors.js";
import type { Exchange } from "../exchange.js";

/** The canonical status name of each HTTP status Google's APIs answer with. */
const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  405: "METHOD_NOT_ALLOWED",
  409: "ALREADY_EXISTS",
  413: "INVALID_ARGUMENT",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

/** A refusal of a Gemini API request. */
export class GeminiApiError extends SimError {
  readonly code = "api_error_response" as const;
  /** Google's canonical status name of {@link GeminiApiError.httpStatus}. */
  readonly status: string;
  constructor(
    readonly httpStatus: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = STATUS_NAMES[httpStatus] ?? (httpStatus >= 500 ? "INTERNAL" : "FAILED_PRECONDITION");
  }
}

/** `INVALID_ARGUMENT` (400). */
export function invalidArgument(message: string): GeminiApiError {
  return new GeminiApiError(400, message);
}

/** What the API says of a cache that does not exist, expired, or belongs to another key. */
export function cachedContentNotFound(): GeminiApiError {
  return new GeminiApiError(403, "CachedContent not found (or permission denied)");
}

/** Sends `error` as the API does. */
export function sendGeminiError(ex: Exchange, error: GeminiApiError): void {
  const { res, entry } = ex;
  entry.status = error.httpStatus;
  entry.errorMessage = error.message;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify({
    error: { code: error.httpStatus, message: error.message, status: error.status },
  });
  res.writeHead(error.httpStatus, {
    "content-type": "application/json; charset=UTF-8",
    "content-length": Buffer.byteLength(text),
    ...error.headers,
  });
  res.end(text);
}
