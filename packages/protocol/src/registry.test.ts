// The registry's one constructor of a first entry, and which statuses are final.
import { describe, expect, it } from "vitest";
import { TERMINAL_EVENT_TYPES } from "./events.js";
import {
  groupBudgetKey,
  groupSpendKey,
  isTerminalRunStatus,
  queuedRunState,
  RunStateSchema,
  RunStatusSchema,
  TERMINAL_RUN_STATUSES,
} from "./registry.js";

describe("queuedRunState", () => {
  it("names the run's group only when it has one", () => {
    expect(queuedRunState({ runId: "r1", createdAt: 1, now: 1, groupId: "g-7" }).group_id).toBe("g-7");
    expect(queuedRunState({ runId: "r1", createdAt: 1, now: 1 })).not.toHaveProperty("group_id");
  });

  it("is a valid entry: queued, never claimed, nothing published", () => {
    const state = queuedRunState({ runId: "r1", createdAt: 1000, now: 2000 });
    expect(state).toEqual({
      v: 1,
      run_id: "r1",
      status: "queued",
      attempt: 0,
      last_seq: 0,
      created_at: 1000,
      updated_at: 2000,
    });
    expect(RunStateSchema.parse(state)).toEqual(state);
  });

  it("records what the spec says of the run, and leaves out what it does not say", () => {
    const state = queuedRunState({
      runId: "r1",
      createdAt: 1000,
      now: 2000,
      specSeq: 7,
      parentAgentId: "parent",
      label: "child",
    });
    expect(state).toMatchObject({ spec_seq: 7, parent_agent_id: "parent", label: "child" });
    const bare = queuedRunState({ runId: "r1", createdAt: 1, now: 1, specSeq: undefined, label: undefined });
    expect(Object.keys(bare)).not.toContain("spec_seq");
    expect(Object.keys(bare)).not.toContain("label");
    expect(Object.keys(bare)).not.toContain("parent_agent_id");
  });
});

describe("terminal run statuses", () => {
  it("are exactly the types of the terminal events", () => {
    expect([...TERMINAL_RUN_STATUSES]).toEqual([...TERMINAL_EVENT_TYPES]);
    expect(RunStatusSchema.options.filter(isTerminalRunStatus)).toEqual(["completed", "failed", "aborted"]);
    expect(isTerminalRunStatus("queued")).toBe(false);
    expect(isTerminalRunStatus("running")).toBe(false);
  });
});

describe("group keys in the runs bucket", () => {
  it("keeps a group's budget and spend apart from every run id, and from each other", () => {
    expect(groupBudgetKey("g-7")).toBe("budget.g-7");
    expect(groupSpendKey("g-7")).toBe("spend.g-7");
  });
});
