// ensureForkResources against a real nats-server, from many connections at once: daemons and parents
// of a cluster that start together all make forkd's streams, consumer, buckets and object store.
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureForkResources } from "./resources.js";

let server: NatsServerHandle;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  server = await startNatsServer();
  for (let i = 0; i < 8; i++) connections.push(await connect({ servers: server.url }));
});

afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await server?.stop();
});

async function deleteAllStreams(): Promise<void> {
  const jsm = await jetstreamManager(connections[0]!);
  for await (const name of jsm.streams.names()) await jsm.streams.delete(name);
}

describe("ensureForkResources", () => {
  it("succeeds on every one of eight connections that make the resources at once, round after round", async () => {
    // Each round a fresh prefix: eight creators race for every stream, the consumer and the buckets.
    // The server can answer the loser of a stream's race "subjects overlap" (10065) rather than "name
    // in use" (10058): nats-server 2.9.10 did in 6 of 400 rounds before the loser looked again, and
    // still in 1 of 300 while only the streams did, not the buckets (so 300 rounds find either lapse
    // nearly always). A lost race never fails a process now.
    const failures: string[] = [];
    for (let round = 0; round < 300; round++) {
      const prefix = `race${round}`;
      const results = await Promise.allSettled(connections.map((nc) => ensureForkResources(nc, { prefix })));
      for (const result of results) {
        if (result.status === "rejected") failures.push(`${prefix}: ${(result.reason as Error).message}`);
      }
      await deleteAllStreams(); // each round's streams reserve their byte limits on the server
    }
    expect(failures).toEqual([]);
  });

  it("still refuses a stream whose subjects another stream, of another name, holds", async () => {
    const jsm = await jetstreamManager(connections[0]!);
    await jsm.streams.add({ name: "SQUATTER", subjects: ["squat.fork.*"] });
    await expect(ensureForkResources(connections[0]!, { prefix: "squat" })).rejects.toThrow(
      /cannot create forkd's JetStream resources: subjects overlap/,
    );
  });
});
