// What a fault test against daemon processes needs around them, started in beforeAll and stopped in
// afterAll: a real nats-server, the simulator, a workspace, and a parent (a NatsForkSubagent) forking
// from the recorded 4k turn.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import type { ForkPrefix } from "@forkd/protocol";
import { type Sim, type SimOptions, startSim } from "@forkd/sim";
import { loadFixture, type NatsServerHandle } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll } from "vitest";
import { type DaemonProcess, type SpawnDaemonOptions, spawnDaemon, stopDaemons } from "./daemons.js";
import { useNatsServer } from "./nats.js";

/** The parent's side of a fault test. */
export interface FaultParent {
  server: NatsServerHandle;
  sim: Sim;
  nc: NatsConnection;
  forks: NatsForkSubagent;
  /** The daemons' workspace (removed afterwards). */
  workspace: string;
  /** The 4k parent turn as a fork prefix. */
  prefix: ForkPrefix;
}

/** Registers the lifecycle in the current test file and returns its accessor. */
export function useFaultParent(name: string, options: { sim?: SimOptions } = {}): () => FaultParent {
  const nats = useNatsServer();
  let parent: FaultParent | undefined;
  beforeAll(async () => {
    const workspace = await mkdtemp(join(tmpdir(), `forkd-${name}-`));
    const fixture = await loadFixture("4k");
    const sim = await startSim(options.sim);
    const nc = await connect({ servers: nats().url });
    parent = {
      server: nats(),
      sim,
      nc,
      forks: await NatsForkSubagent.create(nc),
      workspace,
      prefix: createForkPrefix(fixture.request, fixture.response),
    };
  });
  afterAll(async () => {
    await parent?.forks.close();
    await parent?.nc.close();
    await parent?.sim.close();
    if (parent) await rm(parent.workspace, { recursive: true, force: true });
    parent = undefined;
  });
  return () => {
    if (!parent) throw new Error("the fault parent is only available inside tests (after beforeAll)");
    return parent;
  };
}

/**
 * Daemon processes `ids` on `parent`'s server, simulator and workspace, one after another, started
 * in beforeAll and killed in afterAll (register after {@link useFaultParent}).
 */
export function useFaultDaemons(
  parent: () => FaultParent,
  ids: readonly string[],
  options: Omit<SpawnDaemonOptions, "id" | "natsUrls" | "simUrl" | "workspace"> = {},
): DaemonProcess[] {
  const daemons: DaemonProcess[] = [];
  beforeAll(async () => {
    for (const id of ids) {
      const { server, sim, workspace } = parent();
      daemons.push(await spawnDaemon({ ...options, id, natsUrls: [server.url], simUrl: sim.url, workspace }));
    }
  });
  afterAll(() => stopDaemons(daemons));
  return daemons;
}
