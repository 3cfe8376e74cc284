import type { ForkEvent } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import {
  cacheMissOf,
  cacheReadShare,
  describeEvent,
  eventLine,
  formatCacheMiss,
  RunTracker,
  rowCells,
} from "./run-tracker.js";

const base = { v: 1 as const, run_id: "run-1", attempt: 1 };
const usage = {
  input_tokens: 400,
  cache_creation_input_tokens: 200,
  cache_read_input_tokens: 44_000,
  output_tokens: 150,
};
const totals = {
  input_tokens: 400,
  cache_write_5m_tokens: 200,
  cache_write_1h_tokens: 0,
  cache_read_tokens: 44_000,
  output_tokens: 150,
  llm_calls: 1,
  cost_usd: 0.0173,
};

const events: ForkEvent[] = [
  {
    ...base,
    seq: 1,
    ts: 1000,
    type: "accepted",
    daemon_id: "d-1",
    queue_wait_ms: 5,
    delivery: 1,
    resumed: false,
  },
  {
    ...base,
    seq: 2,
    ts: 1010,
    type: "started",
    model: "claude-sonnet-4-5",
    prefix_hash: "abc",
    cache_shared: true,
  },
  { ...base, seq: 3, ts: 1020, type: "llm.request", turn: 1, model: "claude-sonnet-4-5", message_count: 113 },
  { ...base, seq: 4, ts: 1300, type: "llm.delta", turn: 1, text: "x".repeat(400) },
  {
    ...base,
    seq: 5,
    ts: 1700,
    type: "llm.message",
    turn: 1,
    message: { role: "assistant", content: [{ type: "text", text: "done" }] },
    stop_reason: "end_turn",
    usage,
  },
  {
    ...base,
    seq: 6,
    ts: 1710,
    type: "completed",
    result: {
      final_text: "done",
      usage: totals,
      turns: 1,
      tool_uses: 0,
      duration_ms: 710,
      cache_shared: true,
      stop: "end_turn",
    },
  },
];

describe("RunTracker", () => {
  it("follows a run from accepted to completed", () => {
    const tracker = new RunTracker();
    const row = tracker.row("run-1", "slice 1");
    for (const event of events.slice(0, 4)) tracker.apply(event);
    expect(row).toMatchObject({ status: "running", daemonId: "d-1", turn: 1, model: "claude-sonnet-4-5" });
    expect(row.activity).toBe("streaming ~100 tokens");
    tracker.apply(events[4]!);
    expect(row.usage).toMatchObject({
      input_tokens: 400,
      cache_read_tokens: 44_000,
      output_tokens: 150,
      llm_calls: 1,
    });
    expect(row.usage.cost_usd).toBeGreaterThan(0);
    tracker.apply(events[5]!);
    expect(row).toMatchObject({ status: "completed", finalText: "done", endedAt: 1710 });
    expect(row.usage).toEqual(totals);
    expect(cacheReadShare(row.usage)).toBeCloseTo(44_000 / 44_600);
    expect(rowCells(row, 5000)).toEqual([
      "completed",
      "d-1",
      "turn 1",
      "44.8k tok",
      "98.7% cached",
      "$0.0173",
      "710ms",
      "",
    ]);
  });

  it("ignores an event it has already applied (replays, redeliveries)", () => {
    const tracker = new RunTracker();
    for (const event of events) expect(tracker.apply(event)).toBe(true);
    expect(tracker.apply(events[4]!)).toBe(false);
    expect(tracker.rows()).toHaveLength(1);
    expect(tracker.rows()[0]!.usage).toEqual(totals);
  });

  it("shows a failed run with code timeout as timeout, and keeps why", () => {
    const tracker = new RunTracker();
    tracker.apply({
      ...base,
      seq: 1,
      ts: 1,
      type: "failed",
      error: { code: "timeout", message: "run exceeded 1000 ms", retryable: false },
      usage: totals,
    });
    expect(tracker.rows()[0]).toMatchObject({ status: "timeout", problem: "timeout: run exceeded 1000 ms" });
  });
});

describe("event lines", () => {
  it("say what each event means in one line", () => {
    expect(describeEvent(events[0]!)).toBe("by d-1 (attempt 1, delivery 1, queued 5ms)");
    expect(describeEvent(events[4]!)).toBe(
      "turn 1, in 400, cache write 200, cache read 44,000, out 150; stop end_turn",
    );
    const line = eventLine(events[5]!, "child 1");
    expect(line).toMatch(/^\d\d:\d\d:\d\d\.\d{3} child 1 #6 completed 1 turn, 0 tool uses, 710ms; /);
    expect(line).not.toContain("\n");
  });
});

describe("cache misses", () => {
  const miss: ForkEvent = {
    ...base,
    seq: 6,
    ts: 1710,
    type: "cache.break",
    turn: 1,
    layer: "tools",
    prompt_tokens: 44_600,
    cache_read_tokens: 0,
    detail: "the tools layer differs from the parent's",
    cause: "tools",
    expected_read_tokens: 44_000,
    missed_tokens: 44_000,
    miss_cost_usd: 0.1518,
    provider_reason: { type: "tools_changed", cache_missed_input_tokens: 43_900 },
  };

  it("show the cache share and the miss's layer and cost in the live row", () => {
    const tracker = new RunTracker();
    for (const event of events.slice(0, 5)) tracker.apply(event);
    const cached = rowCells(tracker.rows()[0]!, 2000)[4];
    expect(cached).toBe("98.7% cached");
    tracker.apply(miss);
    expect(tracker.rows()[0]!.cacheMiss).toEqual({
      cause: "tools",
      missedTokens: 44_000,
      costUsd: 0.1518,
      providerReason: "tools_changed",
    });
    expect(rowCells(tracker.rows()[0]!, 2000)[4]).toBe("98.7% cached, miss tools, $0.1518");
  });

  it("say expired or evicted, the provider's reason when it differs, and read an older writer's event", () => {
    const expired = { ...miss, layer: "none" as const, cause: "expired_or_evicted" };
    expect(formatCacheMiss(cacheMissOf(expired))).toBe(
      "miss expired or evicted, $0.1518 (provider: tools_changed)",
    );
    const older: ForkEvent = {
      ...base,
      seq: 6,
      ts: 1710,
      type: "cache.break",
      turn: 1,
      layer: "system",
      prompt_tokens: 9_000,
      cache_read_tokens: 10,
      detail: "d",
    };
    expect(describeEvent(older)).toBe("turn 1, miss system: d");
    expect(describeEvent(miss)).toBe(
      "turn 1, miss tools, $0.1518: the tools layer differs from the parent's",
    );
  });
});
