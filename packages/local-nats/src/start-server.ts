// startNatsServer: one NATS server with JetStream on loopback, from the local binary or a container.
import { NatsServerUnsupportedError } from "./errors.js";
import type { NatsServerHandle } from "./handle.js";
import { locateNatsServer, type NatsLocateOptions } from "./locate.js";
import { startNatsContainer } from "./nats-container.js";
import { NatsProcess } from "./nats-process.js";
import { makeTempDir } from "./temp-dirs.js";

/** Options of {@link startNatsServer}. */
export interface StartNatsServerOptions extends NatsLocateOptions {
  /**
   * The server's name (`-n`, `server_name`).
   * @default "forkd-test-<n>"
   */
  name?: string;
  /**
   * Extra nats-server configuration text (accounts, authorization, limits…), appended to the
   * server's config file. It must not set `server_name` or a `jetstream` block (the harness writes
   * them; nats-server rejects duplicates); host and ports are flags and override it. With
   * `accounts`, enable JetStream per account (`jetstream: enabled`).
   * @default ""
   */
  config?: string;
  /**
   * Extra command-line arguments, appended after the harness's own (e.g. `["-DV"]` for traces).
   * @default []
   */
  args?: readonly string[];
  /**
   * How long the server may take to become ready.
   * @default 10_000
   * @unit milliseconds
   */
  startTimeoutMs?: number;
  /**
   * How long {@link NatsServerHandle.stop} waits after SIGTERM before it sends SIGKILL.
   * @default 5_000
   * @unit milliseconds
   */
  stopGraceMs?: number;
  /**
   * The container image, in container mode.
   * @default env `FORKD_TEST_NATS_IMAGE`, else "nats:2.9.10" (the version Debian ships)
   */
  image?: string;
  /**
   * Also serve WebSocket clients (browsers, e.g. the `forkd web` page) on a free loopback port
   * without TLS; its address is {@link NatsServerHandle.websocketUrl}. Binary servers only.
   * @default false
   */
  websocket?: boolean;
  /** Aborts the start; the process is killed and its temp dir removed. */
  signal?: AbortSignal;
}

let started = 0;

/** The default name of the next server. @internal */
export function nextServerName(prefix = "forkd-test"): string {
  started += 1;
  return `${prefix}-${started}`;
}

/**
 * Starts one NATS server with JetStream on 127.0.0.1 and waits until it is ready.
 *
 * With the `nats-server` binary (found on `PATH`, in `/usr/sbin`, or at `NATS_SERVER_BIN`) it runs
 * `nats-server -c <tmpdir>/nats.conf -a 127.0.0.1 -p -1 -m -1 --ports_file_dir <tmpdir>`, where the
 * config file holds `server_name`, `jetstream { store_dir: <tmpdir> }` and your `config` text (so
 * that `reload()` works on 2.9), and is ready once the ports file appears and the log says
 * "Server is ready". The process runs under `setpriv --pdeathsig SIGKILL` where available, so it
 * dies with the test process. Without the binary
 * (or with `FORKD_TEST_NATS=container`) it runs `@testcontainers/nats`, which needs a Docker engine.
 *
 * Every server is tracked: {@link NatsServerHandle.stop} or `stopAllNatsServers()` stop it, and a
 * process 'exit' handler SIGKILLs whatever a crashed run left.
 *
 * @param options - name, extra configuration, timeouts, where to find the binary.
 * @throws `NatsServerUnavailableError` (code `nats_server_unavailable`) when there is neither a
 *   binary nor a container engine; `NatsServerStartError` when the server does not become ready.
 */
export async function startNatsServer(options: StartNatsServerOptions = {}): Promise<NatsServerHandle> {
  const location = await locateNatsServer(options);
  const name = options.name ?? nextServerName();
  const config = options.config ?? "";
  const args = options.args ?? [];
  const startTimeoutMs = options.startTimeoutMs ?? 10_000;
  const stopGraceMs = options.stopGraceMs ?? 5_000;
  if (location.kind === "container") {
    if (options.websocket === true) {
      throw new NatsServerUnsupportedError(
        "websocket: true needs the nats-server binary; the container harness maps no WebSocket port",
      );
    }
    const env = options.env ?? process.env;
    return startNatsContainer({
      name,
      image: options.image ?? (env.FORKD_TEST_NATS_IMAGE || "nats:2.9.10"),
      config,
      args,
      startTimeoutMs,
      stopGraceMs,
      containerRuntimeDetected: location.containerRuntimeDetected,
    });
  }
  const dir = await makeTempDir("server");
  return NatsProcess.start(
    {
      binary: location.path,
      name,
      dir,
      ownsDir: true,
      baseConfig: "",
      config,
      args,
      websocket: options.websocket === true,
      startTimeoutMs,
      stopGraceMs,
    },
    options.signal,
  );
}
