// The workspace's patch of @nats-io/nats-core (patches/, pnpm-workspace.yaml): a request that got its
// answer releases its timer and mux entry without going through `cancel()`, which built — and threw
// away — an Error with a stack trace for every completed request (bench/README.md, "A sixteenth
// look"). A request that gets no answer still fails as before.
import { createRequire } from "node:module";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// nats-core is a dependency of the transport, not of this package: resolved from there.
const fromTransport = createRequire(createRequire(import.meta.url).resolve("@nats-io/transport-node"));
const { RequestOne } = fromTransport("@nats-io/nats-core/internal") as {
  RequestOne: { prototype: { cancel: (error?: Error) => void } };
};

let server: NatsServerHandle;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url, noAsyncTraces: true });
});

afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

/** Answers every request on `patch.echo` with its own data. */
function echo(): Subscription {
  return nc.subscribe("patch.echo", {
    callback: (_error, message) => {
      message.respond(message.data);
    },
  });
}

/** Calls of `RequestOne.prototype.cancel` while `body` runs. */
async function cancelsDuring(body: () => Promise<void>): Promise<number> {
  const cancel = RequestOne.prototype.cancel;
  let calls = 0;
  RequestOne.prototype.cancel = function (this: unknown, error?: Error) {
    calls += 1;
    return cancel.call(this, error);
  };
  try {
    await body();
  } finally {
    RequestOne.prototype.cancel = cancel;
  }
  return calls;
}

describe("the patched nats-core request", () => {
  it("completes 20 answered requests without cancelling any", async () => {
    const responder = echo();
    try {
      const calls = await cancelsDuring(async () => {
        for (let i = 0; i < 20; i++) {
          const reply = await nc.request("patch.echo", `ping ${i}`, { timeout: 2_000 });
          expect(reply.string()).toBe(`ping ${i}`);
        }
      });
      expect(calls).toBe(0);
    } finally {
      responder.unsubscribe();
    }
  });

  it("still rejects a request nobody answers, and one that times out", async () => {
    await expect(nc.request("patch.nobody", "ping", { timeout: 2_000 })).rejects.toThrow(/no responders/i);
    const silent = nc.subscribe("patch.silent", { callback: () => undefined });
    try {
      await expect(nc.request("patch.silent", "ping", { timeout: 50 })).rejects.toThrow(/timeout/i);
    } finally {
      silent.unsubscribe();
    }
    // The connection's requests are all released: a later one is answered.
    const responder = echo();
    try {
      expect((await nc.request("patch.echo", "again", { timeout: 2_000 })).string()).toBe("again");
    } finally {
      responder.unsubscribe();
    }
  });
});
