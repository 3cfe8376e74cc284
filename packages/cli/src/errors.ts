// The CLI's errors and exit codes: every failure a user can cause or meet becomes one CliError with
// a string-literal code, and each code has one documented exit code (docs/cli.md).
import { ForkdError } from "@forkd/protocol";

/** Exit codes of every `forkd` command. */
export const EXIT_CODES = {
  /** Success; for `fork`, `watch RUN_ID` and `demo`: every run completed. */
  ok: 0,
  /** A run failed, timed out or was aborted. */
  runFailed: 1,
  /** Bad command line or configuration. */
  usage: 2,
  /** NATS (or its JetStream) cannot be reached, or refuses what forkd needs. */
  natsUnavailable: 3,
  /** The run named on the command line is not known to the cluster. */
  notFound: 4,
  /** The model provider (the Anthropic API or the simulator) failed a call the CLI made itself. */
  provider: 5,
  /** A bug: an error the CLI did not expect. */
  internal: 70,
  /** Interrupted by Ctrl-C (SIGINT) or SIGTERM before the work was done. */
  interrupted: 130,
} as const;

/** Why a command failed. */
export type CliErrorCode =
  | "usage"
  | "config"
  | "nats_unavailable"
  | "not_found"
  | "run_failed"
  | "provider"
  | "interrupted"
  | "internal";

const EXIT_CODE_OF: Record<CliErrorCode, number> = {
  usage: EXIT_CODES.usage,
  config: EXIT_CODES.usage,
  nats_unavailable: EXIT_CODES.natsUnavailable,
  not_found: EXIT_CODES.notFound,
  run_failed: EXIT_CODES.runFailed,
  provider: EXIT_CODES.provider,
  interrupted: EXIT_CODES.interrupted,
  internal: EXIT_CODES.internal,
};

/** A failure reported as one line (`forkd <command>: <message>`) and an exit code. */
export class CliError extends ForkdError<CliErrorCode> {
  override readonly name: string = "CliError";
  readonly code: CliErrorCode;
  readonly retryable = false;
  /** A second line for the user: what to do about it. */
  readonly hint: string | undefined;

  constructor(code: CliErrorCode, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.hint = options.hint;
  }

  /** The process exit code of this error. */
  get exitCode(): number {
    return EXIT_CODE_OF[this.code];
  }
}

/** The command line is wrong: unknown flag, missing value, bad number. Exit 2. */
export class UsageError extends CliError {
  override readonly name = "UsageError";
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super("usage", message, options);
  }
}

/** NATS cannot be reached or lacks JetStream. Exit 3. */
export class NatsUnavailableError extends CliError {
  override readonly name = "NatsUnavailableError";
  readonly servers: readonly string[];
  constructor(message: string, options: { servers: readonly string[]; hint?: string; cause?: unknown }) {
    super("nats_unavailable", message, options);
    this.servers = options.servers;
  }
}

/** Maps anything thrown to a {@link CliError} (unknown errors become `internal`). */
export function toCliError(error: unknown): CliError {
  if (error instanceof CliError) return error;
  const named = error as { name?: string; code?: string; message?: string } | undefined;
  // Errors of other forkd packages that mean "your configuration is wrong".
  if (named?.name === "DaemonConfigError" || named?.name === "SimOptionsError") {
    return new CliError("config", named.message ?? String(error), { cause: error });
  }
  if (named?.name === "FixtureError" || named?.name === "InvalidPrefixError") {
    return new CliError("config", named.message ?? String(error), { cause: error });
  }
  if (named?.name === "NatsServerUnavailableError") {
    return new NatsUnavailableError(named.message ?? String(error), { servers: [], cause: error });
  }
  if (named?.name === "LlmError") {
    return new CliError("provider", `the model provider failed: ${named.message ?? String(error)}`, {
      cause: error,
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new CliError("internal", message, { cause: error, hint: "unexpected; --verbose shows where" });
}
