// Vitest lifecycle helpers for the cross-package tests under test/: one NATS server or cluster per
// test file, started in beforeAll and stopped in afterAll (a crashed run is covered by
// @forkd/testing's parent-death guard).
//
// Needs `@forkd/testing` (and, for clients, `@nats-io/transport-node`) resolvable from test/,
// i.e. declared as devDependencies of the root package.json.
import {
  type NatsClusterHandle,
  type NatsServerHandle,
  type StartNatsClusterOptions,
  type StartNatsServerOptions,
  startNatsCluster,
  startNatsServer,
} from "@forkd/testing";
import { afterAll, beforeAll } from "vitest";

/** Returns the resource started in `beforeAll`; throws when called before it has run. */
export type Lazy<T> = () => T;

function lifecycle<T extends { stop(): Promise<void> }>(what: string, start: () => Promise<T>): Lazy<T> {
  let resource: T | undefined;
  beforeAll(async () => {
    resource = await start();
  });
  afterAll(async () => {
    await resource?.stop();
    resource = undefined;
  });
  return () => {
    if (resource === undefined) throw new Error(`${what} is only available inside tests (after beforeAll)`);
    return resource;
  };
}

/**
 * Starts one NATS server with JetStream for the current test file.
 *
 * @example
 * const nats = useNatsServer();
 * it("…", async () => { const nc = await connect({ servers: nats().url }); … });
 */
export function useNatsServer(options?: StartNatsServerOptions): Lazy<NatsServerHandle> {
  return lifecycle("the NATS server", () => startNatsServer(options));
}

/**
 * Starts a JetStream cluster (three nodes by default) for the current test file; the meta leader
 * is elected before the first test runs.
 *
 * @example
 * const cluster = useNatsCluster();
 * it("…", async () => { await cluster().nodes[0]!.kill(); … });
 */
export function useNatsCluster(options?: StartNatsClusterOptions): Lazy<NatsClusterHandle> {
  return lifecycle("the NATS cluster", () => startNatsCluster(options));
}
