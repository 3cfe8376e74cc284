import type { LoggedEvent } from "@forkd/client";
import { emptyUsageTotals, type ForkEvent, queuedRunState, type RunState } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { ATTEMPT_MARGIN, priorAttempt, registryDisagrees } from "./registry-trust.js";

const RUN_ID = "0194f5b2-6c1e-7a3b-8c4d-5e6f7a8b9c0d";

function logged(body: Pick<ForkEvent, "type"> & Record<string, unknown>, attempt: number): LoggedEvent {
  const event = { v: 1, run_id: RUN_ID, seq: 3, ts: 1, attempt, ...body } as unknown as ForkEvent;
  return { event, streamSeq: 17 };
}

const running = logged({ type: "heartbeat", daemon_id: "d", turn: 1 }, 2);
const ended = logged({ type: "aborted", reason: "x", usage: emptyUsageTotals() }, 2);

function state(change: Partial<RunState>): RunState {
  return { ...queuedRunState({ runId: RUN_ID, createdAt: 1, now: 1 }), ...change };
}

describe("registryDisagrees", () => {
  it("accepts an entry that names the spec in hand, or none, on a live run", () => {
    expect(registryDisagrees(state({ spec_seq: 5 }), 5, running)).toBe(false);
    expect(registryDisagrees(state({}), 5, null)).toBe(false);
    expect(registryDisagrees(state({ status: "running", spec_seq: 5 }), 5, running)).toBe(false);
  });

  it("flags another spec, or an end the log does not hold", () => {
    expect(registryDisagrees(state({ spec_seq: 4 }), 5, running)).toBe(true);
    expect(registryDisagrees(state({ spec_seq: 6 }), 5, null)).toBe(true);
    for (const status of ["completed", "failed", "aborted"] as const)
      expect(registryDisagrees(state({ status, spec_seq: 5 }), 5, running)).toBe(true);
  });

  it("says nothing once the log has ended: the entry is then an earlier spec's, and true", () => {
    expect(registryDisagrees(state({ status: "aborted", spec_seq: 4 }), 5, ended)).toBe(false);
  });
});

describe("priorAttempt", () => {
  it("takes the registry's attempt, or the log's when that is higher", () => {
    expect(priorAttempt(0, 1, null)).toBe(0);
    expect(priorAttempt(3, 4, running)).toBe(3);
    expect(priorAttempt(0, 4, running)).toBe(2);
  });

  it("trusts a registry attempt up to the deliveries plus the margin, and not one past it", () => {
    expect(priorAttempt(7 + ATTEMPT_MARGIN, 7, running)).toBe(7 + ATTEMPT_MARGIN);
    expect(priorAttempt(7 + ATTEMPT_MARGIN + 1, 7, running)).toBe(2);
    expect(priorAttempt(Number.MAX_SAFE_INTEGER, 1, null)).toBe(0);
  });
});
