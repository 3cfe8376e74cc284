// Fault tests with real processes on a three-node NATS cluster: a daemon SIGKILLed in the middle of
// a run, and a NATS node SIGKILLed while several forks run. Nothing may be lost or doubled.
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import type { ForkPrefix } from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { loadFixture, type NatsClusterHandle, startNatsCluster, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DaemonProcess, spawnDaemon, stopDaemons } from "../harness/daemons.js";
import { contiguousLog } from "../harness/event-log.js";

const ACK_WAIT_MS = 2_000;
let cluster: NatsClusterHandle;
let sim: Sim;
let nc: NatsConnection;
let forks: NatsForkSubagent;
let workspace: string;
let prefix: ForkPrefix;
const daemons = new Set<DaemonProcess>();

async function daemon(
  id: string,
  drainGraceMs = 30_000,
  extraEnv: Record<string, string> = {},
): Promise<DaemonProcess> {
  const process = await spawnDaemon({
    drainGraceMs,
    extraEnv,
    id,
    natsUrls: cluster.urls,
    simUrl: sim.url,
    workspace,
    ackWaitMs: ACK_WAIT_MS,
    concurrency: 4,
    heartbeatMs: 500,
  });
  daemons.add(process);
  return process;
}

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "forkd-failover-"));
  const fixture = await loadFixture("4k");
  prefix = createForkPrefix(fixture.request, fixture.response);
  cluster = await startNatsCluster({ nodes: 3 });
  sim = await startSim();
  nc = await connect({ servers: [...cluster.urls], maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  forks = await NatsForkSubagent.create(nc, { ackWaitMs: ACK_WAIT_MS });
});

afterEach(async () => {
  await stopDaemons(daemons);
  daemons.clear();
});

afterAll(async () => {
  await stopDaemons(daemons);
  await forks?.close();
  await nc?.close();
  await sim?.close();
  await cluster?.stop();
  await rm(workspace, { recursive: true, force: true });
});

describe("a daemon killed with SIGKILL in the middle of a run", () => {
  it("the run completes on another daemon: no gap, no duplicate, no recorded tool run twice", async () => {
    const ledger = join(workspace, "ledger.txt");
    await writeFile(ledger, "");
    const first = await daemon("victim-1");
    const handle = forks.fork({
      prefix,
      parent: { agent_id: "parent-failover" },
      directive: [
        "Count, then write slowly.",
        `@sim tool Bash {"command":"echo ran >> ${ledger}"}`,
        "@sim turn",
        "@sim tps 40",
        "@sim text 120",
      ].join("\n"),
    });
    // Kill it once the tool's result is in the log and the second turn is streaming.
    let sawResult = false;
    for await (const event of handle.events()) {
      if (event.type === "tool.result") sawResult = true;
      if (sawResult && event.type === "llm.delta") break;
    }
    const killedAt = Date.now();
    await first.kill("SIGKILL");
    await daemon("survivor-2");
    const outcome = await handle.result();
    expect(outcome.status).toBe("completed");
    expect(Date.now() - killedAt).toBeLessThan(ACK_WAIT_MS + 10_000);

    const events = await contiguousLog(forks.resources, handle.runId);
    const accepted = events.filter((event) => event.type === "accepted");
    expect(accepted.map((event) => event.type === "accepted" && event.daemon_id)).toEqual([
      "victim-1",
      "survivor-2",
    ]);
    expect(accepted[1]).toMatchObject({ resumed: true, attempt: 2 });
    expect(events.filter((event) => event.type === "tool.result")).toHaveLength(1);
    expect(readFileSync(ledger, "utf8")).toBe("ran\n");
    expect(events.at(-1)).toMatchObject({ type: "completed", attempt: 2 });
  });

  it("drain hands unfinished work to another daemon", async () => {
    const draining = await daemon("drainer-1", 300);
    const handle = forks.fork({
      prefix,
      parent: { agent_id: "parent-drain" },
      directive: "Write slowly.\n@sim tps 20\n@sim text 100",
    });
    for await (const event of handle.events()) if (event.type === "llm.delta") break;
    const taker = await daemon("taker-2");
    // SIGTERM drains; with a grace shorter than the run, the run is handed over.
    const drained = draining.kill("SIGTERM");
    const outcome = await handle.result();
    await drained;
    expect(outcome.status).toBe("completed");
    const events = await contiguousLog(forks.resources, handle.runId);
    const accepted = events.filter((event) => event.type === "accepted");
    expect(accepted.map((event) => event.type === "accepted" && event.daemon_id)).toEqual([
      "drainer-1",
      taker.id,
    ]);
    expect(await draining.exited).toBe(0);
  });
});

