// createRunEntry against a real nats-server: the registry write a dispatch makes twice (the parent's
// `queued` entry, the daemon's claim), in one round trip where KV.create takes two when refused.
import { queuedRunState, runStateCodec } from "@forkd/protocol";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isWrongLastSequence } from "./jetstream-errors.js";
import { ensureForkResources, type ForkResources } from "./resources.js";
import { createRunEntry, getRunState, updateRunState } from "./run-registry.js";

let server: NatsServerHandle;
let nc: NatsConnection;
let observer: NatsConnection;
let resources: ForkResources;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  observer = await connect({ servers: server.url });
  resources = await ensureForkResources(nc);
});

afterAll(async () => {
  await observer?.close();
  await nc?.close();
  await server?.stop();
});

function queuedBytes(runId: string): Uint8Array {
  return runStateCodec.encode(queuedRunState({ runId, createdAt: 1, now: 1, parentAgentId: "p" }));
}

/** Counts the reads of the registry's stream that `action` makes (every get goes to the leader's API). */
async function registryReadsDuring(action: () => Promise<unknown>): Promise<number> {
  const bucketStream = `KV_${resources.subjects.buckets.runs}`;
  let reads = 0;
  const subscription = observer.subscribe(`$JS.API.STREAM.MSG.GET.${bucketStream}`, {
    callback: () => {
      reads++;
    },
  });
  await observer.flush();
  try {
    await action();
    // The action's requests were answered, so the server routed them before this ping's reply.
    await observer.flush();
    return reads;
  } finally {
    subscription.unsubscribe();
  }
}

describe("createRunEntry", () => {
  it("creates an absent entry, and refuses a present one with wrong-last-sequence, without reading it", async () => {
    const revision = await createRunEntry(resources, "run-create-1", queuedBytes("run-create-1"));
    expect((await getRunState(resources, "run-create-1"))?.revision).toBe(revision);

    let refusal: unknown;
    const reads = await registryReadsDuring(async () => {
      refusal = await createRunEntry(resources, "run-create-1", queuedBytes("run-create-1")).catch((e) => e);
    });
    expect(isWrongLastSequence(refusal)).toBe(true);
    expect(reads).toBe(0);
    // KV.create, refused the same way, reads the entry first: the round trip this saves.
    const kvReads = await registryReadsDuring(() =>
      resources.runs.create("run-create-1", queuedBytes("run-create-1")).catch(() => undefined),
    );
    expect(kvReads).toBe(1);
  });

  it("refuses a deleted key too, which updateRunState, the claim's fallback, takes over", async () => {
    await createRunEntry(resources, "run-create-2", queuedBytes("run-create-2"));
    await resources.runs.delete("run-create-2");
    expect(await getRunState(resources, "run-create-2")).toBeNull();
    const refusal = await createRunEntry(resources, "run-create-2", queuedBytes("run-create-2")).catch(
      (e: unknown) => e,
    );
    expect(isWrongLastSequence(refusal)).toBe(true);
    const written = await updateRunState(resources, "run-create-2", () =>
      queuedRunState({ runId: "run-create-2", createdAt: 2, now: 2, parentAgentId: "p" }),
    );
    expect((await getRunState(resources, "run-create-2"))?.revision).toBe(written?.revision);
  });
});
