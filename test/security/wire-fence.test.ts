// Finding 6 of issue #11: the attempt fence must hold even when JetStream's deduplication answers
// before its expected-sequence check. Two attempts of one run race on a real nats-server.
import { ensureForkResources, type ForkResources } from "@forkd/client";
import { readStoredEvents } from "@forkd/client/internal";
import { DaemonError } from "@forkd/daemon";
import { RunEventPublisher } from "@forkd/daemon/internal";
import {
  emptyUsageTotals,
  eventMsgId,
  type ForkEventBody,
  forkEventCodec,
  PROTOCOL_VERSION,
} from "@forkd/protocol";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useNatsServer } from "../harness/nats.js";

const nats = useNatsServer();
let nc: NatsConnection;
let resources: ForkResources;

beforeAll(async () => {
  nc = await connect({ servers: nats().url });
  resources = await ensureForkResources(nc);
});

afterAll(async () => {
  await nc?.close();
});

const heartbeat = (turn: number): ForkEventBody => ({ type: "heartbeat", daemon_id: "d", turn });

function publisher(runId: string, attempt: number, lastSeq: number, lastStreamSeq: number) {
  return new RunEventPublisher({
    js: resources.js,
    subjects: resources.subjects,
    runId,
    attempt,
    position: { lastSeq, lastStreamSeq },
    publishTimeoutMs: 1_500,
    now: () => 1_000 * attempt,
  });
}

async function streamSeqOfLast(runId: string): Promise<number> {
  const events = await readStoredEvents(resources, runId);
  return events.at(-1)?.streamSeq ?? 0;
}

describe("the attempt fence", () => {
  it("fences a stale attempt whose publish is answered as a duplicate of the newer attempt's event", async () => {
    const runId = "fence-race-dup";
    const stale = publisher(runId, 1, 0, 0);
    await stale.publish(heartbeat(1));
    await stale.publish(heartbeat(2));
    // A redelivery: attempt 2 reads the log and continues it at seq 3.
    const current = publisher(runId, 2, 2, await streamSeqOfLast(runId));
    await current.publish(heartbeat(3));

    // The stale attempt wakes up and writes its seq 3: same msg id, so JetStream says "duplicate".
    const refused = await stale.publish(heartbeat(99)).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DaemonError);
    expect((refused as DaemonError).code).toBe("fenced");
    expect(stale.fenced).toBe(true);
    expect(stale.lastSeq).toBe(2);

    // The newer attempt goes on; the log is contiguous and holds only its seq 3 and 4.
    await current.publish(heartbeat(4));
    const log = (await readStoredEvents(resources, runId)).map((stored) => stored.event);
    expect(log.map((event) => [event.seq, event.attempt])).toEqual([
      [1, 1],
      [2, 1],
      [3, 2],
      [4, 2],
    ]);
  });

  it("fences on JetStream's typed wrong-last-sequence error when the msg id is new", async () => {
    const runId = "fence-race-seq";
    const first = publisher(runId, 1, 0, 0);
    await first.publish(heartbeat(1));
    // A writer that believes the log is empty on the stream but at seq 5: its seq 6 has a fresh msg id,
    // so only the expected-last-subject-sequence check can stop it.
    const stale = publisher(runId, 1, 5, 0);
    const refused = await stale.publish(heartbeat(2)).catch((error: unknown) => error);
    expect((refused as DaemonError).code).toBe("fenced");
    expect(stale.fenced).toBe(true);
    expect((await readStoredEvents(resources, runId)).map((stored) => stored.event.seq)).toEqual([1]);
  });

  it("accepts a duplicate ack when the stored event is its own earlier try (a lost ack)", async () => {
    const runId = "fence-own-retry";
    const body = heartbeat(1);
    // The first try was stored but its ack was lost: the exact bytes are already in the stream.
    const bytes = forkEventCodec.encode({
      ...body,
      v: PROTOCOL_VERSION,
      run_id: runId,
      seq: 1,
      attempt: 1,
      ts: 1_000,
    });
    await resources.js.publish(resources.subjects.events(runId), bytes, { msgID: eventMsgId(runId, 1) });

    const retrying = publisher(runId, 1, 0, 0);
    const event = await retrying.publish(body);
    expect(event.seq).toBe(1);
    expect(retrying.fenced).toBe(false);
    await retrying.publish(heartbeat(2));
    expect((await readStoredEvents(resources, runId)).map((stored) => stored.event.seq)).toEqual([1, 2]);
  });
});

describe("the end of a log", () => {
  it("is its terminal event: a heartbeat racing the end is refused, typed, and never stored", async () => {
    const runId = "terminal-is-last";
    const writer = publisher(runId, 1, 0, 0);
    await writer.publish(heartbeat(1));
    const completed = writer.publish({
      type: "failed",
      error: { code: "internal", message: "x", retryable: false },
      usage: emptyUsageTotals(),
    });
    // Issued after the terminal event, before it is stored: the race the heartbeat timer runs.
    const late = writer.publish(heartbeat(2)).catch((error: unknown) => error);
    await completed;
    expect(writer.ended).toBe(true);
    expect(await late).toMatchObject({ code: "run_ended" });
    const stored = (await readStoredEvents(resources, runId)).map((entry) => entry.event.type);
    expect(stored).toEqual(["heartbeat", "failed"]);
  });
});

describe("secrets in events (#11 finding 3)", () => {
  it("are replaced in whatever an event carries, model text and tool results alike", async () => {
    const runId = "secrets-scrubbed";
    const secret = "nats-password-0123456789";
    const writer = new RunEventPublisher({
      js: resources.js,
      subjects: resources.subjects,
      runId,
      attempt: 1,
      position: { lastSeq: 0, lastStreamSeq: 0 },
      secrets: [{ name: "NATS_PASSWORD", value: secret }],
    });
    await writer.publish({ type: "llm.delta", turn: 1, text: `the password is ${secret}.` });
    await writer.publish(heartbeat(2));
    const stored = await readStoredEvents(resources, runId);
    expect(JSON.stringify(stored.map((entry) => entry.event))).not.toContain(secret);
    expect(stored[0]!.event).toMatchObject({ text: "the password is [redacted NATS_PASSWORD]." });
  });
});
