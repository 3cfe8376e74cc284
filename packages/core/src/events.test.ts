import { type ForkEventBody, ForkEventSchema } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { EventSequencer, LlmDeltaBatcher } from "./events.js";

describe("EventSequencer", () => {
  it("stamps valid events with contiguous seqs from the first seq", () => {
    let now = 1000;
    const sequencer = new EventSequencer({
      runId: "run-1",
      attempt: 2,
      firstSeq: 7,
      clock: { now: () => now++ },
    });
    expect(sequencer.lastSeq).toBe(6);
    const first = sequencer.stamp({ type: "started", model: "m", prefix_hash: null, cache_shared: false });
    const second = sequencer.stamp({ type: "llm.request", turn: 1, model: "m", message_count: 3 });
    expect(first).toMatchObject({ v: 1, run_id: "run-1", seq: 7, attempt: 2, ts: 1000, type: "started" });
    expect(second).toMatchObject({ seq: 8, ts: 1001 });
    expect(ForkEventSchema.parse(first)).toEqual(first);
    expect(sequencer.nextSeq).toBe(9);
    expect(() => new EventSequencer({ runId: "r", firstSeq: 0 })).toThrow(RangeError);
  });
});

describe("LlmDeltaBatcher", () => {
  it("sends at once when the batch is full and flushes the rest", () => {
    const sent: ForkEventBody[] = [];
    const batcher = new LlmDeltaBatcher(3, (event) => sent.push(event), { maxBytes: 10, maxDelayMs: 60_000 });
    batcher.push("hello ");
    batcher.push("world!");
    batcher.push("tail");
    expect(sent).toEqual([{ type: "llm.delta", turn: 3, text: "hello world!" }]);
    batcher.flush();
    batcher.flush();
    expect(sent).toEqual([
      { type: "llm.delta", turn: 3, text: "hello world!" },
      { type: "llm.delta", turn: 3, text: "tail" },
    ]);
  });

  it("sends a partial batch after the delay", async () => {
    const sent = new Promise<ForkEventBody>((resolve) => {
      const batcher = new LlmDeltaBatcher(1, resolve, { maxDelayMs: 5 });
      batcher.push("a");
      batcher.push("b");
    });
    expect(await sent).toEqual({ type: "llm.delta", turn: 1, text: "ab" });
  });
});
