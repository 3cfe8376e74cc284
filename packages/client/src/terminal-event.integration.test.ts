// awaitTerminalEvent against real nats-servers: the outcome is the terminal event the stream stores,
// heard on core NATS and read in one get, with no consumer — and never a terminal event that was only
// heard (a publish the stream refused). (An ending missed while the connection was away:
// test/faults/result-reconnect.test.ts.)
import {
  emptyUsageTotals,
  eventMsgId,
  type ForkEvent,
  forkEventCodec,
  PROTOCOL_VERSION,
} from "@forkd/protocol";
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsForkSubagent } from "./nats-fork-subagent.js";
import { ensureForkResources, type ForkResources } from "./resources.js";
import { awaitTerminalEvent } from "./terminal-event.js";

function eventBytes(runId: string, seq: number, ending?: string): Uint8Array {
  const body =
    ending === undefined
      ? { type: "llm.delta", turn: 1, text: `delta ${seq}` }
      : { type: "aborted", reason: ending, usage: emptyUsageTotals() };
  const event: ForkEvent = forkEventCodec.decode(
    JSON.stringify({ v: PROTOCOL_VERSION, run_id: runId, seq, attempt: 1, ts: Date.now(), ...body }),
  );
  return forkEventCodec.encode(event);
}

/** Stores event `seq` of `runId` (a terminal `aborted` one when `ending` is its reason). */
async function store(on: ForkResources, runId: string, seq: number, ending?: string): Promise<void> {
  await on.js.publish(on.subjects.events(runId), eventBytes(runId, seq, ending), {
    msgID: eventMsgId(runId, seq),
  });
}

/** Counts the messages on `subject` seen by `observer` from now; `count()` answers after a ping. */
async function countRequests(observer: NatsConnection, subject: string) {
  let seen = 0;
  const waiters: { atLeast: number; resolve: () => void }[] = [];
  const subscription = observer.subscribe(subject, {
    callback: () => {
      seen++;
      for (const waiter of waiters.filter((w) => seen >= w.atLeast)) waiter.resolve();
    },
  });
  await observer.flush();
  return {
    /** Resolves once `atLeast` were seen. */
    reached: (atLeast: number) =>
      seen >= atLeast
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push({ atLeast, resolve })),
    count: async () => {
      await observer.flush();
      return seen;
    },
    stop: () => subscription.unsubscribe(),
  };
}

