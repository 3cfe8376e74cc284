// Retention on a real nats-server. The lease of a stopping daemon: given up for another daemon to
// take, tried again when a request fails (a timeout on a loaded cluster), and logged when it cannot
// be — then it ends at its term. The sweep: a finished run whose spec is still in the work queue (its
// daemon's ack was lost) keeps its log and entry until that spec leaves, so that the spec's next
// delivery finds the ended log instead of running the run again.
import { Writable } from "node:stream";
import {
  ensureForkResources,
  type ForkResources,
  getRunState,
  lastLoggedEvent,
  readRetentionLease,
  sweepFinishedRuns,
} from "@forkd/client";
import { createRunEntry } from "@forkd/client/internal";
import { emptyUsageTotals, forkEventCodec, queuedRunState, runStateCodec } from "@forkd/protocol";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDaemonLogger } from "./logger.js";
import { RELEASE_ATTEMPTS, RetentionSweeper } from "./retention-sweeper.js";

let server: NatsServerHandle;
let nc: NatsConnection;
let resources: ForkResources;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  resources = await ensureForkResources(nc);
});

afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

/** The daemons bucket whose next `failures.reads` reads fail as a request that timed out does. */
function withFailingReads(failures: { reads: number }): ForkResources {
  const real = resources.daemons;
  const daemons = new Proxy(real, {
    get(target, key) {
      const value = Reflect.get(target, key) as unknown;
      if (typeof value !== "function") return value;
      if (key !== "get") return value.bind(target);
      return async (...args: Parameters<ForkResources["daemons"]["get"]>) => {
        if (failures.reads > 0) {
          failures.reads -= 1;
          throw new Error("TIMEOUT (injected)");
        }
        return real.get(...args);
      };
    },
  });
  return { ...resources, daemons };
}

function sweeperOf(daemonId: string, failures: { reads: number }) {
  const warnings: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      warnings.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const sweeper = new RetentionSweeper({
    resources: withFailingReads(failures),
    daemonId,
    retentionMs: 60_000,
    prefixRetentionMs: 60_000,
    logger: createDaemonLogger({ level: "warn", format: "json", daemonId, destination }),
  });
  return { sweeper, warnings };
}

describe("a stopping daemon's retention lease", () => {
  it("is given up even when the release's reads fail all but the last time", async () => {
    const failures = { reads: 0 };
    const { sweeper, warnings } = sweeperOf("lease-retry", failures);
    await sweeper.tick();
    expect((await readRetentionLease(resources))?.holder).toBe("lease-retry");

    failures.reads = RELEASE_ATTEMPTS - 1;
    await sweeper.stop();
    expect(failures.reads).toBe(0);
    expect(await readRetentionLease(resources)).toBeNull();
    expect(warnings).toEqual([]);
  });

  it("is logged, and left to its term, when every try fails", async () => {
    const failures = { reads: 0 };
    const { sweeper, warnings } = sweeperOf("lease-stuck", failures);
    await sweeper.tick();
    const held = await readRetentionLease(resources);
    expect(held?.holder).toBe("lease-stuck");

    failures.reads = RELEASE_ATTEMPTS;
    await sweeper.stop();
    expect(failures.reads).toBe(0);
    // Still held, until its term: no other daemon sweeps meanwhile, so the operator is told.
    expect(await readRetentionLease(resources)).toMatchObject({ holder: "lease-stuck", until: held?.until });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      msg: "could not give the retention lease up; another daemon takes it when its term ends",
      attempts: RELEASE_ATTEMPTS,
      leaseMs: 3 * 6_000,
    });
  });
});

/** A run that ended at time 1: its registry entry and a one-event log (an `aborted` event). */
async function endedRun(runId: string): Promise<void> {
  const queued = queuedRunState({ runId, createdAt: 1, now: 1, parentAgentId: "sweep-parent" });
  await createRunEntry(
    resources,
    runId,
    runStateCodec.encode({ ...queued, status: "aborted", attempt: 1, ended_at: 1, updated_at: 1 }),
  );
  const aborted = forkEventCodec.encode({
    v: 1,
    run_id: runId,
    seq: 1,
    attempt: 1,
    ts: 1,
    type: "aborted",
    reason: "ended long ago",
    usage: emptyUsageTotals(),
  });
  await resources.js.publish(resources.subjects.events(runId), aborted);
}

describe("the retention sweep", () => {
  it("keeps a finished run whose spec is still queued, and removes it once the spec has left", async () => {
    await endedRun("sweep-acked-1");
    await endedRun("sweep-unacked-1");
    // The unacked run's spec is still in the work queue (no daemon here takes it).
    await resources.js.publish(resources.subjects.spec("sweep-unacked-1"), "{}", {
      msgID: "sweep-unacked-1",
    });

    const first = await sweepFinishedRuns(resources, { retentionMs: 0 });
    expect(first).toMatchObject({ runsRemoved: 1, runsKeptQueued: 1 });
    expect(await getRunState(resources, "sweep-acked-1")).toBeNull();
    expect(await lastLoggedEvent(resources, "sweep-acked-1")).toBeNull();
    expect((await getRunState(resources, "sweep-unacked-1"))?.state.status).toBe("aborted");
    expect((await lastLoggedEvent(resources, "sweep-unacked-1"))?.event.type).toBe("aborted");

    // The spec's next delivery found the ended log and acked it: the next sweep removes the run.
    await resources.jsm.streams.purge(resources.subjects.streams.specs, {
      filter: resources.subjects.spec("sweep-unacked-1"),
    });
    const second = await sweepFinishedRuns(resources, { retentionMs: 0 });
    expect(second).toMatchObject({ runsRemoved: 1, runsKeptQueued: 0 });
    expect(await getRunState(resources, "sweep-unacked-1")).toBeNull();
    expect(await lastLoggedEvent(resources, "sweep-unacked-1")).toBeNull();
  });
});
