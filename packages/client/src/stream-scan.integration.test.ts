// scanStream and consumeRange against a real nats-server: a scan reads exactly the matching messages
// stored when it began, in order, and ends even when what it was about to read has been removed
// under it — the case where a consumer has nothing to deliver and would wait forever.
import { type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureForkResources, type ForkResources } from "./resources.js";
import { consumeRange, type ScannedMessage, scanStream } from "./stream-scan.js";

let server: NatsServerHandle;
let nc: NatsConnection;
let resources: ForkResources;
let streamCount = 0;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  resources = await ensureForkResources(nc);
});

afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

/** A new stream on `scanN.>` and a function publishing `scanN.<subject>`, returning the sequence. */
async function freshStream(): Promise<{ name: string; put: (subject: string) => Promise<number> }> {
  streamCount += 1;
  const name = `SCAN_${streamCount}`;
  const prefix = `scan${streamCount}`;
  await resources.jsm.streams.add({ name, subjects: [`${prefix}.>`] });
  return {
    name,
    put: async (subject) => (await resources.js.publish(`${prefix}.${subject}`, subject)).seq,
  };
}

async function seqsOf(messages: AsyncIterable<ScannedMessage>): Promise<number[]> {
  const seqs: number[] = [];
  for await (const message of messages) seqs.push(message.seq);
  return seqs;
}

describe("consumeRange", () => {
  it("ends when every message of its range was removed before the consumer could deliver it", async () => {
    const { name, put } = await freshStream();
    const removed = [await put("a"), await put("a"), await put("a")];
    const last = await put("b");
    for (const seq of removed) await resources.jsm.streams.deleteMessage(name, seq, false);
    const filter = `scan${streamCount}.a`;

    const seqs = await seqsOf(
      consumeRange(resources, name, { filter, startSeq: removed[0] ?? 1, endSeq: last + 1, idleCheckMs: 50 }),
    );

    expect(seqs).toEqual([]);
  }, 15_000);

  it("reads what is left of a range in order, across pulls, and nothing at or after its end", async () => {
    const { name, put } = await freshStream();
    const seqs: number[] = [];
    for (let i = 0; i < 7; i++) seqs.push(await put(i % 2 === 0 ? "a" : "b"));
    const [, , third, , fifth, , seventh] = seqs;
    await resources.jsm.streams.deleteMessage(name, third ?? 0, false);
    const filter = `scan${streamCount}.a`;

    const read = await seqsOf(
      consumeRange(resources, name, { filter, startSeq: 1, endSeq: seventh ?? 0, batch: 1 }),
    );

    expect(read).toEqual([seqs[0], fifth]);
  }, 15_000);

  it("reads on by itself, each message once and in order, when its consumer is lost mid-range", async () => {
    const { name, put } = await freshStream();
    const stored: number[] = [];
    for (let i = 0; i < 6; i++) stored.push(await put("a"));
    const scan = consumeRange(resources, name, {
      filter: `scan${streamCount}.a`,
      startSeq: 1,
      endSeq: (stored.at(-1) ?? 0) + 1,
      batch: 1,
      idleCheckMs: 50,
    });

    const read: number[] = [];
    for await (const message of scan) {
      read.push(message.seq);
      // The server forgets the consumer: it delivers nothing more until the client notices, if ever.
      if (read.length === 1) {
        for await (const info of resources.jsm.consumers.list(name)) {
          await resources.jsm.consumers.delete(name, info.name);
        }
      }
    }

    expect(read).toEqual(stored);
  }, 15_000);
});

describe("consumeRange, asking the stream at every quiet moment", () => {
  it("reads each message once, in order, when its own reads and the consumer's deliveries interleave", async () => {
    const { name, put } = await freshStream();
    const stored: number[] = [];
    for (let i = 0; i < 40; i++) stored.push(await put("a"));

    const read = await seqsOf(
      consumeRange(resources, name, {
        filter: `scan${streamCount}.a`,
        startSeq: 1,
        endSeq: (stored.at(-1) ?? 0) + 1,
        batch: 4,
        idleCheckMs: 0,
      }),
    );

    expect(read).toEqual(stored);
  }, 15_000);
});

describe("scanStream", () => {
  it("stops at the last message stored when it began, whatever is written while it reads", async () => {
    const { name, put } = await freshStream();
    const before = [await put("a"), await put("a"), await put("a")];
    const filter = `scan${streamCount}.a`;

    const read: number[] = [];
    for await (const message of scanStream(resources, name, { filter, batch: 1 })) {
      read.push(message.seq);
      if (read.length === 1) for (let i = 0; i < 3; i++) await put("a");
    }

    expect(read).toEqual(before);
  }, 15_000);

  it("reads nothing from a range with no matching message", async () => {
    const { name, put } = await freshStream();
    await put("b");

    expect(await seqsOf(scanStream(resources, name, { filter: `scan${streamCount}.a` }))).toEqual([]);
  });
});
