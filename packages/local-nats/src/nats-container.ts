// The fallback when no nats-server binary is around: one NATS server with JetStream in a container,
// through @testcontainers/nats (loaded lazily, so the binary path never pays for it).
import { NatsServerUnavailableError, NatsServerUnsupportedError } from "./errors.js";
import type { NatsServerHandle } from "./handle.js";
import { INSTALL_HINT } from "./locate.js";
import { trackStoppable, untrackStoppable } from "./registry.js";
import { ServerLog, type WaitForLogOptions } from "./server-log.js";

/** What the harness needs to start a container. @internal */
export interface NatsContainerSpec {
  name: string;
  image: string;
  config: string;
  args: readonly string[];
  startTimeoutMs: number;
  stopGraceMs: number;
  containerRuntimeDetected: boolean;
}

type Started = Awaited<
  ReturnType<InstanceType<typeof import("@testcontainers/nats").NatsContainer>["start"]>
>;

const CLIENT_PORT = 4222;
const MONITOR_PORT = 8222;
const STORE_DIR = "/data";
const CONFIG_FILE = "/etc/forkd-testing/nats.conf";

/** Removes `--user X` / `--pass X`: NatsContainer always adds them, and harness servers have no auth. */
function withoutAuthArgs(command: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < command.length; i += 1) {
    const arg = command[i];
    if (arg === "--user" || arg === "--pass") i += 1;
    else if (arg !== undefined) out.push(arg);
  }
  return out;
}

/**
 * Starts one NATS server with JetStream in a container.
 * @throws {@link NatsServerUnavailableError} when no container engine answers.
 * @internal
 */
export async function startNatsContainer(spec: NatsContainerSpec): Promise<NatsServerHandle> {
  let NatsContainer: typeof import("@testcontainers/nats").NatsContainer;
  try {
    ({ NatsContainer } = await import("@testcontainers/nats"));
  } catch (cause) {
    throw unavailable(spec, "@testcontainers/nats could not be loaded", cause);
  }

  class NoAuthNatsContainer extends NatsContainer {
    override withCommand(command: string[]): this {
      return super.withCommand(withoutAuthArgs(command));
    }
  }

  const log = new ServerLog();
  const container = new NoAuthNatsContainer(spec.image)
    .withJetStream()
    .withArg("-sd", STORE_DIR)
    .withArg("-m", String(MONITOR_PORT))
    .withArg("-n", spec.name)
    .withStartupTimeout(spec.startTimeoutMs)
    .withLogConsumer((stream) => {
      let rest = "";
      stream.on("data", (chunk: Buffer | string) => {
        const lines = (rest + chunk.toString()).split("\n");
        rest = lines.pop() ?? "";
        for (const line of lines) log.push(line.replace(/\r$/, ""));
      });
    });
  if (spec.config !== "") {
    container
      .withCopyContentToContainer([{ content: spec.config, target: CONFIG_FILE }])
      .withArg("-c", CONFIG_FILE);
  }
  for (const arg of spec.args) container.withArg(arg);

  let started: Started;
  try {
    started = await container.start();
  } catch (cause) {
    throw unavailable(spec, `the ${spec.image} container did not start`, cause);
  }
  return new NatsContainerHandle(spec, started, log);
}

function unavailable(spec: NatsContainerSpec, what: string, cause: unknown): NatsServerUnavailableError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new NatsServerUnavailableError(`${what}: ${reason}. ${INSTALL_HINT}`, {
    binary: "nats-server",
    searchedDirs: [],
    containerRuntimeDetected: spec.containerRuntimeDetected,
    cause,
  });
}

class NatsContainerHandle implements NatsServerHandle {
  readonly kind = "container" as const;
  readonly name: string;
  readonly url: string;
  readonly port: number;
  readonly clusterPort = undefined;
  readonly monitorUrl: string;
  /** The container harness maps no WebSocket port. */
  readonly websocketUrl = undefined;
  readonly storeDir = STORE_DIR;
  readonly pid = undefined;
  readonly #spec: NatsContainerSpec;
  readonly #started: Started;
  readonly #log: ServerLog;
  #stopping: Promise<void> | undefined;

  constructor(spec: NatsContainerSpec, started: Started, log: ServerLog) {
    this.#spec = spec;
    this.#started = started;
    this.#log = log;
    this.name = spec.name;
    const host = started.getHost();
    this.port = started.getMappedPort(CLIENT_PORT);
    this.url = `nats://${host}:${this.port}`;
    this.monitorUrl = `http://${host}:${started.getMappedPort(MONITOR_PORT)}`;
    trackStoppable(this);
  }

  get running(): boolean {
    return this.#stopping === undefined;
  }

  log(lines?: number): string {
    return this.#log.text(lines);
  }

  waitForLog(pattern: string | RegExp, options?: WaitForLogOptions): Promise<string> {
    return this.#log.waitFor(pattern, options);
  }

  /** Stops and removes the container: SIGKILL stops it at once, other signals after the grace period. */
  kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    this.#stopping ??= this.#started
      .stop({ timeout: signal === "SIGKILL" ? 0 : this.#spec.stopGraceMs })
      .then(() => untrackStoppable(this));
    return this.#stopping;
  }

  restart(): Promise<void> {
    return Promise.reject(
      new NatsServerUnsupportedError(
        "restart() needs the nats-server binary (a container's mapped port changes on restart); install nats-server",
      ),
    );
  }

  reload(): Promise<void> {
    return Promise.reject(new NatsServerUnsupportedError("reload() needs the nats-server binary"));
  }

  stop(): Promise<void> {
    return this.kill("SIGTERM");
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}
