import { emptyUsageTotals, type TerminalForkEvent } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { EventSequencer } from "./events.js";
import { forkOutcomeFromTerminalEvent, outcomeToTerminalEvent } from "./terminal.js";
import type { TurnLoopStats } from "./turn-loop.js";

const stats: TurnLoopStats = {
  messages: [],
  finalText: "Scope: a\nFiles changed: x.ts, y.ts",
  turns: 2,
  toolUses: 3,
  usage: emptyUsageTotals(),
  durationMs: 40,
};

describe("terminal events", () => {
  it("maps every loop outcome to its terminal event and back to what the parent sees", () => {
    const sequencer = new EventSequencer({ runId: "run-1" });
    const roundTrip = (body: ReturnType<typeof outcomeToTerminalEvent>) =>
      forkOutcomeFromTerminalEvent(sequencer.stamp(body) as TerminalForkEvent);

    const completed = outcomeToTerminalEvent(
      { ...stats, status: "completed", stop: "end_turn" },
      { cacheShared: true },
    );
    expect(completed).toEqual({
      type: "completed",
      result: {
        final_text: stats.finalText,
        report: { scope: "a", files_changed: ["x.ts", "y.ts"] },
        usage: stats.usage,
        turns: 2,
        tool_uses: 3,
        duration_ms: 40,
        cache_shared: true,
        stop: "end_turn",
      },
    });
    expect(roundTrip(completed)).toMatchObject({ status: "completed", runId: "run-1" });

    const error = { code: "overloaded", message: "busy", retryable: true };
    const failed = outcomeToTerminalEvent({ ...stats, status: "failed", error }, { cacheShared: true });
    expect(failed).toEqual({ type: "failed", error, usage: stats.usage });
    expect(roundTrip(failed)).toMatchObject({ status: "failed", error });

    const timeoutError = { code: "timeout", message: "too slow", retryable: false };
    const timedOut = outcomeToTerminalEvent(
      { ...stats, status: "timeout", error: timeoutError },
      { cacheShared: true },
    );
    expect(timedOut.type).toBe("failed");
    expect(roundTrip(timedOut)).toMatchObject({ status: "timeout", error: timeoutError });

    const aborted = outcomeToTerminalEvent(
      { ...stats, status: "aborted", reason: "bye" },
      { cacheShared: false },
    );
    expect(aborted).toEqual({ type: "aborted", reason: "bye", usage: stats.usage });
    expect(roundTrip(aborted)).toMatchObject({ status: "killed", reason: "bye" });
  });

  it("carries a worktree commit and leaves out a report that is not there", () => {
    const commit = { sha: "abc", branch: "fork/run-1", files_changed: ["a.ts"] };
    const body = outcomeToTerminalEvent(
      { ...stats, finalText: "just text", status: "completed", stop: "max_turns" },
      { cacheShared: false, commit },
    );
    expect(body.type === "completed" && body.result).toMatchObject({ commit, stop: "max_turns" });
    expect(body.type === "completed" && "report" in body.result).toBe(false);
  });
});
