// The Gemini cache lock of several daemons on one real nats-server: concurrent callers run the work
// once and all get its record; a holder that dies holds its waiters only until its lease ends, one
// whose work is slow keeps its lease, one whose work hangs loses it after its last term; one whose
// work fails frees the entry at once; a caller that will not wait gives up while it is held.
import { ensureForkResources } from "@forkd/client";
import {
  GEMINI_CACHE_RENEW_BELOW_SECONDS,
  GEMINI_CACHE_TTL_SECONDS,
  LlmError,
  type LlmRequest,
} from "@forkd/core";
import { type GeminiCacheRecord, GeminiLlmClient } from "@forkd/llm";
import { ManualClock, startSim } from "@forkd/sim";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GEMINI_CACHE_MAX_LEASE_TERMS, KvGeminiCacheLock } from "./gemini-cache-lock.js";
import { createDaemonLogger } from "./logger.js";

let server: NatsServerHandle;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  server = await startNatsServer();
});

afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await server?.stop();
});

/** Each lock's connection: a test closes it to stop its daemon dead. */
const connectionOf = new Map<KvGeminiCacheLock, NatsConnection>();

/** A daemon's lock, on a connection of its own. */
async function daemonLock(daemonId: string, leaseMs?: number): Promise<KvGeminiCacheLock> {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  const { daemons } = await ensureForkResources(nc, { prefix: "geminilock" });
  const lock = new KvGeminiCacheLock({
    kv: daemons,
    daemonId,
    keyId: "key-1",
    logger: createDaemonLogger({ level: "silent", format: "json", daemonId }),
    leaseMs,
  });
  connectionOf.set(lock, nc);
  return lock;
}

const record = (name: string): GeminiCacheRecord => ({
  name,
  expiresAt: Date.now() + 60_000,
  tokens: 4096,
});
const fresh = (r: GeminiCacheRecord) => r.name === null || r.expiresAt > Date.now();

/** Work that runs until the test ends it: `finish` publishes a record, `fail` throws. */
function heldWork() {
  let finish: (r: GeminiCacheRecord) => void = () => undefined;
  let fail: (error: Error) => void = () => undefined;
  const work = () =>
    new Promise<GeminiCacheRecord>((resolve, reject) => {
      finish = resolve;
      fail = reject;
    });
  return { work, finish: (r: GeminiCacheRecord) => finish(r), fail: (e: Error) => fail(e) };
}

/** `lock` waits for the entry of `displayName` and runs the work itself: when it took over. */
async function takeOver(lock: KvGeminiCacheLock, displayName: string) {
  let tookOverAt = 0;
  const outcome = await lock.exclusive(
    displayName,
    async () => {
      tookOverAt = Date.now();
      return record("cachedContents/taken-over");
    },
    { wait: true, accept: fresh },
  );
  return { outcome, tookOverAt };
}

/** Resolves once the entry of `displayName` is held (and `match`es), read through a bucket of its own. */
async function heldEntry(
  lock: KvGeminiCacheLock,
  displayName: string,
  match: (lease: { holder: string; lease_until: number }) => boolean = () => true,
) {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  const { daemons } = await ensureForkResources(nc, { prefix: "geminilock" });
  const watch = await daemons.watch({ key: lock.keyOf(displayName) });
  for await (const entry of watch) {
    const value = entry.operation === "PUT" ? (JSON.parse(entry.string()) as Record<string, unknown>) : {};
    const lease = value as { holder: string; lease_until: number };
    if (value.state === "held" && match(lease)) {
      watch.stop();
      return lease;
    }
  }
  throw new Error("the watch ended");
}

