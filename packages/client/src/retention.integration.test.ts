// The retention sweep against a real nats-server: a finished run whose spec is still in the work queue
// (its daemon's ack was lost) keeps its log and entry until that spec leaves, so that the spec's next
// delivery finds the ended log instead of running the run again.
import { emptyUsageTotals, forkEventCodec, queuedRunState, runStateCodec } from "@forkd/protocol";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lastLoggedEvent } from "./event-log.js";
import { ensureForkResources, type ForkResources } from "./resources.js";
import { sweepFinishedRuns } from "./retention.js";
import { createRunEntry, getRunState } from "./run-registry.js";

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
