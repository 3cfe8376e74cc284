// startNatsCluster: N nats-server processes with JetStream, routed to each other on loopback, ready
// once every node agrees on a JetStream meta leader.
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import {
  INSTALL_HINT,
  locateNatsServer,
  type NatsLocateOptions,
  type NatsServerHandle,
  NatsServerStartError,
  NatsServerUnavailableError,
} from "@forkd/local-nats";
import {
  LOOPBACK,
  makeTempDir,
  NatsProcess,
  type PortReservation,
  reservePort,
  trackStoppable,
  untrackStoppable,
  untrackTempDir,
} from "@forkd/local-nats/internal";
import { fetchJsz, isHealthy } from "./monitor.js";
import { waitFor } from "./wait-for.js";

/** Options of {@link startNatsCluster}. */
export interface StartNatsClusterOptions extends NatsLocateOptions {
  /**
   * How many nodes. Three is the smallest cluster that survives losing a node.
   * @default 3
   */
  nodes?: number;
  /**
   * The cluster's name; nodes are named `<name>-n1`, `<name>-n2`, ….
   * @default "forkd-test-<n>"
   */
  name?: string;
  /**
   * Extra configuration text for every node (accounts, authorization, limits…). The harness writes
   * the `cluster { … }` block itself.
   * @default ""
   */
  config?: string;
  /**
   * Extra command-line arguments for every node.
   * @default []
   */
  args?: readonly string[];
  /**
   * How long the cluster may take to start, including the JetStream meta-leader election; also
   * the default readiness timeout of a node's `restart()`.
   * @default 20_000
   * @unit milliseconds
   */
  startTimeoutMs?: number;
  /**
   * How long `stop()` waits after SIGTERM before SIGKILL.
   * @default 5_000
   * @unit milliseconds
   */
  stopGraceMs?: number;
  /** Aborts the start; every node is killed and the temp dir removed. */
  signal?: AbortSignal;
  /**
   * Where node `from` dials node `to`'s cluster port (`target`, `host:port`): returns the
   * `host:port` to dial instead, e.g. a relay a test can cut to partition the cluster. With it, nodes
   * advertise no route address of their own, so every route between two nodes is one this chose (a
   * gossiped route would go around the relay). Called again for each start attempt.
   * @default every node dials the others' cluster ports directly
   */
  routeVia?: (from: number, to: number, target: string) => Promise<string>;
}

