// The chaos checker finds each broken invariant it is there for, and nothing in a sound log: a
// checker that passes everything would make every chaos run look clean.
import type { ForkEvent } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { checkChaosEvidence, checkRunLog } from "./checker.js";

const usage = { input_tokens: 10, cache_read_input_tokens: 4000, output_tokens: 30 };
const billed = {
  input_tokens: 20,
  cache_write_5m_tokens: 0,
  cache_write_1h_tokens: 0,
  cache_read_tokens: 8000,
  output_tokens: 60,
  llm_calls: 2,
};

/** A sound two-turn log (only the fields the checker reads are filled in). */
function soundLog(): ForkEvent[] {
  const events = [
    { type: "accepted", attempt: 1 },
    { type: "llm.request", turn: 1 },
    { type: "llm.message", turn: 1, usage },
    { type: "tool.call", turn: 1 },
    { type: "tool.result", turn: 1 },
    { type: "accepted", attempt: 2 },
    { type: "llm.request", turn: 2 },
    { type: "llm.message", turn: 2, usage },
    { type: "completed", result: { usage: billed } },
  ];
  return events.map((event, index) => ({ ...event, seq: index + 1 }) as unknown as ForkEvent);
}

const invariantsOf = (log: ForkEvent[], tools = 1) => checkRunLog("r", log, tools).map((v) => v.invariant);

describe("the chaos checker", () => {
  it("finds nothing in a sound log", () => {
    expect(checkRunLog("r", soundLog(), 1)).toEqual([]);
  });

  it("finds a gap and a repeated seq", () => {
    const gap = soundLog().filter((event) => event.seq !== 4);
    expect(invariantsOf(gap)).toEqual(["contiguous_seq"]);
    const log = soundLog();
    (log[4] as { seq: number }).seq = 4;
    expect(invariantsOf(log)).toEqual(["contiguous_seq"]);
  });

  it("finds a log without an end, and one with two ends or an event after its end", () => {
    expect(invariantsOf(soundLog().slice(0, -1))).toEqual(["accepted_spec_ended"]);
    const twice = soundLog();
    twice.push({ ...twice.at(-1)!, seq: twice.length + 1 } as ForkEvent);
    expect(invariantsOf(twice)).toEqual(["one_terminal_event"]);
    const after = soundLog();
    after.push({ type: "heartbeat", seq: after.length + 1 } as unknown as ForkEvent);
    expect(invariantsOf(after)).toEqual(["accepted_spec_ended"]);
  });

  it("finds a tool run twice, exactly above once", () => {
    expect(invariantsOf(soundLog(), 2)).toEqual(["tool_executed_once"]);
    expect(invariantsOf(soundLog(), 0)).toEqual([]);
  });

  it("finds a turn paid twice, a bill short of the responses recorded, a call billed but never asked", () => {
    const log = soundLog();
    (log[7] as { turn: number }).turn = 1;
    expect(invariantsOf(log)).toEqual(["turn_paid_once"]);
    const underbilled = soundLog();
    (underbilled.at(-1) as unknown as { result: { usage: typeof billed } }).result.usage = {
      ...billed,
      output_tokens: 59,
    };
    expect(checkRunLog("r", underbilled, 1)).toEqual([
      { runId: "r", invariant: "bill_matches_log", detail: "output_tokens billed 59, recorded 60" },
    ]);
    const phantom = soundLog();
    (phantom.at(-1) as unknown as { result: { usage: typeof billed } }).result.usage = {
      ...billed,
      llm_calls: 3,
    };
    expect(checkRunLog("r", phantom, 1)).toEqual([
      { runId: "r", invariant: "bill_matches_log", detail: "3 calls billed, 2 requests logged" },
    ]);
  });

  it("accepts a bill above the recorded responses by a call that was cut and resent", () => {
    const log = soundLog();
    log.splice(6, 0, { type: "llm.request", turn: 2 } as unknown as ForkEvent);
    const renumbered = log.map((event, index) => ({ ...event, seq: index + 1 }) as ForkEvent);
    (renumbered.at(-1) as unknown as { result: { usage: typeof billed } }).result.usage = {
      ...billed,
      input_tokens: 30,
      llm_calls: 3,
    };
    expect(checkRunLog("r", renumbered, 1)).toEqual([]);
  });

  it("counts an accepted spec with no stored log as not ended", () => {
    expect(
      checkChaosEvidence({ acceptedRunIds: ["lost"], logs: new Map(), toolExecutions: new Map() }),
    ).toEqual([{ runId: "lost", invariant: "accepted_spec_ended", detail: "the log ends with nothing" }]);
  });
});
