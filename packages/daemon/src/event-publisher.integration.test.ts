// RunEventPublisher's start gate against a real nats-server: a run's first events wait for its first
// model request to be written (the run gives them the next turn of the event loop), in order, and for
// its claim when the run went ahead of it (a refused claim: nothing is stored).
import { ensureForkResources, type ForkResources } from "@forkd/client";
import { readStoredEvents } from "@forkd/client/internal";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunEventPublisher } from "./event-publisher.js";

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

function gated(runId: string, startAfter: Promise<unknown>): RunEventPublisher {
  return new RunEventPublisher({
    js: resources.js,
    subjects: resources.subjects,
    runId,
    attempt: 1,
    position: { lastSeq: 0, lastStreamSeq: 0 },
    secrets: [],
    startAfter,
  });
}

describe("RunEventPublisher's start gate", () => {
  it("stores nothing until the gate opens, then every event published meanwhile, in order", async () => {
    let open!: () => void;
    const writer = gated("gated-run-1", new Promise<void>((resolve) => (open = resolve)));
    const first = writer.publish({ type: "heartbeat", daemon_id: "d", turn: 1 });
    const second = writer.publish({ type: "heartbeat", daemon_id: "d", turn: 2 });
    // Had either been sent (each in a microtask of its own), the server would have stored it before
    // answering this round trip, asked after those microtasks ran.
    await new Promise((resolveTurn) => setImmediate(resolveTurn));
    await nc.flush();
    expect(await readStoredEvents(resources, "gated-run-1")).toEqual([]);
    open();
    expect((await Promise.all([first, second])).map((event) => event.seq)).toEqual([1, 2]);
    const stored = await readStoredEvents(resources, "gated-run-1");
    expect(stored.map((entry) => entry.event.type === "heartbeat" && entry.event.turn)).toEqual([1, 2]);
  });

  it("stores nothing when the gate fails: a run ahead of its claim publishes only once the claim holds", async () => {
    let refuse!: (error: Error) => void;
    const writer = gated("gated-run-2", new Promise<void>((_, reject) => (refuse = reject)));
    expect(writer.fenced).toBe(false);
    const first = writer.publish({ type: "heartbeat", daemon_id: "d", turn: 1 });
    refuse(new Error("the claim was refused"));
    await expect(first).rejects.toMatchObject({ code: "fenced" });
    expect(writer.fenced).toBe(true);
    // Later events too: the attempt owns nothing.
    await expect(writer.publish({ type: "heartbeat", daemon_id: "d", turn: 2 })).rejects.toMatchObject({
      code: "fenced",
    });
    await nc.flush();
    expect(await readStoredEvents(resources, "gated-run-2")).toEqual([]);
  });
});
