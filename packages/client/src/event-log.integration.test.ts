// readEventLog against a real nats-server: when its consumer is lost while events wait in the stream,
// the reader makes a new one and resumes at exactly the next event — no gap, no duplicate.
import { eventMsgId, type ForkEvent, forkEventCodec, PROTOCOL_VERSION } from "@forkd/protocol";
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

function delta(runId: string, seq: number): ForkEvent {
  return forkEventCodec.decode(
    new TextEncoder().encode(
      JSON.stringify({
        v: PROTOCOL_VERSION,
        run_id: runId,
        seq,
        attempt: 1,
        ts: Date.now(),
        type: "llm.delta",
        turn: 1,
        text: `delta ${seq}`,
      }),
    ),
  );
}

async function publish(runId: string, ...seqs: number[]): Promise<void> {
  for (const seq of seqs) {
    await resources.js.publish(resources.subjects.events(runId), forkEventCodec.encode(delta(runId, seq)), {
      msgID: eventMsgId(runId, seq),
    });
  }
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
