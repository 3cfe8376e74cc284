import type { ForkEvent, ForkEventBody } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { INTERRUPTED_TOOL_RESULT } from "./assistant-turn.js";
import { createForkPrefix } from "./cache-safe-params.js";
import { EventLogError } from "./errors.js";
import { EventSequencer } from "./events.js";
import { buildForkedRequest } from "./forked-request.js";
import { rebuildRunState } from "./resume.js";
import { type TestDispatcher, testDispatcher } from "./test-support/dispatcher.js";
import { loadFixture } from "./test-support/fixtures.js";
import {
  ScriptedLlmClient,
  type ScriptStep,
  textReply,
  toolReply,
  usage,
} from "./test-support/scripted-llm.js";
import { runTurnLoop, type TurnLoopOptions } from "./turn-loop.js";

type Block = Record<string, unknown>;
const reminder = "Stay on task.";

function initialRequest() {
  const fixture = loadFixture("4k");
  return buildForkedRequest(createForkPrefix(fixture.request, fixture.response), {
    runId: "run-1",
    directive: "d",
    systemReminder: reminder,
  });
}

function script(): ScriptStep[] {
  return [
    toolReply(
      [
        { id: "t1", name: "Echo", input: { n: 1 } },
        { id: "t2", name: "Echo", input: { n: 2 } },
        { id: "t3", name: "Echo", input: { n: 3 } },
      ],
      { usage: usage({ input_tokens: 100, output_tokens: 10 }) },
    ),
    toolReply([{ id: "t4", name: "Echo", input: { n: 4 } }], {
      usage: usage({ input_tokens: 200, output_tokens: 20 }),
    }),
    textReply("all done", { usage: usage({ input_tokens: 300, output_tokens: 30 }) }),
  ];
}

async function runLogged(
  steps: ScriptStep[],
  extra: Partial<Omit<TurnLoopOptions, "dispatcher">> & { dispatcher?: TestDispatcher } = {},
  firstSeq = 1,
) {
  const forked = initialRequest();
  const sequencer = new EventSequencer({ runId: "run-1", firstSeq, clock: { now: () => 1_000 } });
  const events: ForkEvent[] = [];
  const dispatcher = extra.dispatcher ?? testDispatcher();
  const llm = new ScriptedLlmClient(steps);
  const outcome = await runTurnLoop({
    runId: "run-1",
    request: forked.request,
    llm,
    dispatcher,
    cwd: "/tmp",
    systemReminder: reminder,
    forkBreakpoint: forked.breakpoint,
    emit: (body: ForkEventBody) => events.push(sequencer.stamp(body)),
    clock: { now: () => 1_000 },
    ...extra,
  });
  return { outcome, events, llm, dispatcher, forked };
}

