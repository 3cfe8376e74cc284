// watchReconnects against a real nats-server: a reconnect is reported, and a stopped watch ends at
// once — its listener leaves the connection then, not at the connection's next status change.
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { watchReconnects } from "./reconnects.js";

let server: NatsServerHandle;

beforeAll(async () => {
  server = await startNatsServer();
});

afterAll(async () => {
  await server?.stop();
});

describe("watchReconnects", () => {
  it("ends as soon as it is stopped, with no status change on the connection", async () => {
    const nc = await connect({ servers: server.url });
    try {
      const watches = Array.from({ length: 20 }, () => watchReconnects(nc, () => undefined));
      for (const watch of watches) watch.stop();
      // A bound for the failure only: a watch that does not end waits for a status that never comes.
      let bound: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([
        Promise.all(watches.map((watch) => watch.ended)).then(() => "ended"),
        new Promise((resolve) => {
          bound = setTimeout(() => resolve("still listening after 5 s"), 5_000);
        }),
      ]);
      clearTimeout(bound);
      expect(outcome).toBe("ended");
    } finally {
      await nc.close();
    }
  });

  it("reports a reconnect", async () => {
    const nc = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 50 });
    try {
      let onReconnect!: () => void;
      const reconnected = new Promise<void>((resolve) => {
        onReconnect = resolve;
      });
      const watch = watchReconnects(nc, () => onReconnect());
      await server.restart();
      await reconnected;
      watch.stop();
      await watch.ended;
    } finally {
      await nc.close();
    }
  });
});
