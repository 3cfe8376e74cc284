// A parent's result() across a lost connection: the run's ending is stored while the parent is cut off
// (its hint on core NATS is lost with the connection), and the parent, once reconnected, reads the log
// again and has it — without waiting for its hints' time to run out.
import { awaitTerminalEvent, ensureForkResources } from "@forkd/client";
import { emptyUsageTotals, eventMsgId, forkEventCodec, PROTOCOL_VERSION } from "@forkd/protocol";
import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { useNatsServer } from "../harness/nats.js";
import { startPartitionRelay } from "../harness/partition.js";

const server = useNatsServer();

function eventBytes(runId: string, seq: number, ending?: string): Uint8Array {
  const body =
    ending === undefined
      ? { type: "llm.delta", turn: 1, text: `delta ${seq}` }
      : { type: "aborted", reason: ending, usage: emptyUsageTotals() };
  return forkEventCodec.encode(
    forkEventCodec.decode(
      JSON.stringify({ v: PROTOCOL_VERSION, run_id: runId, seq, attempt: 1, ts: Date.now(), ...body }),
    ),
  );
}

describe("result() across a reconnect", () => {
  it("reads the log after a reconnect: an ending stored while the connection was away is not missed", async () => {
    const relay = await startPartitionRelay(server().url);
    const parent = await connect({ servers: relay.url, maxReconnectAttempts: -1, reconnectTimeWait: 50 });
    const daemon = await connect({ servers: server().url });
    try {
      const resources = await ensureForkResources(parent);
      const daemonSide = await ensureForkResources(daemon);
      const store = (seq: number, ending?: string) =>
        daemonSide.js.publish(daemonSide.subjects.events("run-away"), eventBytes("run-away", seq, ending), {
          msgID: eventMsgId("run-away", seq),
        });
      await store(1);
      // Hints alone for ten minutes: only the read after the reconnect can end this wait in time.
      const waiting = awaitTerminalEvent(resources, "run-away", { hintsForMs: 600_000 });
      // The wait subscribed and read the log once (the run had not ended): this connection's later
      // ping and read are answered after its own.
      await parent.flush();
      await resources.jsm.streams.getMessage(resources.subjects.streams.events, {
        last_by_subj: resources.subjects.events("run-away"),
      });
      relay.cut();
      await store(2, "ended while away"); // its hint waits in the cut link, and is lost with it
      relay.heal({ reset: true });
      expect((await waiting).event).toMatchObject({ reason: "ended while away", seq: 2 });
    } finally {
      await daemon.close();
      await parent.close();
      await relay.close();
    }
  });
});
