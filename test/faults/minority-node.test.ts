// One NATS node of three cut from the other two, its processes and its clients' connections up — a
// partition made with relays on every route (test/harness/cluster-partition.ts). The majority side
// carries on: a run held by a daemon on the cut node is taken over and completes, runs no tool
// twice, and new forks run. The minority side gets clear errors — a parent's fork is refused with
// `publish_failed`, the daemon says JetStream is not storing and stops its model stream — and loses
// nothing acknowledged. Healed, both sides go on by themselves.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClientError, NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import { daemonPresenceCodec, type ForkPrefix } from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { loadFixture, type NatsServerHandle, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { type PartitionableCluster, startPartitionableCluster } from "../harness/cluster-partition.js";
import { type DaemonProcess, spawnDaemon, stopDaemons } from "../harness/daemons.js";
import { contiguousLog } from "../harness/event-log.js";

let partitionable: PartitionableCluster;
let sim: Sim;
let workspace: string;
let prefix: ForkPrefix;
const connections: NatsConnection[] = [];
const parents: NatsForkSubagent[] = [];
const daemons: DaemonProcess[] = [];

beforeAll(async () => {
  partitionable = await startPartitionableCluster();
  sim = await startSim();
  workspace = await mkdtemp(join(tmpdir(), "forkd-minority-"));
  const fixture = await loadFixture("4k");
  prefix = createForkPrefix(fixture.request, fixture.response);
});

afterAll(async () => {
  await stopDaemons(daemons);
  for (const parent of parents) await parent.close();
  for (const nc of connections) await nc.close();
  await sim?.close();
  await partitionable?.stop();
  if (workspace) await rm(workspace, { recursive: true, force: true });
});

async function parentOn(urls: readonly string[]): Promise<{ nc: NatsConnection; forks: NatsForkSubagent }> {
  const nc = await connect({ servers: [...urls] });
  connections.push(nc);
  // Creating R3 streams on a fresh cluster can outlast the client's 5 s request timeout on a loaded
  // machine (seen with four fault suites at once): that is setup, not what this test is about.
  for (let tries = 1; ; tries++) {
    try {
      const forks = await NatsForkSubagent.create(nc);
      parents.push(forks);
      return { nc, forks };
    } catch (error) {
      if (!(error instanceof ClientError && error.code === "infrastructure") || tries >= 3) throw error;
    }
  }
}

/**
 * A node to cut that leads nothing forkd uses: not the meta leader, and any stream, bucket or the
 * daemons' consumer it leads is handed to another node first (a leader step-down; the new leader is
 * the step-down's pick, so it is asked again until the leader is elsewhere). A cut leader is another
 * case, see docs/failure-behaviour.md.
 */
async function quietNode(nc: NatsConnection, forks: NatsForkSubagent): Promise<NatsServerHandle> {
  const { cluster } = partitionable;
  const meta = await cluster.metaLeader();
  const node = cluster.nodes.find((candidate) => candidate !== meta)!;
  const { subjects } = forks.resources;
  const jsm = forks.resources.jsm;
  const leaderOf = async (stream: string, consumer?: string) => {
    const info = consumer ? await jsm.consumers.info(stream, consumer) : await jsm.streams.info(stream);
    return info.cluster?.leader;
  };
  // A group between leaders (just created, or after a step-down) answers "JetStream system temporarily
  // unavailable" or names none: wait for its leader rather than read one moment's answer.
  const electedLeaderOf = (stream: string, consumer?: string) =>
    waitFor(async () => (await leaderOf(stream, consumer)) || undefined, {
      timeoutMs: 15_000,
      message: `a leader of ${consumer ?? stream}`,
    });
  const groups: [string, string?][] = [
    [subjects.streams.specs],
    [subjects.streams.events],
    [subjects.bucketStreams.runs],
    [subjects.bucketStreams.daemons],
    [subjects.bucketStreams.prefixes],
    [subjects.streams.specs, subjects.specsConsumer],
  ];
  for (const [stream, consumer] of groups) {
    while ((await electedLeaderOf(stream, consumer)) === node.name) {
      const api = consumer
        ? `$JS.API.CONSUMER.LEADER.STEPDOWN.${stream}.${consumer}`
        : `$JS.API.STREAM.LEADER.STEPDOWN.${stream}`;
      await nc.request(api, undefined, { timeout: 5_000 });
    }
  }
  return node;
}

