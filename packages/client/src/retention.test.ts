import { queuedRunState, type RunState } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { isExpiredRun } from "./retention.js";

const run = (fields: Partial<RunState>): RunState => ({
  ...queuedRunState({ runId: "r", createdAt: 0, now: 0 }),
  ...fields,
});

describe("isExpiredRun", () => {
  it("takes a run that ended at or before the cutoff", () => {
    for (const status of ["completed", "failed", "aborted"] as const) {
      expect(isExpiredRun(run({ status, ended_at: 100, updated_at: 100 }), 100)).toBe(true);
      expect(isExpiredRun(run({ status, ended_at: 99, updated_at: 150 }), 100)).toBe(true);
    }
  });

  it("leaves a run that ended after the cutoff", () => {
    expect(isExpiredRun(run({ status: "completed", ended_at: 101, updated_at: 101 }), 100)).toBe(false);
  });

  it("never takes a queued or running run, however old", () => {
    expect(isExpiredRun(run({ status: "queued", updated_at: 1 }), 1_000_000)).toBe(false);
    expect(isExpiredRun(run({ status: "running", updated_at: 1, heartbeat_at: 1 }), 1_000_000)).toBe(false);
  });

  it("falls back on the last write when the end was not recorded", () => {
    expect(isExpiredRun(run({ status: "failed", updated_at: 100 }), 100)).toBe(true);
    expect(isExpiredRun(run({ status: "failed", updated_at: 101 }), 100)).toBe(false);
  });
});
