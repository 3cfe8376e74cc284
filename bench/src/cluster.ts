// The benchmark cluster: one nats-server (loopback), the simulator (in this process, or in its own
// with startClusterWithSimProcess), N daemons running in this process, and the parent's own NATS
// connection; plus an observer that sees every run's events.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsForkSubagent, type NatsForkSubagentOptions } from "@forkd/client";
import type { RunningDaemon } from "@forkd/daemon";
import { AnthropicLlmClient } from "@forkd/llm";
import { type ForkEvent, forkSubjects, isTerminalEvent } from "@forkd/protocol";
import { type LatencyOptions, type Sim, startSim } from "@forkd/sim";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import {
  type DaemonProcess,
  type SpawnDaemonOptions,
  spawnDaemon,
  startSimDaemon,
} from "../../test/harness/daemons.js";
import { SimProcess, type SimProcessEvents } from "./sim-process.js";
import { now } from "./stats.js";

/** The API key every daemon and the parent use: one cache scope, as one Anthropic workspace. */
export const SIM_API_KEY = "sk-forkd-bench";

/** Options of {@link startCluster}. */
export interface ClusterOptions {
  /** Daemons started in this process. @default 1 */
  daemons?: number;
  /** Runs at once per daemon. @default 16 */
  concurrency?: number;
  /** Simulator latency. @default no latency */
  latency?: LatencyOptions;
  /** @unit ms @default 30000 */
  ackWaitMs?: number;
  /** @unit ms @default 5000 */
  heartbeatMs?: number;
  /** @default "off" */
  bash?: "off" | "read-only" | "full";
  /** Simulator log entries kept in memory (bodies are ~190 kB at 48k tokens). @default 0 */
  simLogLimit?: number;
}

/** What a cluster needs of its simulator: where it listens, and how to stop it. */
export interface SimEndpoint {
  readonly url: string;
  close(): Promise<void>;
}

/** A running benchmark cluster; `S` is its simulator (in this process by default). */
export interface Cluster<S extends SimEndpoint = Sim> {
  readonly server: NatsServerHandle;
  readonly sim: S;
  readonly workspace: string;
  readonly daemons: RunningDaemon[];
  /** The parent's connection, named `bench-parent` (so `/connz` can tell it apart). */
  readonly nc: NatsConnection;
  readonly watch: EventWatch;
  /** A subagent on the parent's connection. */
  subagent(options?: NatsForkSubagentOptions): Promise<NatsForkSubagent>;
  /** Starts one more in-process daemon. */
  addDaemon(id?: string): Promise<RunningDaemon>;
  /** Starts a daemon process (`packages/daemon/bin/forkd-daemon`, the launcher a user gets) on this cluster; killed by {@link stop}. */
  spawnDaemon(
    id: string,
    options?: Omit<SpawnDaemonOptions, "id" | "natsUrls" | "simUrl" | "workspace">,
  ): Promise<DaemonProcess>;
  stop(): Promise<void>;
}

/** An LLM client for the simulator, without retries (a retry would hide a failure in the figures). */
export function simLlm(sim: SimEndpoint, apiKey = SIM_API_KEY): AnthropicLlmClient {
  return new AnthropicLlmClient({ baseURL: sim.url, apiKey, retry: { maxRetries: 0 } });
}

/** Starts nats-server, the simulator (in this process) and the daemons; stop everything with {@link Cluster.stop}. */
export function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  return buildCluster(options, () =>
    startSim({ latency: options.latency, logLimit: options.simLogLimit ?? 0 }),
  );
}

/**
 * The same cluster with the simulator in a process of its own (bench/src/sim-process.ts), so that
 * the provider's CPU is not spent on the measured process's event loop; `simEvents` are the
 * simulator events the benchmark listens to (each costs an IPC message), and `simNiceness` the
 * simulator process's niceness (see `SimProcess.start`).
 */
export function startClusterWithSimProcess(
  options: Omit<ClusterOptions, "simLogLimit"> & {
    simEvents?: (keyof SimProcessEvents)[];
    simNiceness?: number;
  },
): Promise<Cluster<SimProcess>> {
  return buildCluster(options, () =>
    SimProcess.start({ latency: options.latency, events: options.simEvents ?? [] }, options.simNiceness),
  );
}

