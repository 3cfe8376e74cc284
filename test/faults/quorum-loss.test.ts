// Quorum loss: two of three NATS nodes killed while a run streams. JetStream can store nothing. The
// daemon says so (log, `forkd_jetstream_available` 0) and stops the run it cannot record; a parent's
// fork is refused with a clear error instead of hanging; nothing acknowledged is lost. With the nodes
// back the daemon says so again, the run is redelivered and completes with a whole log, and the
// parent forks again — nobody restarted.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClientError, NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import type { ForkEvent, ForkPrefix } from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { freePort, loadFixture, type NatsClusterHandle, startNatsCluster, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DaemonProcess, spawnDaemon, stopDaemons } from "../harness/daemons.js";
import { contiguousLog } from "../harness/event-log.js";

/** Short, so that the run the daemon stopped comes back soon after quorum does (default 30 s). */
const ACK_WAIT_MS = 5_000;

let cluster: NatsClusterHandle;
let sim: Sim;
let workspace: string;
let prefix: ForkPrefix;
let nc: NatsConnection;
let forks: NatsForkSubagent;
const daemons: DaemonProcess[] = [];

beforeAll(async () => {
  cluster = await startNatsCluster({ nodes: 3 });
  sim = await startSim();
  workspace = await mkdtemp(join(tmpdir(), "forkd-quorum-"));
  prefix = createForkPrefix((await loadFixture("4k")).request, (await loadFixture("4k")).response);
  nc = await connect({ servers: [...cluster.urls] });
  forks = await NatsForkSubagent.create(nc, { ackWaitMs: ACK_WAIT_MS });
});

afterAll(async () => {
  await stopDaemons(daemons);
  await forks?.close();
  await nc?.close();
  await sim?.close();
  await cluster?.stop();
  if (workspace) await rm(workspace, { recursive: true, force: true });
});

async function storageGauge(metricsUrl: string): Promise<string | undefined> {
  const text = await (await fetch(metricsUrl)).text();
  return /^forkd_jetstream_available (\S+)$/m.exec(text)?.[1];
}

describe("two of three NATS nodes down", () => {
  it("says so, takes no work it cannot store, loses nothing acknowledged, and resumes with quorum", async () => {
    const ledger = join(workspace, "quorum-ledger.txt");
    await writeFile(ledger, "");
    const metricsPort = await freePort("127.0.0.1");
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    const daemon = await spawnDaemon({
      id: "quorum-1",
      natsUrls: cluster.urls,
      simUrl: sim.url,
      workspace,
      ackWaitMs: ACK_WAIT_MS,
      extraEnv: { FORKD_METRICS_PORT: String(metricsPort), FORKD_METRICS_HOST: "127.0.0.1" },
    });
    daemons.push(daemon);
    const held = forks.fork({
      prefix,
      parent: { agent_id: "parent-quorum" },
      directive: [
        "Record, then write slowly.",
        `@sim tool Bash {"command":"echo quorum >> ${ledger}"}`,
        "@sim turn",
        "@sim tps 20",
        "@sim text 400",
      ].join("\n"),
    });
    const beforeLoss: ForkEvent[] = [];
    let sawResult = false;
    for await (const event of held.events()) {
      beforeLoss.push(event);
      if (event.type === "tool.result") sawResult = true;
      if (sawResult && event.type === "llm.delta") break;
    }
    expect(await storageGauge(metricsUrl)).toBe("1");

    const streamStopped = sim.next("request", {
      filter: (entry) => entry.disconnected && entry.body.includes("Record, then"),
    });
    const [survivor, ...lost] = cluster.nodes;
    await Promise.all(lost.map((node) => node.kill("SIGKILL")));
    const lostAt = Date.now();

    // The daemon says so and stops paying for a stream nobody can record.
    const notStoring = await daemon.waitForLog(
      (line) => String(line.msg).startsWith("JetStream is not storing"),
      30_000,
    );
    expect(await storageGauge(metricsUrl)).toBe("0");
    const stopped = await streamStopped;
    expect(stopped.outputTokensSent).toBeLessThan(400);
    // A parent's fork is refused, clearly, rather than queued where it cannot be stored.
    const refusal = await forks
      .fork({ prefix, parent: { agent_id: "parent-quorum" }, directive: "No quorum.\n@sim text 5" })
      .published()
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refusal).toBeInstanceOf(ClientError);
    expect((refusal as ClientError).code).toBe("publish_failed");
    console.info(
      `quorum loss: the daemon stopped its model stream ${Math.round(stopped.endedAt - lostAt)} ms after the loss; survivor ${survivor!.name}`,
    );

    // Quorum back: the daemon stores again by itself, the run comes back and completes, and what was
    // acknowledged before the loss is still the start of its log.
    await Promise.all(lost.map((node) => node.restart()));
    await cluster.waitForJetStream({ timeoutMs: 60_000 });
    // The whole outcome, so that a failure shows its code.
    expect(await held.result()).toMatchObject({ status: "completed" });
    // The verdict may flap while the nodes elect their leaders; once the run is through, it is back.
    await daemon.waitForLog(
      (line) => line.msg === "JetStream stores again" && Number(line.time) > Number(notStoring.time),
    );
    await waitFor(async () => (await storageGauge(metricsUrl)) === "1", {
      timeoutMs: 30_000,
      message: "forkd_jetstream_available to be 1 again",
    });
    const log = await contiguousLog(forks.resources, held.runId);
    expect(log.slice(0, beforeLoss.length)).toEqual(beforeLoss);
    expect(log.filter((event) => event.type === "completed")).toHaveLength(1);
    expect(await readFile(ledger, "utf8")).toBe("quorum\n");
    const after = forks.fork({
      prefix,
      parent: { agent_id: "parent-quorum" },
      directive: "Quorum again.\n@sim text 5",
    });
    expect((await after.result()).status).toBe("completed");
  }, 240_000);
});
