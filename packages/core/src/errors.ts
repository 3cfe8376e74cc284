// The errors of @forkd/core: one base class, one subclass per kind of failure, each with a string
// literal `code`, structured fields and a serialisable wire form (a `failed` event carries it).
import { ForkdError } from "@forkd/protocol";

/** Why a core operation failed. String literals so callers can `switch` exhaustively. */
export type CoreErrorCode =
  | "recursion_guard"
  | "invalid_prefix"
  | "invalid_pricing"
  | "invalid_fork_params"
  | "invalid_event_log"
  | "invalid_notification"
  | "timeout"
  | "workspace_unavailable"
  | "internal";

/** Base class of every error @forkd/core throws. */
export abstract class CoreError extends ForkdError<CoreErrorCode> {
  /** Whether the same operation may succeed if tried again unchanged. */
  readonly retryable: boolean;

  protected constructor(message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.retryable = options.retryable ?? false;
  }
}

/** Which of the recursion guard's two checks refused a fork. */
export type RecursionGuardCheck = "query_source" | "history_marker";

/**
 * A fork asked for by an agent that is itself a fork. Never retryable: a fork must do its work with
 * its own tools. {@link RecursionGuardError.toolResultText} is what the model is told.
 */
export class RecursionGuardError extends CoreError {
  override readonly name = "RecursionGuardError";
  readonly code = "recursion_guard" as const;
  readonly check: RecursionGuardCheck;
  /** The query source that was refused (check `query_source`). */
  readonly querySource: string | undefined;
  /** Run id written in the directive block found in the history (check `history_marker`). */
  readonly forkRunId: string | undefined;

  constructor(
    check: RecursionGuardCheck,
    message: string,
    options: { querySource?: string; forkRunId?: string; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.check = check;
    this.querySource = options.querySource;
    this.forkRunId = options.forkRunId;
  }

  /** The `tool_result` text given to a model whose fork call was refused. */
  get toolResultText(): string {
    return (
      `Fork refused: ${this.message} ` +
      "You are already running as a fork and cannot start forks of your own. " +
      "Do this part of the work yourself with your other tools, then give your report."
    );
  }
}

/** The parent's request or reply cannot be forked from (not a Messages API request, or not JSON). */
export class InvalidPrefixError extends CoreError {
  override readonly name = "InvalidPrefixError";
  readonly code = "invalid_prefix" as const;
  /** Path of the offending field, e.g. `["messages", 3, "content"]`. */
  readonly path: (string | number)[];

  constructor(message: string, options: { path?: (string | number)[]; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.path = options.path ?? [];
  }
}

/** A price file (`FORKD_PRICES`) that cannot be read or holds a row that is not two prices. */
export class InvalidPricingError extends CoreError {
  override readonly name = "InvalidPricingError";
  readonly code = "invalid_pricing" as const;

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
  }
}

/** {@link ForkParams} that cannot start a run. Thrown synchronously by `fork()`. */
export class InvalidForkParamsError extends CoreError {
  override readonly name = "InvalidForkParamsError";
  readonly code = "invalid_fork_params" as const;
  /** The offending parameter, e.g. `"directive"`. */
  readonly field: string;

  constructor(field: string, message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.field = field;
  }
}

/** An event log that cannot be resumed from (a gap, an event of another run, a run that already ended). */
export class EventLogError extends CoreError {
  override readonly name = "EventLogError";
  readonly code = "invalid_event_log" as const;
  /** Seq of the offending event, when one is at fault. */
  readonly seq: number | undefined;

  constructor(message: string, options: { seq?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.seq = options.seq;
  }
}

/** Text that is not a `<task-notification>` envelope. */
export class NotificationParseError extends CoreError {
  override readonly name = "NotificationParseError";
  readonly code = "invalid_notification" as const;

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
  }
}

/** A run hit its wall-clock limit (`limits.timeout_ms` or the spec's deadline). */
export class RunTimeoutError extends CoreError {
  override readonly name = "RunTimeoutError";
  readonly code = "timeout" as const;
  /** The limit that was hit. @unit ms */
  readonly timeoutMs: number;

  constructor(timeoutMs: number, message = `run exceeded its time limit of ${timeoutMs} ms`) {
    super(message, { retryable: false });
    this.timeoutMs = timeoutMs;
  }
}

/** A run asked for isolation (a git worktree) that this host cannot provide. */
export class WorkspaceError extends CoreError {
  override readonly name = "WorkspaceError";
  readonly code = "workspace_unavailable" as const;

  constructor(message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, options);
  }
}

/** A bug or an unexpected throw from injected code (a dispatcher, a callback). */
export class InternalError extends CoreError {
  override readonly name = "InternalError";
  readonly code = "internal" as const;

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
  }
}
