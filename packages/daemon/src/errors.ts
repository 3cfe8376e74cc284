// Errors of the daemon. Those that end a run are published in its `failed` event.
import { ForkdError } from "@forkd/protocol";

/** Why the daemon, or one of its runs, failed. */
export type DaemonErrorCode =
  | "invalid_config"
  | "nats_unavailable"
  | "publish_failed"
  | "fenced"
  /** A first delivery's claim, which its run went ahead of, was not stored (`callAheadOfClaim`). */
  | "claim_refused"
  | "run_ended"
  | "event_too_large"
  | "model_not_allowed"
  | "prefix_unavailable"
  /** The spec asks for a provider API this daemon has no client for, or one its prefix was not sent to. */
  | "provider_unavailable"
  | "max_deliver_exceeded"
  | "deadline_exceeded"
  | "timeout"
  | "llm_failed"
  | "worktree_failed"
  | "internal";

/** A daemon failure with a wire form (code, message, retryable). */
export class DaemonError extends ForkdError<DaemonErrorCode> {
  override readonly name = "DaemonError";
  readonly code: DaemonErrorCode;
  readonly retryable: boolean;

  constructor(
    code: DaemonErrorCode,
    message: string,
    options: { retryable?: boolean; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}
