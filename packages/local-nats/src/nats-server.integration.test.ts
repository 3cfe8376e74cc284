// A real single nats-server: pub/sub, clean stop, crash and restart with JetStream data intact, and
// configuration reload.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import {
  isProcessAlive,
  NatsServerUnsupportedError,
  runningNatsServerCount,
  startNatsServer,
  stopAllNatsServers,
} from "./index.js";

const connections: NatsConnection[] = [];

/** The HTTP status of a WebSocket upgrade request to `url` (101 when the server speaks WebSocket). */
function websocketHandshake(url: string): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const request = httpRequest({
      host: hostname,
      port: Number(port),
      headers: {
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": randomBytes(16).toString("base64"),
      },
    });
    request.once("upgrade", (response, socket) => {
      socket.destroy();
      resolve(response.statusCode ?? 0);
    });
    request.once("response", (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.once("error", reject);
    request.end();
  });
}
async function client(servers: string, options: { reconnect?: boolean } = {}): Promise<NatsConnection> {
  const nc = await connect({
    servers,
    ...(options.reconnect ? { maxReconnectAttempts: -1, reconnectTimeWait: 50 } : { reconnect: false }),
  });
  connections.push(nc);
  return nc;
}

afterAll(async () => {
  await Promise.allSettled(connections.map((nc) => nc.close()));
  await stopAllNatsServers();
  expect(runningNatsServerCount()).toBe(0);
});

describe("startNatsServer (binary)", () => {
  it("starts a loopback server that carries publish/subscribe, and stop() leaves nothing behind", async () => {
    const server = await startNatsServer({ name: "single-pubsub" });
    expect(server.kind).toBe("binary");
    expect(server.url).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
    expect(server.url).toBe(`nats://127.0.0.1:${server.port}`);
    expect(server.monitorUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.clusterPort).toBeUndefined();
    expect(server.running).toBe(true);
    expect(server.log()).toContain("Server is ready");
    const pid = server.pid;
    expect(pid).toBeTypeOf("number");
    expect(existsSync(server.storeDir)).toBe(true);

    const nc = await client(server.url);
    const sub = nc.subscribe("greet.*", { max: 1 });
    nc.publish("greet.joe", "hello");
    for await (const msg of sub) {
      expect(msg.subject).toBe("greet.joe");
      expect(msg.string()).toBe("hello");
    }
    await nc.close();

    await server.stop();
    expect(server.running).toBe(false);
    expect(server.pid).toBeUndefined();
    expect(isProcessAlive(pid!)).toBe(false);
    expect(existsSync(server.storeDir)).toBe(false);
    await server.stop(); // idempotent
    await expect(server.restart()).rejects.toBeInstanceOf(NatsServerUnsupportedError);
  });

  it("keeps its URL and its JetStream file store across SIGKILL and restart", async () => {
    const server = await startNatsServer({ name: "single-restart" });
    const url = server.url;
    const firstPid = server.pid!;

    const nc = await client(url);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "KEEP", subjects: ["keep.>"], storage: StorageType.File });
    const ack = await jetstream(nc).publish("keep.one", "survives a crash");
    expect(ack.seq).toBe(1);
    await nc.close();

    await server.kill(); // SIGKILL by default
    expect(server.running).toBe(false);
    expect(isProcessAlive(firstPid)).toBe(false);
    await server.kill(); // no-op once gone

    await server.restart();
    expect(server.url).toBe(url);
    expect(server.pid).not.toBe(firstPid);

    const again = await client(url);
    const stored = await (await jetstreamManager(again)).streams.getMessage("KEEP", { seq: 1 });
    expect(stored?.subject).toBe("keep.one");
    expect(stored?.string()).toBe("survives a crash");
    await again.close();
    await server.stop();
  });

  it("lets a connected client reconnect to the restarted server at the same address", async () => {
    await using server = await startNatsServer({ name: "single-reconnect" });
    const nc = await client(server.url, { reconnect: true });
    const statuses = nc.status();
    await server.kill();
    const restarted = server.restart();
    for await (const status of statuses) {
      if (status.type === "reconnect") break;
    }
    await restarted;
    const sub = nc.subscribe("after.restart", { max: 1 });
    await nc.flush();
    nc.publish("after.restart", "back");
    for await (const msg of sub) expect(msg.string()).toBe("back");
    await nc.close();
  });

  it("applies extra configuration text and reloads a new one", async () => {
    const server = await startNatsServer({ name: "single-config", config: "max_payload: 4096" });
    const before = await client(server.url);
    expect(before.info?.max_payload).toBe(4096);
    await before.close();

    await server.reload("max_payload: 8192");
    const after = await client(server.url);
    expect(after.info?.max_payload).toBe(8192);
    await after.close();

    await expect(server.reload("max_payload: {")).rejects.toMatchObject({
      code: "nats_server_reload_failed",
    });
    expect(server.running).toBe(true);
    await server.restart(); // the file holds the last good configuration again
    const restarted = await client(server.url);
    expect(restarted.info?.max_payload).toBe(8192);
    await restarted.close();
    await server.stop();
  });

  it("runs tenants as NATS accounts with JetStream, kept apart", async () => {
    const config = `accounts {
  TENANT_A: { jetstream: enabled, users: [{ user: a, password: a }] }
  TENANT_B: { jetstream: enabled, users: [{ user: b, password: b }] }
}`;
    await using server = await startNatsServer({ name: "single-accounts", config });
    const a = await connect({ servers: server.url, user: "a", pass: "a", reconnect: false });
    const b = await connect({ servers: server.url, user: "b", pass: "b", reconnect: false });
    connections.push(a, b);
    await (await jetstreamManager(a)).streams.add({ name: "ONLY_A", subjects: ["agent.>"] });
    expect((await jetstream(a).publish("agent.fork.r1", "x")).stream).toBe("ONLY_A");
    const streamsOfB = await (await jetstreamManager(b)).streams.names().next();
    expect(streamsOfB).toEqual([]);
    await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow();
    await a.close();
    await b.close();
  });

  it("serves WebSocket clients on a loopback port of its own with websocket: true, the same port after a restart", async () => {
    await using plain = await startNatsServer({ name: "single-no-websocket" });
    expect(plain.websocketUrl).toBeUndefined();
    await using server = await startNatsServer({ name: "single-websocket", websocket: true });
    const url = server.websocketUrl;
    expect(url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    expect(Number(new URL(url!).port)).not.toBe(server.port);
    expect(await websocketHandshake(url!)).toBe(101);
    await server.restart();
    expect(server.websocketUrl).toBe(url);
    expect(await websocketHandshake(url!)).toBe(101);
  });

  it("fails with the server's log when the configuration is invalid", async () => {
    await expect(
      startNatsServer({ name: "single-bad-config", config: "this is { not valid" }),
    ).rejects.toMatchObject({
      code: "nats_server_start_failed",
      message: expect.stringMatching(/exited .* before it was ready[\s\S]*log/),
    });
  });
});
