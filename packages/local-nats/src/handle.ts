// The public face of one running NATS server, whatever runs it (a local process or a container).
import type { WaitForLogOptions } from "./server-log.js";

/** Options of {@link NatsServerHandle.restart}. */
export interface RestartOptions {
  /**
   * How long the new process may take to become ready (and, in a cluster, to be current with the
   * JetStream meta leader).
   * @default the timeout the server was started with
   * @unit milliseconds
   */
  timeoutMs?: number;
  /** Aborts the wait for readiness (the process is then killed). */
  signal?: AbortSignal;
}

/**
 * One NATS server with JetStream, listening on 127.0.0.1. Returned by `startNatsServer` and, as
 * `nodes[i]`, by `startNatsCluster`.
 *
 * `url`, `port`, `clusterPort`, `monitorUrl` and `storeDir` stay the same across {@link restart}, so
 * clients reconnect to the same address and JetStream finds its data again; `pid` changes.
 */
export interface NatsServerHandle extends AsyncDisposable {
  /** How the server runs: a local `nats-server` process, or a container. */
  readonly kind: "binary" | "container";
  /** The server's name (`server_name`). Unique within a cluster. */
  readonly name: string;
  /** Client URL, `nats://127.0.0.1:PORT`. */
  readonly url: string;
  /** Client port. */
  readonly port: number;
  /** Cluster (route) port, for a cluster node; undefined for a single server. */
  readonly clusterPort: number | undefined;
  /**
   * WebSocket URL for browsers (`ws://127.0.0.1:PORT`, no TLS), when the server was started with
   * `websocket: true`; undefined otherwise. Stays the same across {@link restart}.
   */
  readonly websocketUrl: string | undefined;
  /** HTTP monitoring URL (`/varz`, `/jsz`, `/healthz`), `http://127.0.0.1:PORT`. */
  readonly monitorUrl: string;
  /**
   * The directory given to `-sd` (JetStream keeps its files in `<storeDir>/jetstream`). For a
   * binary server, a temp dir removed by {@link stop}; for a container, a path inside the container.
   */
  readonly storeDir: string;
  /** The current process id; undefined while not running, and for a container. */
  readonly pid: number | undefined;
  /** Whether the server process is running. */
  readonly running: boolean;
  /**
   * The server's captured log (stdout and stderr, the last 2000 lines, across restarts).
   * @param lines - only the last `lines` lines.
   */
  log(lines?: number): string;
  /**
   * Resolves with the first log line matching `pattern` logged after the call (or already in the
   * buffer, with `includePast`). Event driven: use it to wait for e.g. "JetStream cluster new
   * metadata leader".
   * @throws `WaitForTimeoutError` after `timeoutMs`.
   */
  waitForLog(pattern: string | RegExp, options?: WaitForLogOptions): Promise<string>;
  /**
   * Sends `signal` to the server and resolves once the process has exited. Resolves at once if it
   * is not running. The temp dir is kept, so {@link restart} finds the JetStream data.
   * @param signal - `SIGKILL` simulates a crash; `SIGTERM` / `SIGINT` a clean shutdown.
   * @default signal "SIGKILL"
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /**
   * Starts the server again on the same ports with the same store dir, and waits until it is
   * ready (in a cluster: until it is current with the JetStream meta leader). A running server is
   * first shut down with SIGTERM.
   * @throws `NatsServerStartError` when it does not come back; `NatsServerUnsupportedError` after
   *   {@link stop}, or for a container.
   */
  restart(options?: RestartOptions): Promise<void>;
  /**
   * Replaces the extra configuration text given at start (accounts, permissions, limits) and
   * reloads it (SIGHUP), resolving when the server logs that the reload succeeded.
   * @throws `NatsServerReloadError` when the server rejects the new configuration (it keeps the old one).
   */
  reload(config: string): Promise<void>;
  /**
   * Shuts the server down (SIGTERM, then SIGKILL after a grace period) and removes its temp dir.
   * Idempotent; never throws for a server that is already gone.
   */
  stop(): Promise<void>;
}
