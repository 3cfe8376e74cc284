// A cluster-wide limit on concurrent model calls per provider key (#15): four daemon processes, 200
// runs of two parents, `FORKD_CALL_LIMIT_PER_KEY=3`. The simulator's request log is the witness: at
// no instant does it hold more than 3 requests of that key, and the second parent is not starved
// behind the first.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsForkSubagent } from "@forkd/client";
import { type Sim, startSim } from "@forkd/sim";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DaemonProcess, spawnDaemon, stopDaemons } from "../harness/daemons.js";

const LIMIT = 3;
const RUNS = 200;
let server: NatsServerHandle;
let sim: Sim;
let nc: NatsConnection;
let forks: NatsForkSubagent;
let workspace: string;
const daemons = new Set<DaemonProcess>();

/** The most requests of one key the simulator held at once, from its log's arrival and end times. */
function maxConcurrent(entries: { receivedAt: number; endedAt: number }[]): number {
  const edges = entries.flatMap((entry) => [
    { at: entry.receivedAt, delta: 1 },
    { at: entry.endedAt, delta: -1 },
  ]);
  // An end and an arrival at the same instant: the end first (the slot was free again).
  edges.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let now = 0;
  let max = 0;
  for (const edge of edges) {
    now += edge.delta;
    max = Math.max(max, now);
  }
  return max;
}

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "forkd-call-limit-"));
  server = await startNatsServer();
  sim = await startSim({ logLimit: 1_000 });
  nc = await connect({ servers: server.url });
  forks = await NatsForkSubagent.create(nc);
  for (let i = 1; i <= 4; i++) {
    const process = await spawnDaemon({
      id: `limit-${i}`,
      natsUrls: [server.url],
      simUrl: sim.url,
      workspace,
      concurrency: 60,
      extraEnv: { FORKD_CALL_LIMIT_PER_KEY: String(LIMIT), ANTHROPIC_API_KEY: "sk-forkd-limit" },
    });
    daemons.add(process);
  }
});

afterAll(async () => {
  await stopDaemons(daemons);
  await forks?.close();
  await nc?.close();
  await sim?.close();
  await server?.stop();
  await rm(workspace, { recursive: true, force: true });
});

describe("a cluster-wide limit of concurrent model calls per provider key", () => {
  it(`never has more than ${LIMIT} calls of the key in flight across 4 daemons under ${RUNS} runs, fair across parents`, async () => {
    const launch = (parent: string, count: number) =>
      Array.from({ length: count }, (_, i) =>
        forks.fork({
          prefix: null,
          parent: { agent_id: parent },
          directive: `Answer ${parent} ${i}.\n@sim ttft 40\n@sim say ok`,
        }),
      );
    const first = launch("parent-a", RUNS / 2);
    await Promise.all(first.map((handle) => handle.published()));
    const second = launch("parent-b", RUNS / 2);
    const outcomes = await Promise.all([...first, ...second].map((handle) => handle.result()));
    expect(outcomes.every((outcome) => outcome.status === "completed")).toBe(true);

    const calls = sim.requests().filter((entry) => entry.path === "/v1/messages" && entry.status === 200);
    expect(calls).toHaveLength(RUNS);
    expect(new Set(calls.map((entry) => entry.keyId)).size).toBe(1);
    const max = maxConcurrent(calls);
    expect(max).toBeLessThanOrEqual(LIMIT);
    expect(max).toBe(LIMIT); // the limit is used, not only respected

    // Fairness: parent-b, which came after parent-a's 100 runs were queued, does not wait for all of them.
    const order = calls
      .sort((a, b) => a.receivedAt - b.receivedAt)
      .map((entry) => (entry.body.includes("parent-b") ? "b" : "a"));
    expect(order.indexOf("b")).toBeLessThan(order.lastIndexOf("a") - RUNS / 4);
  }, 240_000);
});
