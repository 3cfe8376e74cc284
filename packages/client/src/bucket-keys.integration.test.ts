// bucketKeys against a real nats-server: a bucket's keys under a filter, from the stream's list of
// subjects, while the bucket is being rewritten (as heartbeats rewrite the daemons bucket).
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bucketKeys } from "./registry-index.js";
import { ensureForkResources, type ForkResources } from "./resources.js";

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

describe("bucketKeys", () => {
  it("lists the keys a filter matches, one token or the rest, and only those", async () => {
    for (const key of ["d1", "d2", "limit.key.k", "limit.model.m", "retention.lease"])
      await resources.daemons.put(key, "{}");
    expect((await bucketKeys(resources, "daemons", "*")).sort()).toEqual(["d1", "d2"]);
    expect((await bucketKeys(resources, "daemons", "limit.>")).sort()).toEqual([
      "limit.key.k",
      "limit.model.m",
    ]);
    expect(await bucketKeys(resources, "runs", "parent.nobody.*")).toEqual([]);
  });

  it("answers while the keys it lists are rewritten many times a second, each key once", async () => {
    const keys = Array.from({ length: 50 }, (_, i) => `beat.${i}`);
    await Promise.all(keys.map((key) => resources.runs.put(key, "first")));
    let writing = true;
    const writer = (async () => {
      for (let round = 0; writing; round++)
        await Promise.all(keys.map((key) => resources.runs.put(key, String(round))));
    })();
    try {
      for (let read = 0; read < 20; read++) {
        const listed = (await bucketKeys(resources, "runs", "beat.*")).sort();
        expect(listed).toEqual([...keys].sort());
      }
    } finally {
      writing = false;
      await writer;
    }
  });
});
