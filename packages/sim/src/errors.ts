import { ForkdError } from "@forkd/protocol";
/**
 * Errors of `@forkd/sim`. {@link SimError} is the base; {@link SimApiError} is an error that the
 * server turns into an Anthropic-shaped error response; {@link SimOptionsError} rejects bad options.
 */

/** The `error.type` values the Anthropic API uses, with the HTTP status each one goes with. */
export type ApiErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "request_too_large"
  | "rate_limit_error"
  | "api_error"
  | "overloaded_error";

const STATUS_OF: Readonly<Record<ApiErrorType, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

/** The HTTP status Anthropic sends with an error type. */
export function statusOfErrorType(type: ApiErrorType): number {
  return STATUS_OF[type];
}

/** The error type Anthropic sends with an HTTP status (`api_error` for any other 5xx, `invalid_request_error` for other 4xx). */
export function errorTypeOfStatus(status: number): ApiErrorType {
  for (const [type, s] of Object.entries(STATUS_OF)) if (s === status) return type as ApiErrorType;
  return status >= 500 ? "api_error" : "invalid_request_error";
}

/** The JSON body of an Anthropic error response. */
export interface ApiErrorBody {
  type: "error";
  error: { type: ApiErrorType; message: string };
  request_id?: string;
}

/** Builds the JSON body of an Anthropic error response. */
export function apiErrorBody(type: ApiErrorType, message: string, requestId?: string): ApiErrorBody {
  const body: ApiErrorBody = { type: "error", error: { type, message } };
  if (requestId !== undefined) body.request_id = requestId;
  return body;
}

/** String-literal codes of the errors this package throws. */
export type SimErrorCode = "api_error_response" | "invalid_options";

/** Base class of every error `@forkd/sim` throws. */
export abstract class SimError extends ForkdError<SimErrorCode> {
  readonly retryable: boolean = false;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An error that becomes an HTTP error response in Anthropic's shape (`{"type":"error","error":{…}}`). */
export class SimApiError extends SimError {
  readonly code = "api_error_response" as const;
  /** HTTP status of the response. */
  readonly status: number;
  /** Anthropic `error.type`. */
  readonly errorType: ApiErrorType;
  /** Extra response headers (e.g. `retry-after`). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    errorType: ApiErrorType,
    message: string,
    options?: { status?: number; headers?: Record<string, string>; cause?: unknown },
  ) {
    super(message, { cause: options?.cause });
    this.errorType = errorType;
    this.status = options?.status ?? statusOfErrorType(errorType);
    this.headers = options?.headers ?? {};
  }
}

/** Shorthand for a 400 `invalid_request_error`. */
export function invalidRequest(message: string): SimApiError {
  return new SimApiError("invalid_request_error", message);
}

/** `startSim` or the command line was given options that cannot work. */
export class SimOptionsError extends SimError {
  readonly code = "invalid_options" as const;
  /** One line per problem found. */
  readonly issues: readonly string[];
  constructor(issues: readonly string[], options?: { cause?: unknown }) {
    super(`invalid simulator options: ${issues.join("; ")}`, options);
    this.issues = issues;
  }
}