describe("one NATS node of three cut from the others", () => {
  it("the majority carries on, the minority gets clear errors, nothing acknowledged is lost", async () => {
    // Where the test was when it failed, for a timeout that names no line.
    let step = "setting up";
    onTestFailed(() => console.error(`minority-node test failed while: ${step}`));
    const { cluster } = partitionable;
    const setup = await parentOn(cluster.urls);
    const cutNode = await quietNode(setup.nc, setup.forks);
    const majorityUrls = cluster.nodes.filter((node) => node !== cutNode).map((node) => node.url);
    const majority = await parentOn(majorityUrls);
    const minority = await parentOn([cutNode.url]);
    const ledger = join(workspace, "minority-ledger.txt");
    await writeFile(ledger, "");

    // The run starts on the only daemon there is, the one on the node about to be cut.
    const cutDaemon = await spawnDaemon({
      id: "minority-1",
      natsUrls: [cutNode.url],
      simUrl: sim.url,
      workspace,
    });
    daemons.push(cutDaemon);
    const held = majority.forks.fork({
      prefix,
      parent: { agent_id: "parent-majority" },
      directive: [
        "Record, then write slowly.",
        `@sim tool Bash {"command":"echo minority >> ${ledger}"}`,
        "@sim turn",
        "@sim tps 20",
        "@sim text 400",
      ].join("\n"),
    });
    let sawResult = false;
    for await (const event of held.events()) {
      if (event.type === "tool.result") sawResult = true;
      if (sawResult && event.type === "llm.delta") break;
    }
    const majorityDaemon = await spawnDaemon({
      id: "majority-1",
      natsUrls: majorityUrls,
      simUrl: sim.url,
      workspace,
    });
    daemons.push(majorityDaemon);
    // The majority's daemon must have heard the cut one hold the run before the cut.
    const beats = majority.nc.subscribe(majority.forks.resources.subjects.presence("minority-1"));
    for await (const message of beats) {
      if (daemonPresenceCodec.decode(message.data).runs.length > 0) break;
    }
    beats.unsubscribe();

    step = "cutting the node";
    partitionable.isolate(cutNode);
    const cutAt = Date.now();

    // Majority: the held run moves and completes, its tool run once; a new fork runs too. (Made once
    // the run has moved, after the cut daemon's last pull request expired: a spec handed to that
    // request would wait for ack_wait, see docs/failure-behaviour.md.)
    step = "waiting for the run to move";
    let takenOverAfterMs = Number.NaN;
    for await (const event of held.events()) {
      if (event.type !== "accepted" || event.attempt !== 2) continue;
      // When the new attempt was accepted, by its own timestamp (same host): the reader that sees it
      // may itself have lost seconds to a consumer placed on the cut node.
      takenOverAfterMs = event.ts - cutAt;
      break;
    }
    step = "waiting for the majority's runs to complete";
    const fresh = majority.forks.fork({
      prefix,
      parent: { agent_id: "parent-majority" },
      directive: "A fork made during the partition.\n@sim text 20",
    });
    expect((await held.result()).status).toBe("completed");
    expect((await fresh.result()).status).toBe("completed");
    const heldLog = await contiguousLog(majority.forks.resources, held.runId);
    const takeover = heldLog.findIndex((event) => event.type === "accepted" && event.attempt === 2);
    expect(heldLog[takeover]).toMatchObject({ daemon_id: "majority-1", resumed: true });
    expect(await readFile(ledger, "utf8")).toBe("minority\n");

    // Minority: a parent's fork is refused clearly, not left hanging.
    step = "waiting for the minority parent's refusal";
    const refused = minority.forks.fork({
      prefix,
      parent: { agent_id: "parent-minority" },
      directive: "A fork from the cut side.\n@sim text 20",
    });
    const refusal = await refused.published().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(ClientError);
    expect((refusal as ClientError).code).toBe("publish_failed");
    // The cut daemon says so. (That it then stops its model stream, 7.0 to 7.1 s after the cut in runs
    // of this test alone, is not asserted here: in a loaded whole-suite run it once had not within the
    // test's time. The quorum-loss test asserts the stop.)
    step = "waiting for the cut daemon to say it cannot store";
    await cutDaemon.waitForLog((line) => String(line.msg).startsWith("JetStream is not storing"), 20_000);
    console.info(`minority node cut: the run moved ${takenOverAfterMs} ms after the cut`);

    // Healed: the minority's parent forks again by itself (its node catches up within seconds), and
    // the held run's log is what it was: the cut daemon, fenced, added nothing.
    step = "healing, then forking from the minority side again";
    partitionable.heal({ reset: true });
    await partitionable.cluster.waitForJetStream({ timeoutMs: 90_000 }); // a loaded CI machine once took over 30 s
    // The cut node agrees on the meta leader again; its streams may still be catching up for a moment,
    // and until then the parent's fork is refused as before: it tries again, paced.
    let again: ReturnType<NatsForkSubagent["fork"]> | undefined;
    for (let tries = 1; again === undefined; tries++) {
      const attempt = minority.forks.fork({
        prefix,
        parent: { agent_id: "parent-minority" },
        directive: "A fork from the healed side.\n@sim text 20",
      });
      const refusedAgain = await attempt.published().then(
        () => false,
        (error: unknown) => error instanceof ClientError && error.code === "publish_failed",
      );
      if (!refusedAgain) again = attempt;
      else {
        expect(tries).toBeLessThan(30);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    expect((await again.result()).status).toBe("completed");
    const after = await contiguousLog(majority.forks.resources, held.runId);
    expect(after).toEqual(heldLog);
  }, 240_000);
});