/** A running cluster. Every node is a full {@link NatsServerHandle} (kill, restart, stop). */
export interface NatsClusterHandle extends AsyncDisposable {
  /** The cluster's name (`cluster { name }`). */
  readonly name: string;
  /** The nodes, in start order. */
  readonly nodes: readonly NatsServerHandle[];
  /** Every node's client URL, for a client's `servers` option. Stable across node restarts. */
  readonly urls: readonly string[];
  /**
   * The node that is the JetStream meta leader now, as the running nodes report it.
   * @returns undefined while no leader is elected.
   */
  metaLeader(signal?: AbortSignal): Promise<NatsServerHandle | undefined>;
  /**
   * The node that leads stream `stream` (in account `account`) now, as the running nodes report it.
   * @param account - the stream's account.
   * @default account "$G"
   * @returns undefined when no running node knows a leader for it.
   */
  streamLeader(stream: string, account?: string, signal?: AbortSignal): Promise<NatsServerHandle | undefined>;
  /**
   * Waits until every running node is healthy and agrees on a JetStream meta leader.
   * @param options - deadline and abort signal.
   * @default options.timeoutMs the cluster's startTimeoutMs
   */
  waitForJetStream(options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<void>;
  /** Stops every node and removes the cluster's temp dir. Idempotent. */
  stop(): Promise<void>;
}

let clusters = 0;

/**
 * Whether the node is healthy and knows a JetStream meta leader of a cluster of `size` peers.
 * Polled: nats-server raises no event a client can wait on for this.
 */
async function jetStreamCurrent(node: NatsServerHandle, size: number, signal?: AbortSignal): Promise<string> {
  const jsz = await fetchJsz(node.monitorUrl, "", signal);
  const meta = jsz.meta_cluster;
  if (!meta?.leader || (meta.cluster_size ?? 0) < size) return "";
  return (await isHealthy(node.monitorUrl, signal)) ? meta.leader : "";
}

/** `count` cluster ports, reserved (below the kernel's ephemeral range) until their node stops. */
async function reserveClusterPorts(count: number): Promise<PortReservation[]> {
  const reservations: PortReservation[] = [];
  while (reservations.length < count) reservations.push(await reservePort(LOOPBACK));
  return reservations;
}

/** Routed on purpose: nothing listens on port 1, so a route learnt by gossip is never made. */
const UNREACHABLE_ROUTE = `${LOOPBACK}:1`;

function clusterBlock(name: string, port: number, routes: readonly string[], relayed: boolean): string {
  const list = routes.map((route) => `"nats-route://${route}"`).join(", ");
  const advertise = relayed ? `\n  advertise: "${UNREACHABLE_ROUTE}"` : "";
  return `cluster {\n  name: "${name}"\n  listen: "${LOOPBACK}:${port}"${advertise}\n  routes: [${list}]\n}`;
}

async function routesOf(
  index: number,
  ports: readonly number[],
  options: StartNatsClusterOptions,
): Promise<string[]> {
  const peers = ports.flatMap((port, peer) =>
    peer === index ? [] : [{ peer, target: `${LOOPBACK}:${port}` }],
  );
  const via = options.routeVia;
  if (via === undefined) return peers.map(({ target }) => target);
  return Promise.all(peers.map(({ peer, target }) => via(index, peer, target)));
}

/**
 * Starts a cluster of `nodes` nats-server processes with JetStream on loopback, routed to each
 * other on free cluster ports, and waits until every node is ready and agrees on a JetStream meta
 * leader (so an R3 stream can be created at once). Takes about a second for three nodes.
 *
 * Needs the `nats-server` binary (no container fallback). A node's `kill()` and `restart()` keep its
 * client and cluster ports and its store dir, so a restarted node rejoins and catches up; its
 * `restart()` resolves once it is current with the meta leader again.
 *
 * @param options - size, name, extra configuration, timeouts, where to find the binary.
 * @throws `NatsServerUnavailableError` without the binary; `NatsServerStartError` when a node does
 *   not start or no meta leader is elected in time.
 */
export async function startNatsCluster(options: StartNatsClusterOptions = {}): Promise<NatsClusterHandle> {
  const location = await locateNatsServer(options);
  if (location.kind === "container") {
    throw new NatsServerUnavailableError(
      `startNatsCluster needs the nats-server binary: the container fallback runs single servers only. ${INSTALL_HINT}`,
      {
        binary: "nats-server",
        searchedDirs: [],
        containerRuntimeDetected: location.containerRuntimeDetected,
      },
    );
  }
  clusters += 1;
  const size = options.nodes ?? 3;
  if (!Number.isInteger(size) || size < 1)
    throw new RangeError(`nodes must be a positive integer, got ${size}`);
  const name = options.name ?? `forkd-test-${clusters}`;
  const startTimeoutMs = options.startTimeoutMs ?? 20_000;
  const root = await makeTempDir("cluster");

  // Cluster ports must be known before any node starts (they are the routes); a port taken in the
  // meantime by another process fails that node with "address already in use": pick new ports, retry.
  let nodes: NatsProcess[] = [];
  for (let attempt = 1; ; attempt += 1) {
    const reservations = await reserveClusterPorts(size);
    const ports = reservations.map((reservation) => reservation.port);
    // The first node that fails aborts the others' waits, instead of leaving them to time out.
    const attemptAbort = new AbortController();
    const signal = options.signal
      ? AbortSignal.any([options.signal, attemptAbort.signal])
      : attemptAbort.signal;
    let failure: { reason: unknown } | undefined;
    const results = await Promise.allSettled(
      ports.map(async (port, i) => {
        const dir = join(root, `attempt${attempt}-n${i + 1}`);
        await mkdir(dir);
        const started = NatsProcess.start(
          {
            binary: location.path,
            name: `${name}-n${i + 1}`,
            dir,
            ownsDir: false,
            baseConfig: clusterBlock(
              name,
              port,
              await routesOf(i, ports, options),
              options.routeVia !== undefined,
            ),
            config: options.config ?? "",
            args: options.args ?? [],
            clusterPort: port,
            reservations: [reservations[i]!],
            startTimeoutMs,
            stopGraceMs: options.stopGraceMs ?? 5_000,
            afterReady: async (node, timeoutMs, signal) => {
              await waitFor(() => jetStreamCurrent(node, size, signal), {
                timeoutMs,
                signal,
                message: `${node.name} to be current with the JetStream meta leader`,
              }).catch((cause: unknown) => {
                throw new NatsServerStartError(
                  `${node.name} did not become current with the JetStream meta leader`,
                  {
                    serverName: node.name,
                    log: node.log(200),
                    cause,
                  },
                );
              });
            },
          },
          signal,
        );
        return started.catch((reason: unknown) => {
          failure ??= { reason };
          attemptAbort.abort(reason);
          throw reason;
        });
      }),
    );
    nodes = results.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
    if (failure === undefined) break;
    await Promise.allSettled(nodes.map((node) => node.stop()));
    const portTaken =
      failure.reason instanceof NatsServerStartError && failure.reason.log.includes("address already in use");
    if (!portTaken || attempt >= 3) {
      await rm(root, { recursive: true, force: true });
      untrackTempDir(root);
      throw failure.reason;
    }
  }

  const cluster = new NatsCluster(name, nodes, root, startTimeoutMs);
  trackStoppable(cluster);
  return cluster;
}

class NatsCluster implements NatsClusterHandle {
  readonly name: string;
  readonly nodes: readonly NatsProcess[];
  readonly urls: readonly string[];
  readonly #root: string;
  readonly #timeoutMs: number;
  #stopping: Promise<void> | undefined;

