// Errors of the parent side of forkd over NATS.
import { ForkdError } from "@forkd/protocol";

/** Why a client operation failed. */
export type ClientErrorCode =
  | "infrastructure"
  | "publish_failed"
  | "prefix_upload_failed"
  | "prefix_invalid"
  | "run_not_found"
  | "spec_refused"
  | "aborted"
  | "closed"
  | "tool_host"
  | "run_not_running"
  | "steer_refused";

/** A failure of the client library itself (not of a run: a run's failure is a {@link ForkOutcome}). */
export class ClientError extends ForkdError<ClientErrorCode> {
  override readonly name = "ClientError";
  readonly code: ClientErrorCode;
  readonly retryable: boolean;

  constructor(
    code: ClientErrorCode,
    message: string,
    options: { retryable?: boolean; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}