describe("a daemon paused past ack_wait (a long GC, a frozen VM, a partition)", () => {
  it("is fenced when it wakes: it publishes nothing more, and the run completes once, on the new claim", async () => {
    const sleeper = await daemon("sleeper-1");
    const handle = forks.fork({
      prefix,
      parent: { agent_id: "parent-fence" },
      directive: "Write slowly.\n@sim tps 20\n@sim text 80",
    });
    for await (const event of handle.events()) if (event.type === "llm.delta") break;
    sleeper.child.kill("SIGSTOP");
    try {
      await daemon("waker-2");
      // The spec is redelivered after ack_wait and claimed again.
      for await (const event of handle.events()) if (event.type === "accepted" && event.attempt === 2) break;
    } finally {
      sleeper.child.kill("SIGCONT");
    }
    // Awake again, the first daemon tries to go on publishing its stream: the fence stops it.
    await sleeper.waitForLog((line) => line.msg === "claim lost to another attempt: publishing nothing more");
    const outcome = await handle.result();
    expect(outcome.status).toBe("completed");
    const events = await contiguousLog(forks.resources, handle.runId);
    const takeover = events.findIndex((event) => event.type === "accepted" && event.attempt === 2);
    expect(events.slice(takeover).every((event) => event.attempt === 2)).toBe(true);
    expect(events.filter((event) => event.type === "completed")).toHaveLength(1);
  });
});

describe("a spec whose daemons keep dying", () => {
  it("ends its run as failed once max_deliver is exhausted, visibly", async () => {
    // A prefix of its own, so that its consumer is created with max_deliver 2.
    const env = { FORKD_PREFIX: "mdx", FORKD_MAX_DELIVER: "2" };
    const mdx = await NatsForkSubagent.create(nc, { prefix: "mdx", ackWaitMs: ACK_WAIT_MS, maxDeliver: 2 });
    try {
      const handle = mdx.fork({
        prefix,
        parent: { agent_id: "parent-max-deliver" },
        directive: "Write very slowly.\n@sim tps 5\n@sim text 200",
      });
      for (const attempt of [1, 2]) {
        const doomed = await daemon(`doomed-${attempt}`, 30_000, env);
        for await (const event of handle.events())
          if (event.type === "accepted" && event.attempt === attempt) break;
        await doomed.kill("SIGKILL");
      }
      // A healthy daemon receives the consumer's MAX_DELIVERIES advisory and ends the run.
      await daemon("witness-3", 30_000, env);
      const outcome = await handle.result();
      expect(outcome).toMatchObject({ status: "failed", error: { code: "max_deliver_exceeded" } });
      // The registry is written right after the terminal event, and the exhausted spec deleted after
      // that (a crash between them leaves an undeliverable spec, never a run without its end): no
      // event marks either, so poll briefly.
      await waitFor(async () => (await mdx.state(handle.runId))?.status === "failed");
      const specs = mdx.resources.subjects.streams.specs;
      await waitFor(async () => (await mdx.resources.jsm.streams.info(specs)).state.messages === 0);
    } finally {
      await mdx.close();
    }
  });
});

describe("a NATS node killed with SIGKILL while forks run", () => {
  it("loses nothing: every fork completes with a contiguous log", async () => {
    await daemon("node-loss-a");
    await daemon("node-loss-b");
    const handles = Array.from({ length: 6 }, (_, i) =>
      forks.fork({
        prefix,
        parent: { agent_id: "parent-node-loss" },
        directive: `Fork ${i} under node loss.\n@sim tps 100\n@sim text 150`,
      }),
    );
    for await (const event of handles[0]!.events()) if (event.type === "llm.delta") break;
    // Kill a node that leads no stream: the R3 streams keep their quorum and their leaders. Where one
    // is free, also not the meta leader, so that the JetStream API (consumer creation, the readers')
    // needs no election either.
    const leaders = new Set(
      await Promise.all(
        [forks.resources.subjects.streams.specs, forks.resources.subjects.streams.events].map((stream) =>
          cluster.streamLeader(stream),
        ),
      ),
    );
    const metaLeader = await cluster.metaLeader();
    const candidates = cluster.nodes.filter((node) => !leaders.has(node));
    const victim = candidates.find((node) => node !== metaLeader) ?? candidates[0]!;
    await victim.kill("SIGKILL");
    const outcomes = await Promise.all(handles.map((handle) => handle.result()));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(6).fill("completed"));
    // Read while the node is still down (nats-server 2.9 may place a new reader's consumer on the
    // dead node; the reader then reads with message gets), and again once it is back.
    for (const handle of handles) {
      const events = await contiguousLog(forks.resources, handle.runId);
      expect(events.at(-1)?.type).toBe("completed");
    }
    await victim.restart();
    for (const handle of handles) {
      const events = await contiguousLog(forks.resources, handle.runId);
      expect(events.at(-1)?.type).toBe("completed");
    }
  });
});
