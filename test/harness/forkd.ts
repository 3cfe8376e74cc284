// A whole forkd stack for one test file: a real nats-server, the simulator over real HTTP, daemons
// in this process, and a parent's NatsForkSubagent; started in beforeAll, stopped in afterAll.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsForkSubagent } from "@forkd/client";
import type { RunningDaemon } from "@forkd/daemon";
import type { GeminiLlmClient } from "@forkd/llm";
import { type Sim, type SimOptions, startSim } from "@forkd/sim";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll } from "vitest";
import { startSimDaemon } from "./daemons.js";

/** What a test file gets. */
export interface ForkdStack {
  server: NatsServerHandle;
  sim: Sim;
  /** The parent's connection. */
  nc: NatsConnection;
  forks: NatsForkSubagent;
  /** The daemons' workspace (a temp dir, removed afterwards). */
  workspace: string;
  daemons: RunningDaemon[];
  /** The API key every daemon uses (one cache scope, like one Anthropic workspace). */
  apiKey: string;
  /** Starts one more daemon in this process; it is stopped with the stack. */
  startDaemon(id: string, overrides?: Record<string, unknown>): Promise<RunningDaemon>;
}

/** Options of {@link useForkdStack}. */
export interface ForkdStackOptions {
  /** Ids of the daemons started before the first test. @default ["daemon-a"] */
  daemons?: string[];
  sim?: SimOptions;
  /** Daemon configuration overrides (see `loadDaemonConfig`). */
  daemonConfig?: Record<string, unknown>;
  /** Prepares the workspace before the daemons start (e.g. `git init`). */
  prepareWorkspace?: (workspace: string) => Promise<void>;
  apiKey?: string;
  /** Each daemon's Gemini client, made from the simulator and the key (e.g. on the simulator's clock). */
  gemini?: (sim: Sim, apiKey: string) => GeminiLlmClient;
}

/** Registers the stack's lifecycle in the current test file and returns its accessor. */
export function useForkdStack(options: ForkdStackOptions = {}): () => ForkdStack {
  let stack: ForkdStack | undefined;
  beforeAll(async () => {
    const workspace = await mkdtemp(join(tmpdir(), "forkd-e2e-"));
    await options.prepareWorkspace?.(workspace);
    const server = await startNatsServer();
    const sim = await startSim(options.sim);
    const nc = await connect({ servers: server.url });
    const forks = await NatsForkSubagent.create(nc);
    const apiKey = options.apiKey ?? "sk-forkd-e2e";
    const daemons: RunningDaemon[] = [];
    const start = async (id: string, overrides: Record<string, unknown> = {}) => {
      const daemon = await startSimDaemon({
        id,
        natsUrl: server.url,
        simUrl: sim.url,
        apiKey,
        workspace,
        config: { ...options.daemonConfig, ...overrides },
        ...(options.gemini === undefined ? {} : { gemini: options.gemini(sim, apiKey) }),
      });
      daemons.push(daemon);
      return daemon;
    };
    stack = { server, sim, nc, forks, workspace, daemons, apiKey, startDaemon: start };
    for (const id of options.daemons ?? ["daemon-a"]) await start(id);
  });
  afterAll(async () => {
    if (!stack) return;
    for (const daemon of stack.daemons) await daemon.stop({ graceMs: 0 }).catch(() => undefined);
    await stack.forks.close();
    await stack.nc.close();
    await stack.sim.close();
    await stack.server.stop();
    await rm(stack.workspace, { recursive: true, force: true });
    stack = undefined;
  });
  return () => {
    if (!stack) throw new Error("the forkd stack is only available inside tests (after beforeAll)");
    return stack;
  };
}
