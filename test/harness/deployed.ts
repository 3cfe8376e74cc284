// A nats-server with deploy/nats/accounts.conf (passwords from the environment, as deployed), the
// simulator and a workspace, for tests of what one role can do to another's runs; started in
// beforeAll, stopped in afterAll. Daemons log in as `daemon`, through forkd's own connection.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunningDaemon } from "@forkd/daemon";
import { type Sim, startSim } from "@forkd/sim";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll } from "vitest";
import { applyEnv, passwordEnv, type Role, readRepoFile, TEST_PASSWORDS } from "../deploy/support.js";
import { startSimDaemon } from "./daemons.js";

/** What a test file gets. */
export interface DeployedNats {
  server: NatsServerHandle;
  sim: Sim;
  /** The daemons' workspace (a temp dir, removed afterwards). */
  workspace: string;
  /** A plain connection as `role`, closed with the stack. */
  connectAs(role: Role): Promise<NatsConnection>;
  /** A daemon in this process, logged in as `daemon`; stopped with the stack. */
  startDaemon(id: string): Promise<RunningDaemon>;
}

/** Registers the stack's lifecycle in the current test file and returns its accessor. */
export function useDeployedNats(name: string): () => DeployedNats {
  let stack: DeployedNats | undefined;
  let restoreEnv: (() => void) | undefined;
  const connections: NatsConnection[] = [];
  const daemons: RunningDaemon[] = [];
  beforeAll(async () => {
    restoreEnv = applyEnv(passwordEnv());
    const server = await startNatsServer({ name, config: readRepoFile("deploy/nats/accounts.conf") });
    const sim = await startSim();
    const workspace = await mkdtemp(join(tmpdir(), `forkd-${name}-`));
    stack = {
      server,
      sim,
      workspace,
      connectAs: async (role) => {
        const nc = await connect({
          servers: server.url,
          user: role,
          pass: TEST_PASSWORDS[role],
          reconnect: false,
        });
        connections.push(nc);
        return nc;
      },
      startDaemon: async (id) => {
        const daemon = await startSimDaemon({
          id,
          natsUrl: server.url,
          simUrl: sim.url,
          apiKey: `sk-${name}`,
          workspace,
          config: { nats: { servers: [server.url], user: "daemon", pass: TEST_PASSWORDS.daemon } },
        });
        daemons.push(daemon);
        return daemon;
      },
    };
  });
  afterAll(async () => {
    for (const daemon of daemons) await daemon.stop({ graceMs: 0 }).catch(() => undefined);
    await Promise.allSettled(connections.map((nc) => nc.close()));
    await Promise.allSettled([stack?.sim.close(), stack?.server.stop()]);
    if (stack) await rm(stack.workspace, { recursive: true, force: true });
    restoreEnv?.();
    stack = undefined;
  });
  return () => {
    if (!stack) throw new Error("the deployed stack is only available inside tests (after beforeAll)");
    return stack;
  };
}
