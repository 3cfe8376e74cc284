// Errors in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`, with the API's wording.
import { SimError } from "../errors.js";
import type { Exchange } from "../exchange.js";

/** A refusal of an OpenAI-API request. */
export class OpenAiApiError extends SimError {
  readonly code = "api_error_response" as const;
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly param: string | null = null,
    readonly errorCode: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** `invalid_request_error` (400), as the API words a malformed request. */
export function badRequest(
  message: string,
  param: string | null = null,
  code: string | null = null,
): OpenAiApiError {
  return new OpenAiApiError(400, message, "invalid_request_error", param, code);
}

/** Sends `error` as the API does. */
export function sendOpenAiError(ex: Exchange, error: OpenAiApiError): void {
  const { res, entry } = ex;
  entry.status = error.status;
  entry.errorMessage = error.message;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify({
    error: { message: error.message, type: error.type, param: error.param, code: error.errorCode },
  });
  res.writeHead(error.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...error.headers,
  });
  res.end(text);
}