describe("the Gemini cache lock across daemons", () => {
  it("runs the work once for callers on four daemons at once; every caller gets its record", async () => {
    const locks = await Promise.all(["d1", "d2", "d3", "d4"].map((id) => daemonLock(id)));
    let runs = 0;
    const outcomes = await Promise.all(
      locks.map((lock, i) =>
        lock.exclusive(
          "forkd-once",
          async () => {
            runs++;
            return record(`cachedContents/made-by-${i}`);
          },
          { wait: true, accept: fresh },
        ),
      ),
    );
    expect(runs).toBe(1);
    const names = new Set(outcomes.map((o) => o?.record.name));
    expect(names.size).toBe(1);
    expect(outcomes.filter((o) => o?.ran)).toHaveLength(1);
  });

  it("holds waiters no longer than the lease of a holder that died; one of them takes over", async () => {
    const dying = await daemonLock("dying", 400);
    const waiter = await daemonLock("waiter");
    void dying.exclusive("forkd-dead", heldWork().work, { wait: true, accept: fresh }).catch(() => undefined);
    const held = await heldEntry(dying, "forkd-dead");
    expect(held.holder).toBe("dying");
    // Its daemon is gone: no renewal, no record.
    await connectionOf.get(dying)!.close();
    const { outcome, tookOverAt } = await takeOver(waiter, "forkd-dead");
    expect(outcome).toEqual({
      record: expect.objectContaining({ name: "cachedContents/taken-over" }),
      ran: true,
    });
    expect(tookOverAt).toBeGreaterThanOrEqual(held.lease_until);
  });

  it("keeps the lease of a holder whose work outlasts it, and its waiter gets its record", async () => {
    const slow = await daemonLock("slow", 1_000);
    const waiter = await daemonLock("waiter-slow");
    const work = heldWork();
    const holding = slow.exclusive("forkd-slow", work.work, { wait: true, accept: fresh });
    const first = await heldEntry(slow, "forkd-slow");
    let ran = false;
    const waited = waiter.exclusive(
      "forkd-slow",
      async () => {
        ran = true;
        return record("cachedContents/not-this");
      },
      { wait: true, accept: fresh },
    );
    // The holder renews past its first term before its work ends.
    await heldEntry(slow, "forkd-slow", (lease) => lease.lease_until > first.lease_until + 1_000);
    work.finish(record("cachedContents/slow"));
    await holding;
    expect(await waited).toEqual({
      record: expect.objectContaining({ name: "cachedContents/slow" }),
      ran: false,
    });
    expect(ran).toBe(false);
  });

  it("loses the entry after its last term when its work hangs; a late record does not write over the next", async () => {
    const lease = 1_000;
    const hung = await daemonLock("hung", lease);
    const waiter = await daemonLock("waiter-hung");
    const work = heldWork();
    const hanging = hung.exclusive("forkd-hung", work.work, { wait: true, accept: fresh });
    const held = await heldEntry(hung, "forkd-hung");
    const { outcome, tookOverAt } = await takeOver(waiter, "forkd-hung");
    expect(outcome?.ran).toBe(true);
    // Renewed up to GEMINI_CACHE_MAX_LEASE_TERMS terms from the first, not beyond.
    expect(tookOverAt).toBeGreaterThanOrEqual(held.lease_until + (GEMINI_CACHE_MAX_LEASE_TERMS - 1) * lease);
    work.finish(record("cachedContents/late"));
    await hanging;
    const again = await waiter.exclusive("forkd-hung", async () => record("cachedContents/third"), {
      wait: true,
      accept: fresh,
    });
    expect(again).toEqual({
      record: expect.objectContaining({ name: "cachedContents/taken-over" }),
      ran: false,
    });
  });

  it("frees the entry at once when the work fails: a waiter runs it without waiting out the lease", async () => {
    const failing = await daemonLock("failing", 60_000);
    const waiter = await daemonLock("waiter-2");
    const failingWork = heldWork();
    const failed = failing.exclusive("forkd-fails", failingWork.work, { wait: true, accept: fresh });
    const held = await heldEntry(failing, "forkd-fails");
    const waited = waiter.exclusive("forkd-fails", async () => record("cachedContents/second-try"), {
      wait: true,
      accept: fresh,
    });
    failingWork.fail(new Error("create refused"));
    await expect(failed).rejects.toThrow("create refused");
    const outcome = await waited;
    expect(outcome?.ran).toBe(true);
    expect(Date.now()).toBeLessThan(held.lease_until);
  });

  it("gives up at once while another holds the entry, for a caller that will not wait", async () => {
    const holder = await daemonLock("holder");
    const other = await daemonLock("other");
    const busy = heldWork();
    const holding = holder.exclusive("forkd-busy", busy.work, { wait: true, accept: fresh });
    await heldEntry(holder, "forkd-busy");
    let ran = false;
    const outcome = await other.exclusive(
      "forkd-busy",
      async () => {
        ran = true;
        return record("x");
      },
      { wait: false, accept: fresh },
    );
    expect(outcome).toBeUndefined();
    expect(ran).toBe(false);
    busy.finish(record("cachedContents/busy"));
    await holding;
  });

  it("neither takes a free entry nor runs the work for a caller whose run was aborted", async () => {
    const lock = await daemonLock("aborted-caller");
    const run = new AbortController();
    run.abort(new Error("run aborted"));
    let ran = false;
    const call = lock.exclusive(
      "forkd-aborted",
      async () => {
        ran = true;
        return record("cachedContents/unwanted");
      },
      { wait: true, accept: fresh, signal: run.signal },
    );
    await expect(call).rejects.toThrow("run aborted");
    expect(ran).toBe(false);
    // The entry is still free: the next caller runs the work.
    const next = await lock.exclusive("forkd-aborted", async () => record("cachedContents/next"), {
      wait: true,
      accept: fresh,
    });
    expect(next).toEqual({ record: expect.objectContaining({ name: "cachedContents/next" }), ran: true });
  });

  it("runs the work again over a record the caller does not accept (a renewal over an old expiry)", async () => {
    const lock = await daemonLock("renewer");
    await lock.exclusive("forkd-renew", async () => record("cachedContents/r"), {
      wait: true,
      accept: fresh,
    });
    const outcome = await lock.exclusive(
      "forkd-renew",
      async () => ({ name: "cachedContents/r", expiresAt: Date.now() + 120_000, tokens: 4096 }),
      { wait: false, accept: (r) => r.expiresAt > Date.now() + 90_000 },
    );
    expect(outcome?.ran).toBe(true);
  });
});

