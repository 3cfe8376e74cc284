// Typed errors of finding and running a local nats-server: one base class, one subclass per failure,
// each with a string-literal code.
import { ForkdError } from "@forkd/protocol";

/** Why finding or running a server failed. String literals so callers can `switch` exhaustively. */
export type LocalNatsErrorCode =
  | "nats_server_unavailable"
  | "nats_server_start_failed"
  | "nats_server_reload_failed"
  | "nats_server_unsupported"
  | "wait_for_timeout";

/** Base class of every error thrown by `@forkd/local-nats`. */
export class LocalNatsError extends ForkdError<LocalNatsErrorCode> {
  override readonly name: string = "LocalNatsError";
  /** What went wrong, stable across releases. */
  readonly code: LocalNatsErrorCode;
  readonly retryable = false;

  /**
   * @param code - the failure's {@link LocalNatsErrorCode}.
   * @param message - a sentence a person can act on.
   * @param options - `cause`: the underlying error, if any.
   */
  constructor(code: LocalNatsErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = code;
  }
}

/**
 * No way to run a NATS server was found: no `nats-server` binary (on the searched path or at the
 * configured location) and no usable container engine, or the requested kind of server (a cluster)
 * needs the binary. The message says how to install one.
 */
export class NatsServerUnavailableError extends LocalNatsError {
  override readonly name = "NatsServerUnavailableError";
  override readonly code = "nats_server_unavailable" as const;
  /** The binary that was looked for: a bare name searched on {@link searchedDirs}, or a path. */
  readonly binary: string;
  /** The directories that were searched for {@link binary}. Empty when `binary` was a path. */
  readonly searchedDirs: readonly string[];
  /** Whether a container engine (Docker socket or `DOCKER_HOST`) was detected. */
  readonly containerRuntimeDetected: boolean;
  /** Each way of getting a server that was tried, in order, and why it gave none. */
  readonly routes: readonly { route: string; outcome: string }[];

  /**
   * @param message - what is missing and how to install it.
   * @param details - what was searched; `cause`: e.g. testcontainers' own failure.
   */
  constructor(
    message: string,
    details: {
      binary: string;
      searchedDirs: readonly string[];
      containerRuntimeDetected: boolean;
      routes?: readonly { route: string; outcome: string }[];
      cause?: unknown;
    },
  ) {
    super("nats_server_unavailable", message, { cause: details.cause });
    this.binary = details.binary;
    this.searchedDirs = details.searchedDirs;
    this.containerRuntimeDetected = details.containerRuntimeDetected;
    this.routes = details.routes ?? [];
  }
}

/**
 * A `nats-server` process did not become ready: it exited, could not be spawned, or did not log
 * "Server is ready" and write its ports file before the timeout. Carries the captured log.
 */
export class NatsServerStartError extends LocalNatsError {
  override readonly name = "NatsServerStartError";
  override readonly code = "nats_server_start_failed" as const;
  /** The server's name (`-n` / `server_name`). */
  readonly serverName: string;
  /** The server's stdout and stderr up to the failure (the last lines only, if it was long). */
  readonly log: string;
  /** The process's exit code, if it exited. */
  readonly exitCode: number | null;
  /** The signal that ended the process, if one did. */
  readonly exitSignal: NodeJS.Signals | null;

  /**
   * @param message - why the start failed; the log is appended by the constructor.
   * @param details - the captured log and how the process ended, if it did.
   */
  constructor(
    message: string,
    details: {
      serverName: string;
      log: string;
      exitCode?: number | null;
      exitSignal?: NodeJS.Signals | null;
      cause?: unknown;
    },
  ) {
    super(
      "nats_server_start_failed",
      `${message}\n--- nats-server ${details.serverName} log ---\n${details.log || "(empty)"}`,
      { cause: details.cause },
    );
    this.serverName = details.serverName;
    this.log = details.log;
    this.exitCode = details.exitCode ?? null;
    this.exitSignal = details.exitSignal ?? null;
  }
}

/** A running server rejected a new configuration on reload; it keeps running with the old one. */
export class NatsServerReloadError extends LocalNatsError {
  override readonly name = "NatsServerReloadError";
  override readonly code = "nats_server_reload_failed" as const;
  /** The server's name. */
  readonly serverName: string;
  /** The server's recent log, ending with its reload error. */
  readonly log: string;

  /**
   * @param message - the server's reload error.
   * @param details - the server's name and recent log.
   */
  constructor(message: string, details: { serverName: string; log: string }) {
    super("nats_server_reload_failed", message);
    this.serverName = details.serverName;
    this.log = details.log;
  }
}

/** The operation is not available for this kind of server (e.g. `restart()` of a container). */
export class NatsServerUnsupportedError extends LocalNatsError {
  override readonly name = "NatsServerUnsupportedError";
  override readonly code = "nats_server_unsupported" as const;

  /** @param message - what is unsupported and what to use instead. */
  constructor(message: string) {
    super("nats_server_unsupported", message);
  }
}

/**
 * A wait did not end before its deadline: a server's log line ({@link NatsServerHandle.waitForLog}), or
 * `@forkd/testing`'s `waitFor` condition.
 */
export class WaitForTimeoutError extends LocalNatsError {
  override readonly name = "WaitForTimeoutError";
  override readonly code = "wait_for_timeout" as const;
  /** How long was waited. @unit milliseconds */
  readonly timeoutMs: number;
  /** How many times the condition was evaluated. */
  readonly attempts: number;

  /**
   * @param message - what was waited for.
   * @param details - the deadline, the number of attempts; `cause`: the condition's last error.
   */
  constructor(message: string, details: { timeoutMs: number; attempts: number; cause?: unknown }) {
    super("wait_for_timeout", message, { cause: details.cause });
    this.timeoutMs = details.timeoutMs;
    this.attempts = details.attempts;
  }
}
