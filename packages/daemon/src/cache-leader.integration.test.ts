// CacheLeaderWatch against a real nats-server: a warm-first follower's first call is held while its
// leader's log shows only the moments before a response, and goes once the response began (heard, or
// read from the log), the leader ended, or the wait timed out; an abort or a stop ends the wait.
import { ensureForkResources, type ForkResources, type LoggedEvent, lastLoggedEvent } from "@forkd/client";
import type { LlmClient, LlmRequest } from "@forkd/core";
import { LlmError } from "@forkd/core";
import {
  emptyUsageTotals,
  eventMsgId,
  type ForkEventBody,
  forkEventCodec,
  PROTOCOL_VERSION,
} from "@forkd/protocol";
import { type NatsServerHandle, startNatsServer, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CacheLeaderWatch, leaderReleases } from "./cache-leader.js";
import type { DaemonLogger } from "./logger.js";

const logger = pino({ level: "silent" }) as unknown as DaemonLogger;
let server: NatsServerHandle;
let nc: NatsConnection;
let resources: ForkResources;
let runs = 0;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  resources = await ensureForkResources(nc);
});

afterAll(async () => {
  await nc?.drain();
  await server?.stop();
});

const newLeader = () => `leader-${++runs}`;

/** Stores event `seq` of `runId` in its log, as its daemon would (a JetStream publish). */
async function store(runId: string, seq: number, body: ForkEventBody): Promise<void> {
  const event = forkEventCodec.decode(
    JSON.stringify({ v: PROTOCOL_VERSION, run_id: runId, seq, attempt: 1, ts: Date.now(), ...body }),
  );
  await resources.js.publish(resources.subjects.events(runId), forkEventCodec.encode(event), {
    msgID: eventMsgId(runId, seq),
  });
}

const accepted = (resumed = false): ForkEventBody => ({
  type: "accepted",
  daemon_id: "d1",
  queue_wait_ms: 1,
  delivery: 1,
  resumed,
});
const started: ForkEventBody = {
  type: "started",
  model: "claude-sonnet-4-5",
  prefix_hash: null,
  cache_shared: true,
};
const firstRequest: ForkEventBody = {
  type: "llm.request",
  turn: 1,
  model: "claude-sonnet-4-5",
  message_count: 3,
};

/** A watch whose reads of the leader's log are counted, read every `pollMs`. */
function countedWatch(pollMs = 20) {
  const reads = { count: 0, of: new Map<string, number>() };
  const watch = new CacheLeaderWatch({
    resources,
    logger,
    pollMs,
    readLast: (runId: string): Promise<LoggedEvent | null> => {
      reads.count++;
      reads.of.set(runId, (reads.of.get(runId) ?? 0) + 1);
      return lastLoggedEvent(resources, runId);
    },
  });
  return { watch, reads };
}

/** Tracks a promise's state without waiting on it. */
function track<T>(promise: Promise<T>) {
  const state: { settled: boolean; value?: T; error?: unknown } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  );
  return state;
}

describe("leaderReleases", () => {
  it("holds only on the moments before a first response", () => {
    expect(leaderReleases({ type: "accepted", resumed: false })).toBe(false);
    expect(leaderReleases({ type: "accepted" })).toBe(false);
    expect(leaderReleases({ type: "accepted", resumed: true })).toBe(true);
    expect(leaderReleases({ type: "started" })).toBe(false);
    expect(leaderReleases({ type: "heartbeat", turn: 1 })).toBe(false);
    expect(leaderReleases({ type: "llm.request", turn: 1 })).toBe(false);
    expect(leaderReleases({ type: "llm.request", turn: 2 })).toBe(true);
    expect(leaderReleases({ type: "llm.delta", turn: 1 })).toBe(true);
    expect(leaderReleases({ type: "llm.message", turn: 1 })).toBe(true);
    expect(leaderReleases({ type: "tool.call" })).toBe(true);
    expect(leaderReleases({ type: "paused" })).toBe(true);
    expect(leaderReleases({ type: "failed" })).toBe(true);
    expect(leaderReleases({ type: "completed" })).toBe(true);
  });
});