/** A parent of about 4,500 tokens on `system`, and its child `n` (a fan-out that shares the prefix). */
function fanOut(system: string) {
  const parent: LlmRequest = {
    model: "gemini-2.5-flash",
    max_tokens: 256,
    system,
    messages: [{ role: "user", content: "Split the review." }],
  };
  return (n: number): LlmRequest => ({
    ...parent,
    messages: [
      ...parent.messages,
      { role: "assistant", content: "Split." },
      { role: "user", content: `Slice ${n}.\n@sim say ok ${n}` },
    ],
  });
}

describe("the Gemini clients of two daemons sharing the lock", () => {
  it("renew a cache once between them past the margin, and one response bills the storage it added", async () => {
    // The simulator and both clients read one manual clock: the renewal's seconds are exact.
    const clock = new ManualClock(1_800_000_000_000);
    const sim = await startSim({ port: 0, clock });
    try {
      const clients = await Promise.all(
        ["renew-a", "renew-b"].map(async (id) => {
          const client = new GeminiLlmClient({
            baseURL: sim.url,
            apiKey: "gemini-renew-key",
            retry: { maxRetries: 0 },
            now: () => clock.now(),
          });
          client.coordinate(await daemonLock(id));
          return client;
        }),
      );
      const child = fanOut(`You review code. ${"Background about the codebase. ".repeat(600)}`);
      const send = (client: GeminiLlmClient, n: number) =>
        client.send(child(n), { count: 2, cachedContent: "auto" });
      const [first, second] = await Promise.all([send(clients[0]!, 1), send(clients[1]!, 2)]);
      const creations = sim
        .requests()
        .filter((e) => e.method === "POST" && e.path === "/v1beta/cachedContents");
      expect(creations).toHaveLength(1);
      const tokens = Math.max(
        first.usage.cache_creation_input_tokens ?? 0,
        second.usage.cache_creation_input_tokens ?? 0,
      );
      expect([first, second].map((r) => r.usage.cache_creation_input_tokens).sort()).toEqual([0, tokens]);
      // Past the margin: both daemons' next children want a renewal; one makes it.
      const elapsed = (GEMINI_CACHE_TTL_SECONDS - GEMINI_CACHE_RENEW_BELOW_SECONDS) * 1000 + 1;
      clock.advance(elapsed);
      const later = await Promise.all([
        send(clients[0]!, 3),
        send(clients[1]!, 4),
        send(clients[0]!, 5),
        send(clients[1]!, 6),
      ]);
      const patches = sim.requests().filter((e) => e.method === "PATCH" && e.status === 200);
      expect(patches).toHaveLength(1);
      const stored = later.map((r) => r.usage.cache_storage_token_seconds ?? 0).filter((s) => s > 0);
      expect(stored).toHaveLength(1);
      expect(stored[0]).toBeCloseTo((tokens * elapsed) / 1000, 6);
      // A later round past the margin again: one more renewal, billed from the expiry the first set.
      clock.advance(elapsed);
      const round2 = await Promise.all([send(clients[1]!, 7), send(clients[0]!, 8)]);
      expect(sim.requests().filter((e) => e.method === "PATCH" && e.status === 200)).toHaveLength(2);
      const stored2 = round2.map((r) => r.usage.cache_storage_token_seconds ?? 0).filter((s) => s > 0);
      expect(stored2).toHaveLength(1);
      expect(stored2[0]).toBeCloseTo((tokens * elapsed) / 1000, 6);
    } finally {
      await sim.close();
    }
  });

  it("end a child's wait for the other daemon's cache creation at once when its run aborts", async () => {
    const sim = await startSim({ port: 0 });
    try {
      // Daemon A creates the fan-out's cache, and its creation does not end while the test runs;
      // its lease (60 s) would hold a waiter that long.
      const creation = heldWork();
      let holding: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        holding = resolve;
      });
      const lockA = await daemonLock("abort-a", 60_000);
      const clientA = new GeminiLlmClient({
        baseURL: sim.url,
        apiKey: "gemini-abort-key",
        retry: { maxRetries: 0 },
      });
      clientA.coordinate({
        exclusive: (key, _work, options) =>
          lockA.exclusive(
            key,
            () => {
              holding();
              return creation.work();
            },
            options,
          ),
      });
      const clientB = new GeminiLlmClient({
        baseURL: sim.url,
        apiKey: "gemini-abort-key",
        retry: { maxRetries: 0 },
      });
      const lockB = await daemonLock("abort-b");
      clientB.coordinate(lockB);
      const child = fanOut(
        `You triage bugs (a prefix no other test caches). ${"Background about the bug tracker. ".repeat(600)}`,
      );
      const first = clientA.send(child(1), { count: 2, cachedContent: "auto" }).catch((e: unknown) => e);
      await held;
      // B waits on a KV watch of the entry: the server announces the watch's consumer.
      const nc = connectionOf.get(lockB)!;
      const watching = nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.CREATED.>", { max: 1 });
      await nc.flush();
      const run = new AbortController();
      const second = clientB
        .send(child(2), { count: 2, cachedContent: "auto" }, { signal: run.signal })
        .catch((e: unknown) => e);
      for await (const _ of watching) run.abort();
      const error = await second;
      expect(error).toBeInstanceOf(LlmError);
      expect((error as LlmError).code).toBe("aborted");
      // B neither took the entry nor reached the API: A still holds it, and made nothing yet.
      expect(sim.requests()).toHaveLength(0);
      creation.fail(new Error("test over"));
      expect(await first).toBeInstanceOf(Error);
    } finally {
      await sim.close();
    }
    // Well inside A's 60 s lease: a wait the abort does not end outlasts this and fails the test.
  }, 20_000);
});
