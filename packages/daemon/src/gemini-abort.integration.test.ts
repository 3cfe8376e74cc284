// A Gemini child waiting for another daemon's creation of its fan-out's explicit cache, on a real
// nats-server with two daemons: aborting the run during the wait ends it `aborted` at once and frees
// its slot, with no cache made and no request sent. (That the wait itself, the lock's KV watch, ends
// on the run's signal rather than at the record or the holder's lease is proved where it is visible,
// in gemini-cache-lock.integration.test.ts: the daemon does not wait for an aborted call to return.)
import { createServer, type Socket } from "node:net";
import { NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import { AnthropicLlmClient, GeminiLlmClient } from "@forkd/llm";
import { type Sim, startSim } from "@forkd/sim";
import { loadFixture, type NatsServerHandle, startNatsServer, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDaemonConfig } from "./config.js";
import { createDaemonLogger } from "./logger.js";
import { type RunningDaemon, startDaemon } from "./run-daemon.js";

let server: NatsServerHandle;
let sim: Sim;
let nc: NatsConnection;
let forks: NatsForkSubagent;
const daemons: RunningDaemon[] = [];
// A Gemini endpoint that accepts connections and never answers: the holder's creation never ends.
const sockets = new Set<Socket>();
const stalling = createServer((socket) => {
  sockets.add(socket);
  socket.on("close", () => sockets.delete(socket));
});
const API_KEY = "gemini-abort-wait";

/** A daemon, one run at a time; `gemini` its own client (else one on the simulator). */
async function daemon(id: string, gemini?: GeminiLlmClient): Promise<RunningDaemon> {
  // Both daemons' key scope is the simulator's URL and the key: they share the cache's entry.
  const config = loadDaemonConfig({
    env: {},
    overrides: {
      daemonId: id,
      nats: { servers: [server.url] },
      concurrency: 1,
      heartbeatMs: 1000,
      llm: { geminiApiKey: API_KEY, geminiBaseURL: sim.url },
    },
  });
  const running = await startDaemon(config, {
    logger: createDaemonLogger({ level: "silent", format: "json", daemonId: id }),
    llm: new AnthropicLlmClient({ baseURL: sim.url, apiKey: "sk-unused", retry: { maxRetries: 0 } }),
    ...(gemini === undefined ? {} : { gemini }),
  });
  daemons.push(running);
  return running;
}

beforeAll(async () => {
  server = await startNatsServer();
  sim = await startSim({ port: 0 });
  await new Promise<void>((resolve) => stalling.listen(0, "127.0.0.1", resolve));
  nc = await connect({ servers: server.url });
  forks = await NatsForkSubagent.create(nc);
});

afterAll(async () => {
  for (const running of daemons.splice(0)) await running.stop({ graceMs: 0 }).catch(() => undefined);
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => stalling.close(() => resolve()));
  await forks?.close();
  await nc?.close();
  await sim?.close();
  await server?.stop();
});

describe("a Gemini child waiting for another daemon's cache", () => {
  it("ends `aborted` at once when its run is aborted during the wait", async () => {
    const fixture = await loadFixture("4k");
    const prefix = createForkPrefix(
      { ...(fixture.request as Record<string, unknown>), model: "gemini-2.5-flash" },
      fixture.response,
    );
    const base = { prefix, parent: { agent_id: "gemini-abort" }, provider: { api: "gemini" as const } };
    const address = stalling.address() as { port: number };
    await daemon(
      "holder",
      new GeminiLlmClient({
        baseURL: `http://127.0.0.1:${address.port}`,
        apiKey: API_KEY,
        retry: { maxRetries: 0 },
      }),
    );
    // The holder takes the cache's entry and starts its creation, which never ends.
    const { daemons: bucket } = forks.resources;
    const held = await bucket.watch({ key: "gemini_cache.>" });
    const first = forks.fork({ ...base, directive: "Slice 1.\n@sim say one" });
    for await (const entry of held) if (entry.operation === "PUT" && entry.string().includes('"held"')) break;
    held.stop();
    // The waiter takes the second child (the holder runs one at a time) and waits on a KV watch of
    // the entry: a consumer of the bucket's stream filtered on it, whose creation request the test
    // sees (a copy of it: the server answers it as usual).
    await daemon("waiter");
    const { stream } = bucket as unknown as { stream: string };
    const creations = nc.subscribe(`$JS.API.CONSUMER.CREATE.${stream}.>`);
    await nc.flush();
    const second = forks.fork({ ...base, directive: "Slice 2.\n@sim say two" });
    for await (const request of creations)
      if (`${request.subject} ${request.string()}`.includes("gemini_cache.")) {
        creations.unsubscribe();
        await second.abort("not needed any more");
      }
    const outcome = await second.result();
    expect(outcome).toMatchObject({ status: "killed", reason: "not needed any more" });
    expect((await forks.state(second.runId))?.daemon_id).toBe("waiter");
    await waitFor(async () => (await forks.state(second.runId))?.status === "aborted");
    // Nothing reached the simulator: the waiter took no entry and made no cache.
    expect(sim.requests()).toHaveLength(0);
    // And the run is over, not only reported so: the waiter's one slot is free for the next child
    // (the holder's is still taken), which a wait that went on would keep.
    const third = forks.fork({
      prefix,
      parent: { agent_id: "gemini-abort" },
      directive: "Next.\n@sim say three",
    });
    expect(await third.result()).toMatchObject({ status: "completed" });
    expect((await forks.state(third.runId))?.daemon_id).toBe("waiter");
    await first.abort("test over");
  });
});