describe("CacheLeaderWatch", () => {
  it("holds while the leader's log has no response, and releases on its first delta", async () => {
    const leader = newLeader();
    const { watch, reads } = countedWatch();
    await store(leader, 1, accepted());
    await store(leader, 2, started);
    await store(leader, 3, firstRequest);
    const waited = track(watch.wait(leader, { timeoutMs: 60_000 }));
    // Two reads after every pre-response event was stored: the log was seen, and did not release.
    const readsBefore = reads.count;
    await waitFor(() => reads.count >= readsBefore + 2);
    expect(waited.settled).toBe(false);
    await store(leader, 4, { type: "llm.delta", turn: 1, text: "" });
    await waitFor(() => waited.settled);
    expect(waited.value).toBe("began");
    watch.close();
  });

  it("releases at once when the log already shows the response (or the run's end)", async () => {
    const began = newLeader();
    await store(began, 1, accepted());
    await store(began, 2, { type: "llm.delta", turn: 1, text: "hi" });
    const ended = newLeader();
    await store(ended, 1, {
      type: "failed",
      error: { code: "spec_invalid", message: "bad", retryable: false },
      usage: emptyUsageTotals(),
    } as ForkEventBody);
    const resumed = newLeader();
    await store(resumed, 1, accepted(true));
    // No hints: the events were stored before the watch existed, and polls are rare.
    const { watch } = countedWatch(60_000);
    await expect(watch.wait(began, { timeoutMs: 60_000 })).resolves.toBe("began");
    await expect(watch.wait(ended, { timeoutMs: 60_000 })).resolves.toBe("began");
    await expect(watch.wait(resumed, { timeoutMs: 60_000 })).resolves.toBe("began");
    watch.close();
  });

  it("hears the response without reading the log again (the hint), and remembers it", async () => {
    const leader = newLeader();
    await store(leader, 1, accepted());
    const { watch, reads } = countedWatch(60_000); // no poll in this test's time
    const first = track(watch.wait(leader, { timeoutMs: 60_000 }));
    const second = track(watch.wait(leader, { timeoutMs: 60_000 }));
    await waitFor(() => reads.count === 1); // the read once the subscription is at the server
    await store(leader, 2, firstRequest);
    await store(leader, 3, { type: "heartbeat", daemon_id: "d1", turn: 1 });
    await nc.flush();
    expect(first.settled || second.settled).toBe(false);
    await store(leader, 4, { type: "llm.delta", turn: 1, text: "x" });
    await waitFor(() => first.settled && second.settled);
    expect([first.value, second.value]).toEqual(["began", "began"]);
    // One watch for both followers: one read; a later follower of the same leader reads nothing.
    expect(reads.count).toBe(1);
    await expect(watch.wait(leader, { timeoutMs: 60_000 })).resolves.toBe("began");
    expect(reads.count).toBe(1);
    watch.close();
  });

  it("goes at the timeout when the leader never responds, and stops watching it", async () => {
    const leader = newLeader();
    await store(leader, 1, accepted());
    const { watch, reads } = countedWatch(10);
    await expect(watch.wait(leader, { timeoutMs: 80 })).resolves.toBe("timeout");
    const after = reads.of.get(leader) ?? 0;
    expect(after).toBeGreaterThan(1); // it was polled while a follower waited
    // Polls stopped with the last follower: a later leader's watch polls, this one's does not.
    const other = newLeader();
    await store(other, 1, accepted());
    const otherWait = track(watch.wait(other, { timeoutMs: 60_000 }));
    await waitFor(() => (reads.of.get(other) ?? 0) >= 3);
    expect(reads.of.get(leader)).toBe(after);
    await store(other, 2, { type: "llm.delta", turn: 1, text: "" });
    await waitFor(() => otherWait.settled);
    watch.close();
  });

  it("backs its reads off: a leader that never answers is read a handful of times, not every pollMs", async () => {
    const leader = newLeader();
    await store(leader, 1, accepted());
    const { watch, reads } = countedWatch(5);
    // 300 ms: 60 reads at a fixed 5 ms; doubling from 5 ms, the first read and six more.
    await expect(watch.wait(leader, { timeoutMs: 300 })).resolves.toBe("timeout");
    expect(reads.of.get(leader)).toBeGreaterThanOrEqual(3);
    expect(reads.of.get(leader)).toBeLessThanOrEqual(12);
    watch.close();
  });

  it("an abort ends the wait with its reason", async () => {
    const leader = newLeader();
    await store(leader, 1, accepted());
    const { watch, reads } = countedWatch();
    const controller = new AbortController();
    const waited = track(watch.wait(leader, { timeoutMs: 60_000, signal: controller.signal }));
    await waitFor(() => reads.count >= 1);
    controller.abort(new Error("aborted by parent"));
    await waitFor(() => waited.settled);
    expect((waited.error as Error).message).toBe("aborted by parent");
    watch.close();
  });
});