describe("awaitTerminalEvent on one server", () => {
  let server: NatsServerHandle;
  let nc: NatsConnection;
  let observer: NatsConnection;
  let resources: ForkResources;

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    observer = await connect({ servers: server.url });
    resources = await ensureForkResources(nc);
  });

  afterAll(async () => {
    await observer?.close();
    await nc?.close();
    await server?.stop();
  });

  const eventGets = () =>
    countRequests(observer, `$JS.API.STREAM.MSG.GET.${resources.subjects.streams.events}`);
  const consumerCreates = () => countRequests(observer, "$JS.API.CONSUMER.>");

  it("answers with a terminal event stored before the wait, in one get and no consumer", async () => {
    await store(resources, "run-ended-before", 1);
    await store(resources, "run-ended-before", 2, "ended before");
    const gets = await eventGets();
    const consumers = await consumerCreates();
    try {
      const terminal = await awaitTerminalEvent(resources, "run-ended-before");
      expect(terminal.event).toMatchObject({ type: "aborted", reason: "ended before", seq: 2 });
      expect(await gets.count()).toBe(1);
      expect(await consumers.count()).toBe(0);
    } finally {
      gets.stop();
      consumers.stop();
    }
  });

  it("hears a terminal event stored during the wait and reads it, with no consumer", async () => {
    await store(resources, "run-ends-during", 1);
    const gets = await eventGets();
    const consumers = await consumerCreates();
    try {
      const waiting = awaitTerminalEvent(resources, "run-ends-during");
      await gets.reached(1); // the wait subscribed, then read: the run had not ended
      await store(resources, "run-ends-during", 2);
      await store(resources, "run-ends-during", 3, "ended during");
      expect((await waiting).event).toMatchObject({ reason: "ended during", seq: 3 });
      expect(await gets.count()).toBe(2);
      expect(await consumers.count()).toBe(0);
    } finally {
      gets.stop();
      consumers.stop();
    }
  });

  it("reads the log only once `readAfter` settled (a run's spec stored), and hears what ends meanwhile", async () => {
    const gets = await eventGets();
    const consumers = await consumerCreates();
    let launched!: () => void;
    const launch = new Promise<void>((resolve) => {
      launched = resolve;
    });
    try {
      const waiting = awaitTerminalEvent(resources, "run-launching", { readAfter: launch });
      // The wait's subscription is at the server (same connection, in order) and its read would follow.
      await nc.flush();
      await nc.flush();
      expect(await gets.count()).toBe(0);
      launched();
      await gets.reached(1);
      await store(resources, "run-launching", 1, "ended after the launch");
      expect((await waiting).event).toMatchObject({ reason: "ended after the launch", seq: 1 });
      expect(await consumers.count()).toBe(0);
    } finally {
      gets.stop();
      consumers.stop();
    }
  });

  it("with readFirst false reads nothing until an ending is heard, then reads it", async () => {
    const gets = await eventGets();
    try {
      const waiting = awaitTerminalEvent(resources, "run-unsent", { readFirst: false });
      await nc.flush();
      await nc.flush();
      expect(await gets.count()).toBe(0);
      await store(resources, "run-unsent", 1, "ended later");
      expect((await waiting).event).toMatchObject({ reason: "ended later", seq: 1 });
      expect(await gets.count()).toBe(1); // the heard ending, confirmed as stored
    } finally {
      gets.stop();
    }
  });

  it("with readFirst false flushes nothing, and one that reads first flushes once", async () => {
    const counted = await connect({ servers: server.url });
    try {
      const on = await ensureForkResources(counted);
      let flushes = 0;
      const flush = counted.flush.bind(counted);
      counted.flush = () => {
        flushes++;
        return flush();
      };
      const unsent = awaitTerminalEvent(on, "run-unsent-flush", { readFirst: false });
      await new Promise((resolveTurn) => setImmediate(resolveTurn));
      expect(flushes).toBe(0);
      await store(on, "run-unsent-flush", 1, "heard without a flush");
      expect((await unsent).event).toMatchObject({ reason: "heard without a flush" });
      expect(flushes).toBe(0);
      const sent = awaitTerminalEvent(on, "run-unsent-flush");
      expect((await sent).event).toMatchObject({ reason: "heard without a flush" });
      expect(flushes).toBe(1);
    } finally {
      await counted.close();
    }
  });

  it("a fork's result() asked before its spec went out reads nothing at first; asked after, reads once", async () => {
    const forks = await NatsForkSubagent.create(nc);
    const gets = await eventGets();
    try {
      const early = forks.fork({ prefix: null, directive: "Wait.", parent: { agent_id: "parent-t" } });
      const earlyResult = early.result();
      await early.published();
      await nc.flush();
      await nc.flush();
      expect(await gets.count()).toBe(0);
      const late = forks.fork({ prefix: null, directive: "Wait.", parent: { agent_id: "parent-t" } });
      await late.published();
      const lateResult = late.result();
      await gets.reached(1);
      // A run id given by the caller may have a log already (a resubmission): its wait reads it.
      const given = forks.fork({
        runId: "run-given-1",
        prefix: null,
        directive: "Wait.",
        parent: { agent_id: "parent-t" },
      });
      const givenResult = given.result();
      await gets.reached(2);
      for (const handle of [early, late, given]) await store(resources, handle.runId, 1, "ended by the test");
      for (const outcome of await Promise.all([earlyResult, lateResult, givenResult]))
        expect(outcome.status).toBe("killed");
    } finally {
      gets.stop();
      await forks.close();
    }
  });

  it("never takes a terminal event the stream refused: the log, through a consumer, decides", async () => {
    await store(resources, "run-fenced", 1);
    const gets = await eventGets();
    const consumers = await consumerCreates();
    try {
      const waiting = awaitTerminalEvent(resources, "run-fenced", { hintsForMs: 600_000 });
      await gets.reached(1);
      // A fenced daemon's ending: refused by the stream (wrong last sequence), heard on core NATS.
      const refused = await resources.js
        .publish(resources.subjects.events("run-fenced"), eventBytes("run-fenced", 2, "forged"), {
          expect: { lastSubjectSequence: 999_999 },
        })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(Error);
      await consumers.reached(1); // heard, not stored: the wait follows the log
      await store(resources, "run-fenced", 2, "stored");
      expect((await waiting).event).toMatchObject({ reason: "stored", seq: 2 });
    } finally {
      gets.stop();
      consumers.stop();
    }
  });

  it("follows the log through a consumer once its hints had their time, from the run's last event", async () => {
    for (const seq of [1, 2, 3]) await store(resources, "run-long", seq);
    const lastStored = await resources.jsm.streams.getMessage(resources.subjects.streams.events, {
      last_by_subj: resources.subjects.events("run-long"),
    });
    const created: { deliver_policy?: string; opt_start_seq?: number }[] = [];
    const creates = observer.subscribe("$JS.API.CONSUMER.CREATE.>", {
      callback: (_error, message) => {
        created.push(message.json<{ config: (typeof created)[number] }>().config);
      },
    });
    await observer.flush();
    const consumers = await consumerCreates();
    try {
      const waiting = awaitTerminalEvent(resources, "run-long", { hintsForMs: 1 });
      await consumers.reached(1);
      await store(resources, "run-long", 4, "ended late");
      expect((await waiting).event).toMatchObject({ reason: "ended late", seq: 4 });
      // Not the whole log replayed: the consumer began at the run's last stored event.
      expect(created[0]).toMatchObject({
        deliver_policy: "by_start_sequence",
        opt_start_seq: lastStored!.seq,
      });
    } finally {
      creates.unsubscribe();
      consumers.stop();
    }
  });

  it("ends, rejected, when its connection closes while it follows the log", async () => {
    const own = await connect({ servers: server.url });
    const ownResources = await ensureForkResources(own);
    const consumers = await consumerCreates();
    try {
      const waiting = awaitTerminalEvent(ownResources, "run-connection-gone", { hintsForMs: 1 });
      await consumers.reached(1);
      await own.close();
      await expect(waiting).rejects.toThrow();
    } finally {
      consumers.stop();
    }
  });

  it("rejects on a connection already closed, and its signal's abort later throws nothing", async () => {
    const own = await connect({ servers: server.url });
    const ownResources = await ensureForkResources(own);
    await own.close();
    const stop = new AbortController();
    await expect(awaitTerminalEvent(ownResources, "run-closed", { signal: stop.signal })).rejects.toThrow(
      /closed/i,
    );
    // The signal's listener was never left on a wait that could not start (it used to throw here).
    expect(() => stop.abort(new Error("later"))).not.toThrow();
  });

  it("rejects with the signal's reason when the wait is aborted", async () => {
    const stop = new AbortController();
    const waiting = awaitTerminalEvent(resources, "run-never-ends", { signal: stop.signal });
    stop.abort(new Error("gave up"));
    await expect(waiting).rejects.toThrow("gave up");
    await expect(
      awaitTerminalEvent(resources, "run-never-ends", { signal: AbortSignal.abort(new Error("at once")) }),
    ).rejects.toThrow("at once");
  });
});