  constructor(name: string, nodes: readonly NatsProcess[], root: string, timeoutMs: number) {
    this.name = name;
    this.nodes = nodes;
    this.urls = nodes.map((node) => node.url);
    this.#root = root;
    this.#timeoutMs = timeoutMs;
  }

  #byName(serverName: string | undefined): NatsProcess | undefined {
    return serverName ? this.nodes.find((node) => node.name === serverName) : undefined;
  }

  async metaLeader(signal?: AbortSignal): Promise<NatsServerHandle | undefined> {
    for (const node of this.nodes.filter((n) => n.running)) {
      const leader = await fetchJsz(node.monitorUrl, "", signal).then(
        (jsz) => jsz.meta_cluster?.leader,
        () => undefined,
      );
      if (leader) return this.#byName(leader);
    }
    return undefined;
  }

  async streamLeader(
    stream: string,
    account = "$G",
    signal?: AbortSignal,
  ): Promise<NatsServerHandle | undefined> {
    for (const node of this.nodes.filter((n) => n.running)) {
      const jsz = await fetchJsz(node.monitorUrl, "accounts=true&streams=true", signal).catch(
        () => undefined,
      );
      const detail = jsz?.account_details
        ?.find((a) => a.name === account)
        ?.stream_detail?.find((s) => s.name === stream);
      const leader = this.#byName(detail?.cluster?.leader);
      if (leader !== undefined) return leader;
    }
    return undefined;
  }

  async waitForJetStream(options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<void> {
    const { timeoutMs = this.#timeoutMs, signal } = options;
    await waitFor(
      async () => {
        const running = this.nodes.filter((node) => node.running);
        const leaders = await Promise.all(
          running.map((node) => jetStreamCurrent(node, this.nodes.length, signal)),
        );
        return leaders.length > 0 && leaders.every((leader) => leader !== "" && leader === leaders[0]);
      },
      {
        timeoutMs,
        message: `cluster ${this.name} to agree on a JetStream meta leader`,
        ...(signal ? { signal } : {}),
      },
    );
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      await Promise.allSettled(this.nodes.map((node) => node.stop()));
      await rm(this.#root, { recursive: true, force: true });
      untrackTempDir(this.#root);
      untrackStoppable(this);
    })();
    return this.#stopping;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}