describe("rebuildRunState", () => {
  it("rebuilds the whole conversation, turns, tool uses and usage of a finished log", async () => {
    const full = await runLogged(script());
    const withoutTerminal = full.events;
    const state = rebuildRunState(full.forked.request, withoutTerminal, { systemReminder: reminder });
    expect(JSON.stringify(state.messages)).toBe(JSON.stringify(full.outcome.messages));
    expect(state).toMatchObject({
      turns: 3,
      toolUses: 4,
      lastSeq: withoutTerminal.length,
      lastAttempt: 1,
      terminal: null,
    });
    expect(state.turnUsages.map((u) => [u.turn, u.model, u.usage.input_tokens])).toEqual([
      [1, "claude-sonnet-4-6", 100],
      [2, "claude-sonnet-4-6", 200],
      [3, "claude-sonnet-4-6", 300],
    ]);
    expect(state.pending).toMatchObject({ turn: 3, stopReason: "end_turn", ledger: [] });
  });

  it("continues after a crash at every point and ends with the same conversation and usage", async () => {
    const full = await runLogged(script());
    for (let cut = 1; cut < full.events.length; cut++) {
      const log = full.events.slice(0, cut);
      const state = rebuildRunState(full.forked.request, log, { systemReminder: reminder });
      const remaining = script().slice(state.turns);
      // Echo may be repeated, so a call cut between tool.call and tool.result runs again; the
      // interrupted-call report is the next test's.
      const dispatcher = testDispatcher({ safeToRepeat: ["Echo"] });
      const resumed = await runLogged(remaining, { resume: state, dispatcher }, state.lastSeq + 1);
      expect(JSON.stringify(resumed.outcome.messages), `cut after seq ${cut}`).toBe(
        JSON.stringify(full.outcome.messages),
      );
      expect(resumed.outcome).toMatchObject({
        status: "completed",
        turns: 3,
        toolUses: 4,
        finalText: "all done",
      });
      expect(resumed.outcome.usage).toEqual(full.outcome.usage);
      expect(resumed.events[0]?.seq ?? state.lastSeq + 1).toBe(state.lastSeq + 1);
      // A call with a recorded result is never run again.
      const recorded = new Set(
        log.filter((e) => e.type === "tool.result").map((e) => (e as { tool_use_id: string }).tool_use_id),
      );
      for (const call of resumed.dispatcher.executed) expect(recorded.has(call.id)).toBe(false);
    }
  });

  it("keeps recorded results, reports an interrupted call, and runs the calls that never started", async () => {
    const full = await runLogged(script());
    const cut = full.events.findIndex((e) => e.type === "tool.call" && e.tool_use_id === "t2") + 1;
    const state = rebuildRunState(full.forked.request, full.events.slice(0, cut), {
      systemReminder: reminder,
    });
    expect(state.pending!.ledger.map((entry) => [entry.call.id, entry.state])).toEqual([
      ["t1", "recorded"],
      ["t2", "interrupted"],
      ["t3", "not_started"],
    ]);
    const resumed = await runLogged(script().slice(1), { resume: state }, state.lastSeq + 1);
    expect(resumed.dispatcher.executed.map((call) => call.id)).toEqual(["t3", "t4"]);
    const answers = resumed.outcome.messages[full.forked.request.messages.length + 1]!.content as Block[];
    expect(answers[1]).toEqual({
      type: "tool_result",
      tool_use_id: "t2",
      content: INTERRUPTED_TOOL_RESULT,
      is_error: true,
    });
    expect(resumed.events[0]).toMatchObject({
      type: "tool.result",
      tool_use_id: "t2",
      interrupted: true,
      is_error: true,
    });
    expect(resumed.outcome.toolUses).toBe(4);
  });

  it("runs an interrupted call again when the dispatcher says repeating it is safe", async () => {
    const full = await runLogged(script());
    const cut = full.events.findIndex((e) => e.type === "tool.call" && e.tool_use_id === "t2") + 1;
    const state = rebuildRunState(full.forked.request, full.events.slice(0, cut), {
      systemReminder: reminder,
    });
    const resumed = await runLogged(script().slice(1), {
      resume: state,
      dispatcher: testDispatcher({ safeToRepeat: ["Echo"] }),
    });
    expect(resumed.dispatcher.executed.map((call) => call.id)).toEqual(["t2", "t3", "t4"]);
    expect(JSON.stringify(resumed.outcome.messages)).toBe(JSON.stringify(full.outcome.messages));
  });

  it("sends an llm.request without its llm.message again", async () => {
    const full = await runLogged(script());
    const cut = full.events.findIndex((e) => e.type === "llm.request" && e.turn === 2) + 1;
    const state = rebuildRunState(full.forked.request, full.events.slice(0, cut), {
      systemReminder: reminder,
    });
    expect(state.pending).toBeNull();
    expect(state.turns).toBe(1);
    const resumed = await runLogged(script().slice(1), { resume: state }, state.lastSeq + 1);
    expect(resumed.events[0]).toMatchObject({ type: "llm.request", turn: 2, seq: cut + 1 });
    expect(resumed.llm.requests[0]).toBe(full.llm.requests[1]);
  });

  it("tolerates duplicates and disorder, refuses gaps, other runs and an ended run", async () => {
    const full = await runLogged(script());
    const shuffled = [...full.events].reverse();
    expect(rebuildRunState(full.forked.request, [...shuffled, full.events[2]!]).turns).toBe(3);
    expect(() =>
      rebuildRunState(
        full.forked.request,
        full.events.filter((e) => e.seq !== 3),
      ),
    ).toThrow(EventLogError);
    const foreign = full.events.map((e, i) => (i === 4 ? { ...e, run_id: "run-2" } : e));
    expect(() => rebuildRunState(full.forked.request, foreign)).toThrow(/belongs to run run-2/);
    const sequencer = new EventSequencer({ runId: "run-1", firstSeq: full.events.length + 1 });
    const ended = [
      ...full.events,
      sequencer.stamp({ type: "aborted", reason: "x", usage: full.outcome.usage }),
    ];
    const state = rebuildRunState(full.forked.request, ended);
    expect(state.terminal?.type).toBe("aborted");
    await expect(runLogged([], { resume: state })).rejects.toThrow(EventLogError);
  });

  it("refuses a turn that started while calls of the previous one had no result", async () => {
    const full = await runLogged(script());
    const log = full.events.filter((e) => !(e.type === "tool.result" && e.tool_use_id === "t2"));
    const renumbered = log.map((e, i) => ({ ...e, seq: i + 1 })) as ForkEvent[];
    expect(() => rebuildRunState(full.forked.request, renumbered)).toThrow(
      /calls t2 of turn 1 have no result/,
    );
  });

  it("rebuilds nothing from an empty log", () => {
    const forked = initialRequest();
    const state = rebuildRunState(forked.request, []);
    expect(state).toMatchObject({ turns: 0, toolUses: 0, pending: null, lastSeq: 0, startedAt: null });
    expect(state.messages).toEqual(forked.request.messages);
  });
});