async function buildCluster<S extends SimEndpoint>(
  options: ClusterOptions,
  startSimulator: () => Promise<S>,
): Promise<Cluster<S>> {
  const workspace = await mkdtemp(join(tmpdir(), "forkd-bench-"));
  await writeFile(join(workspace, "README.md"), "forkd benchmark workspace\n");
  const server = await startNatsServer({ name: "forkd-bench" });
  const sim = await startSimulator().catch(async (error: unknown) => {
    await server.stop();
    throw error;
  });
  const daemons: RunningDaemon[] = [];
  let started = 0;
  const addDaemon = async (id = `bench-d${++started}`): Promise<RunningDaemon> => {
    const daemon = await startSimDaemon({
      id,
      natsUrl: server.url,
      simUrl: sim.url,
      apiKey: SIM_API_KEY,
      workspace,
      config: {
        concurrency: options.concurrency ?? 16,
        ackWaitMs: options.ackWaitMs ?? 30_000,
        heartbeatMs: options.heartbeatMs ?? 5_000,
        tools: { bash: options.bash ?? "off" },
        logLevel: "silent",
      },
    });
    daemons.push(daemon);
    return daemon;
  };
  const processes: DaemonProcess[] = [];
  // As the README's parent and forkd's own (CLI, proxy, MCP server) connect: without a stack trace
  // captured per request.
  const nc = await connect({ servers: server.url, name: "bench-parent", noAsyncTraces: true });
  const watch = await EventWatch.start(server.url);
  const subagents: NatsForkSubagent[] = [];
  try {
    for (let i = 0; i < (options.daemons ?? 1); i++) await addDaemon();
  } catch (error) {
    await Promise.allSettled(daemons.map((d) => d.stop({ graceMs: 0 })));
    await watch.close();
    await nc.close();
    await sim.close();
    await server.stop();
    throw error;
  }
  return {
    server,
    sim,
    workspace,
    daemons,
    nc,
    watch,
    addDaemon,
    async spawnDaemon(id, spawnOptions = {}) {
      const daemon = await spawnDaemon({
        id,
        natsUrls: [server.url],
        simUrl: sim.url,
        workspace,
        ...(options.ackWaitMs === undefined ? {} : { ackWaitMs: options.ackWaitMs }),
        ...spawnOptions,
        extraEnv: { ANTHROPIC_API_KEY: SIM_API_KEY, ...spawnOptions.extraEnv },
      });
      processes.push(daemon);
      return daemon;
    },
    async subagent(subagentOptions = {}) {
      const subagent = await NatsForkSubagent.create(nc, {
        ...(options.ackWaitMs === undefined ? {} : { ackWaitMs: options.ackWaitMs }),
        ...subagentOptions,
      });
      subagents.push(subagent);
      return subagent;
    },
    async stop() {
      for (const subagent of subagents) await subagent.close();
      await Promise.allSettled(daemons.map((d) => d.stop({ graceMs: 0 })));
      await Promise.allSettled(processes.map((d) => d.kill("SIGKILL")));
      await watch.close();
      await nc.close().catch(() => undefined);
      await sim.close();
      await server.stop();
      await rm(workspace, { recursive: true, force: true });
    },
  };
}

/** An event as the observer saw it, with the time it arrived here. */
export interface WatchedEvent {
  event: ForkEvent;
  /** @unit ms since epoch (high resolution, {@link now}) */
  at: number;
}

/**
 * Sees every run's events as they are published (a core subscription on `agent.fork.*.events`, on
 * its own connection), so a benchmark can wait for runs to end without opening one JetStream
 * consumer per run. Only for measuring: a parent follows its runs with `handle.events()`.
 */
export class EventWatch {
  /** The observer's own connection (subscribe here to watch other subjects without loading the parent's). */
  readonly nc: NatsConnection;
  readonly #subscription: Subscription;
  readonly #terminal = new Map<string, WatchedEvent>();
  readonly #waiters = new Map<string, ((watched: WatchedEvent) => void)[]>();
  readonly #listeners = new Set<(watched: WatchedEvent) => void>();

  private constructor(nc: NatsConnection) {
    this.nc = nc;
    const decoder = new TextDecoder();
    this.#subscription = nc.subscribe(forkSubjects().allEvents, {
      callback: (error, message) => {
        if (error) return;
        const at = now();
        let event: ForkEvent;
        try {
          event = JSON.parse(decoder.decode(message.data)) as ForkEvent;
        } catch {
          return;
        }
        const watched = { event, at };
        for (const listener of this.#listeners) listener(watched);
        if (!isTerminalEvent(event)) return;
        this.#terminal.set(event.run_id, watched);
        for (const resolve of this.#waiters.get(event.run_id) ?? []) resolve(watched);
        this.#waiters.delete(event.run_id);
      },
    });
  }

  static async start(url: string): Promise<EventWatch> {
    const nc = await connect({ servers: url, name: "bench-observer" });
    const watch = new EventWatch(nc);
    await nc.flush(); // the subscription is registered before anything is forked
    return watch;
  }

  /** Terminal events seen so far. */
  get terminalCount(): number {
    return this.#terminal.size;
  }

  /** Calls `listener` for every event; returns the unsubscribe function. */
  onEvent(listener: (watched: WatchedEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves with the run's terminal event (at once if it was already seen). */
  terminal(runId: string): Promise<WatchedEvent> {
    const seen = this.#terminal.get(runId);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => {
      const waiters = this.#waiters.get(runId) ?? [];
      waiters.push(resolve);
      this.#waiters.set(runId, waiters);
    });
  }

  async close(): Promise<void> {
    this.#subscription.unsubscribe();
    await this.nc.close();
  }
}

/** Rejects with a clear message when `promise` takes longer than `ms`; the benchmark then crashes. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: not done within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
