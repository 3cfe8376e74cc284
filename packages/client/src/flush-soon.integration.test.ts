// flushSoon against a real nats-server: one flush for a turn's subscriptions, sent after them.
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flushSoon } from "./flush-soon.js";

let server: NatsServerHandle;
let nc: NatsConnection;
let other: NatsConnection;
let flushes = 0;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  other = await connect({ servers: server.url });
  const flush = nc.flush.bind(nc);
  nc.flush = () => {
    flushes++;
    return flush();
  };
});

afterAll(async () => {
  await other?.close();
  await nc?.close();
  await server?.stop();
});

describe("flushSoon", () => {
  it("flushes once for a turn's subscriptions, after the last of them", async () => {
    const before = flushes;
    const heard: string[] = [];
    const waits: Promise<void>[] = [];
    for (let i = 0; i < 100; i++) {
      // Each subscribes and then asks for the flush, as a result() does; the first asks before the
      // other 99 subscribe, and still covers them.
      nc.subscribe(`soon.${i}`, {
        callback: (_error, message) => {
          heard.push(message.subject);
        },
      });
      waits.push(flushSoon(nc));
    }
    expect(new Set(waits).size).toBe(1);
    await Promise.all(waits);
    expect(flushes - before).toBe(1);
    // Every subscription is at the server: a message from another connection reaches the last one.
    other.publish("soon.99");
    await other.flush();
    await nc.flush();
    expect(heard).toEqual(["soon.99"]);
  });

  it("a later turn gets a flush of its own", async () => {
    const first = flushSoon(nc);
    await first;
    const before = flushes;
    const second = flushSoon(nc);
    expect(second).not.toBe(first);
    await second;
    expect(flushes - before).toBe(1);
  });
});