describe("CacheLeaderWatch.gate", () => {
  const request = { model: "claude-sonnet-4-5", max_tokens: 10, messages: [] } as unknown as LlmRequest;

  function countingClient() {
    const calls = { count: 0 };
    const client: LlmClient = {
      createMessage: async () => {
        calls.count++;
        return { id: "m", model: "x" } as never;
      },
    };
    return { client, calls };
  }

  it("holds the first call until the leader's response began; later calls go at once", async () => {
    const leader = newLeader();
    await store(leader, 1, accepted());
    const { watch, reads } = countedWatch();
    const { client, calls } = countingClient();
    const gated = watch.gate(client, { run_id: leader, wait_ms: 60_000 }, { runId: "f1", logger });
    const first = track(gated.createMessage(request));
    await waitFor(() => reads.count >= 2);
    expect(calls.count).toBe(0);
    await store(leader, 2, { type: "llm.delta", turn: 1, text: "" });
    await waitFor(() => first.settled);
    expect(calls.count).toBe(1);
    // The leader's watch is gone; a second call of the follower does not wait for anything.
    await gated.createMessage(request);
    expect(calls.count).toBe(2);
    watch.close();
  });

  it("a stop while held ends the call not_started, an abort as aborted; neither calls the provider", async () => {
    const leader = newLeader();
    await store(leader, 1, accepted());
    const { watch } = countedWatch();
    const { client, calls } = countingClient();
    const stopping = new AbortController();
    const stopped = watch.gate(
      client,
      { run_id: leader, wait_ms: 60_000 },
      { runId: "f2", stopSignal: stopping.signal, logger },
    );
    const stoppedCall = track(stopped.createMessage(request));
    const aborting = new AbortController();
    const aborted = watch.gate(client, { run_id: leader, wait_ms: 60_000 }, { runId: "f3", logger });
    const abortedCall = track(aborted.createMessage(request, { signal: aborting.signal }));
    stopping.abort();
    aborting.abort();
    await waitFor(() => stoppedCall.settled && abortedCall.settled);
    expect(stoppedCall.error).toBeInstanceOf(LlmError);
    expect((stoppedCall.error as LlmError).code).toBe("not_started");
    expect((abortedCall.error as LlmError).code).toBe("aborted");
    expect(calls.count).toBe(0);
    watch.close();
  });

  it("a follower whose leader never responds calls at wait_ms", async () => {
    const leader = newLeader();
    await store(leader, 1, accepted());
    const { watch, reads } = countedWatch();
    const { client, calls } = countingClient();
    const gated = watch.gate(client, { run_id: leader, wait_ms: 50 }, { runId: "f4", logger });
    await gated.createMessage(request);
    expect(calls.count).toBe(1);
    // Its next call does not wait for the leader again (nor read its log).
    const readsAfterFirst = reads.of.get(leader);
    await gated.createMessage(request);
    expect(calls.count).toBe(2);
    expect(reads.of.get(leader)).toBe(readsAfterFirst);
    watch.close();
  });
});
