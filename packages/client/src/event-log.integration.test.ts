// readEventLog against a real nats-server: when its consumer is lost while events wait in the stream,
// the reader makes a new one and resumes at exactly the next event — no gap, no duplicate; when it
// cannot make one at all, it reads on with message gets, still gap-free and duplicate-free.
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
import { readEventLog } from "./event-log.js";
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

function logEvent(runId: string, seq: number, terminal = false): ForkEvent {
  const body = terminal
    ? { type: "aborted", reason: "done", usage: emptyUsageTotals() }
    : { type: "llm.delta", turn: 1, text: `delta ${seq}` };
  return forkEventCodec.decode(
    new TextEncoder().encode(
      JSON.stringify({ v: PROTOCOL_VERSION, run_id: runId, seq, attempt: 1, ts: Date.now(), ...body }),
    ),
  );
}

async function publishTo(on: ForkResources, runId: string, seqs: number[], terminal = false): Promise<void> {
  for (const [index, seq] of seqs.entries()) {
    const event = logEvent(runId, seq, terminal && index === seqs.length - 1);
    await on.js.publish(on.subjects.events(runId), forkEventCodec.encode(event), {
      msgID: eventMsgId(runId, seq),
    });
  }
}

async function publish(runId: string, ...seqs: number[]): Promise<void> {
  await publishTo(resources, runId, seqs);
}

/** The names of the consumers on the events stream: a reader's own is the only one. */
async function eventConsumers(): Promise<string[]> {
  const names: string[] = [];
  for await (const info of resources.jsm.consumers.list(resources.subjects.streams.events)) {
    names.push(info.name);
  }
  return names;
}

describe("readEventLog", () => {
  it("resumes at exactly the next event when its consumer is lost while events are pending", async () => {
    const runId = "run-consumer-lost";
    await publish(runId, 1, 2);
    const reader = readEventLog(resources, runId)[Symbol.asyncIterator]();
    try {
      const seqOf = async () => {
        const next = await reader.next();
        if (next.done) throw new Error("the reader ended before the run's terminal event");
        return next.value.event.seq;
      };
      expect([await seqOf(), await seqOf()]).toEqual([1, 2]);

      // The reader holds event 2; its consumer disappears (as with the node it lived on) while
      // event 3 is stored, and more events follow while no consumer exists.
      await publish(runId, 3);
      const [lost] = await eventConsumers();
      expect(lost).toBeDefined();
      await resources.jsm.consumers.delete(resources.subjects.streams.events, lost!);
      await publish(runId, 4, 5, 6);

      const seen: number[] = [];
      while (seen.at(-1) !== 6) seen.push(await seqOf());
      expect(seen).toEqual([3, 4, 5, 6]);
      const replacement = await eventConsumers();
      expect(replacement).toHaveLength(1);
      expect(replacement[0]).not.toBe(lost);
    } finally {
      await reader.return?.(undefined);
    }
  });
});

describe("readEventLog where no consumer can be made", () => {
  // A reader whose consumer creations all fail — as on nats-server 2.9 while a new consumer keeps
  // being placed on a node that died — made real with a user denied consumer creation.
  let guarded: NatsServerHandle;
  let writerNc: NatsConnection;
  let readerNc: NatsConnection;
  let writer: ForkResources;
  let reader: ForkResources;

  beforeAll(async () => {
    guarded = await startNatsServer({
      config: `authorization { users: [
        { user: writer, password: w }
        { user: reader, password: r, permissions: { publish: { deny: ["$JS.API.CONSUMER.CREATE.AGENT_FORK_EVENTS.>", "$JS.API.CONSUMER.CREATE.AGENT_FORK_EVENTS"] } } }
      ] }`,
    });
    writerNc = await connect({ servers: guarded.url, user: "writer", pass: "w" });
    writer = await ensureForkResources(writerNc);
    readerNc = await connect({ servers: guarded.url, user: "reader", pass: "r" });
    reader = await ensureForkResources(readerNc);
  });

  afterAll(async () => {
    await readerNc?.close();
    await writerNc?.close();
    await guarded?.stop();
  });

  it("follows with message gets: stored events, then live ones, in order, to the terminal event", async () => {
    const runId = "run-no-consumer";
    await publishTo(writer, runId, [1, 2, 3]);
    // Another run's events interleave in the stream: the gets must skip them.
    await publishTo(writer, "run-other", [1, 2]);
    // The reader's gets, seen on the API subject: the rest is published only after the reader asked
    // twice past event 3 — found nothing, waited, asked again — so it is read live, by polling.
    const gets = writerNc.subscribe(`$JS.API.STREAM.MSG.GET.${writer.subjects.streams.events}`);
    const seen: number[] = [];
    try {
      for await (const logged of readEventLog(reader, runId)) {
        seen.push(logged.event.seq);
        if (logged.event.seq !== 3) continue;
        const askedAfter = gets.getProcessed();
        void (async () => {
          for await (const _ of gets) if (gets.getProcessed() >= askedAfter + 2) break;
          await publishTo(writer, runId, [4, 5, 6], true);
        })();
      }
    } finally {
      gets.unsubscribe();
    }
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("without follow, stops at the last stored event; afterSeq skips what the caller has", async () => {
    const runId = "run-no-consumer-stored";
    await publishTo(writer, runId, [1, 2, 3, 4]);
    const seqs: number[] = [];
    for await (const logged of readEventLog(reader, runId, { follow: false, afterSeq: 2 }))
      seqs.push(logged.event.seq);
    expect(seqs).toEqual([3, 4]);
  });

  it("does not yield an event twice when it is stored twice (a stale attempt's copy)", async () => {
    const runId = "run-no-consumer-dup";
    await publishTo(writer, runId, [1, 2]);
    // The same seq stored again under another msg id, as a fence-less writer could: skipped.
    await writer.js.publish(writer.subjects.events(runId), forkEventCodec.encode(logEvent(runId, 2)));
    await publishTo(writer, runId, [3], true);
    const seqs: number[] = [];
    for await (const logged of readEventLog(reader, runId)) seqs.push(logged.event.seq);
    expect(seqs).toEqual([1, 2, 3]);
  });
});
