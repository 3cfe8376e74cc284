import type { ForkEvent, ForkEventBody, MessageParam } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { createForkPrefix } from "./cache-safe-params.js";
import { buildForkedRequest } from "./forked-request.js";
import { type LlmClient, LlmError } from "./llm-client.js";
import { rebuildRunState } from "./resume.js";
import { testDispatcher } from "./test-support/dispatcher.js";
import { loadFixture } from "./test-support/fixtures.js";
import { ScriptedLlmClient, type ScriptStep, textReply, toolReply } from "./test-support/scripted-llm.js";
import { type SteeringMessage, type TurnBoundary, withSteering } from "./turn-boundary.js";
import { runTurnLoop } from "./turn-loop.js";

function forked() {
  const fixture = loadFixture("4k");
  const prefix = createForkPrefix(fixture.request, fixture.response);
  return buildForkedRequest(prefix, { runId: "run-1", directive: "Look around." });
}

/** A boundary the test drives: a stop reason and steering messages it sets between turns. */
function testBoundary() {
  const state: { stop?: string; queue: SteeringMessage[] } = { queue: [] };
  const boundary: TurnBoundary = {
    stopRequested: () => state.stop,
    takeSteering: () => state.queue.splice(0),
  };
  return { state, boundary };
}

function setup(steps: ScriptStep[], boundary: TurnBoundary, onTool?: () => void) {
  const request = forked().request;
  const llm = new ScriptedLlmClient(steps);
  const dispatcher = testDispatcher();
  const execute = dispatcher.execute.bind(dispatcher);
  dispatcher.execute = async (call, context) => {
    onTool?.();
    return execute(call, context);
  };
  const events: ForkEventBody[] = [];
  const run = () =>
    runTurnLoop({
      runId: "run-1",
      request,
      llm,
      dispatcher,
      cwd: "/tmp",
      boundary,
      emit: (e) => events.push(e),
    });
  return { request, llm, dispatcher, events, run };
}

/** Stamps bodies into a log, as a daemon would, for the resume rebuild. */
function asLog(bodies: ForkEventBody[]): ForkEvent[] {
  return bodies.map(
    (body, index) => ({ ...body, v: 1, run_id: "run-1", seq: index + 1, attempt: 1, ts: 1 }) as ForkEvent,
  );
}

describe("turn boundaries", () => {
  it("a graceful stop lets the running tool finish, starts no other and no new turn", async () => {
    const { state, boundary } = testBoundary();
    const t = setup(
      [
        toolReply([
          { id: "t1", name: "Echo", input: { n: 1 } },
          { id: "t2", name: "Echo", input: { n: 2 } },
        ]),
        textReply("never"),
      ],
      boundary,
      () => {
        state.stop = "enough";
      },
    );
    const outcome = await t.run();
    expect(outcome).toMatchObject({ status: "completed", stop: "stopped", stopReason: "enough", turns: 1 });
    expect(t.dispatcher.executed.map((call) => call.id)).toEqual(["t1"]);
    expect(t.llm.requests).toHaveLength(1);
  });

  it("adds a steering message to the next request, after the tool results, with a steered event first", async () => {
    const { state, boundary } = testBoundary();
    const t = setup([toolReply([{ id: "t1", name: "Echo", input: {} }]), textReply("done")], boundary, () => {
      state.queue.push({ id: "s1", text: "Check the codec too.", by: "me" });
    });
    const outcome = await t.run();
    expect(outcome).toMatchObject({ status: "completed", stop: "end_turn", turns: 2 });
    const last = stripCacheControl(t.llm.lastRequest().messages.at(-1)!);
    expect(last.role).toBe("user");
    expect(last.content).toEqual([
      { type: "tool_result", tool_use_id: "t1", content: "{}" },
      { type: "text", text: "Check the codec too." },
    ]);
    const kinds = t.events.map((event) => event.type);
    expect(kinds.indexOf("steered")).toBe(kinds.lastIndexOf("llm.request") - 1);
    expect(t.events.find((event) => event.type === "steered")).toMatchObject({
      turn: 2,
      steer_id: "s1",
      by: "me",
    });
    // The rebuild from the log makes the same conversation the loop sent.
    const rebuilt = rebuildRunState(t.request, asLog(t.events.slice(0, kinds.lastIndexOf("llm.request"))));
    expect(rebuilt.messages.map(stripCacheControl)).toEqual(
      t.llm.lastRequest().messages.map(stripCacheControl),
    );
  });

  it("gives a model that ended its turn one more turn for a steering message", async () => {
    const { state, boundary } = testBoundary();
    const llm: ScriptStep[] = [textReply("first answer"), textReply("steered answer")];
    const t = setup(llm, boundary);
    state.queue.push({ id: "s1", text: "early" });
    const runPromise = t.run();
    const outcome = await runPromise;
    // Taken before turn 1: merged into the directive's user message.
    expect(outcome).toMatchObject({ finalText: "first answer", turns: 1 });
    const again = setup([textReply("first answer"), textReply("steered answer")], boundary);
    let sent = 0;
    const originalCreate = again.llm.createMessage.bind(again.llm);
    again.llm.createMessage = async (request, options) => {
      const response = await originalCreate(request, options);
      if (sent++ === 0) state.queue.push({ id: "s2", text: "one more thing" });
      return response;
    };
    const second = await again.run();
    expect(second).toMatchObject({
      status: "completed",
      stop: "end_turn",
      finalText: "steered answer",
      turns: 2,
    });
    expect(stripCacheControl(again.llm.lastRequest().messages.at(-1)!)).toEqual({
      role: "user",
      content: [{ type: "text", text: "one more thing" }],
    });
    const rebuilt = rebuildRunState(
      again.request,
      asLog(again.events.slice(0, again.events.map((e) => e.type).lastIndexOf("llm.request"))),
    );
    expect(rebuilt.messages.at(-1)).toEqual({
      role: "user",
      content: [{ type: "text", text: "one more thing" }],
    });
    expect(rebuilt.pending).toBeNull();
  });

  it("withSteering never changes a message in place", () => {
    const user = Object.freeze({ role: "user", content: "hi" }) as MessageParam;
    const messages: MessageParam[] = [user];
    withSteering(messages, "more");
    expect(messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "hi" },
          { type: "text", text: "more" },
        ],
      },
    ]);
    expect(user.content).toBe("hi");
  });
});

describe("a call the stop reached before it was sent (waiting for a call slot)", () => {
  /** A client whose call waits for a slot until `stop` comes, then is refused unsent. */
  function waitingClient(stop: () => void): LlmClient {
    return {
      createMessage: async () => {
        stop();
        throw new LlmError("not_started", "the run was stopped while its call waited for a slot");
      },
    };
  }
  const run = (llm: LlmClient, boundary: TurnBoundary, events: ForkEventBody[] = []) =>
    runTurnLoop({
      runId: "run-1",
      request: forked().request,
      llm,
      dispatcher: testDispatcher(),
      cwd: "/tmp",
      boundary,
      emit: (e) => events.push(e),
    });

  it("ends the run stopped, with no turn taken", async () => {
    const { state, boundary } = testBoundary();
    const events: ForkEventBody[] = [];
    const stopAsked = () => {
      state.stop = "enough";
    };
    const outcome = await run(waitingClient(stopAsked), boundary, events);
    expect(outcome).toMatchObject({ status: "completed", stop: "stopped", stopReason: "enough", turns: 0 });
    expect(events.some((event) => event.type === "llm.message")).toBe(false);
  });

  it("fails the run when no stop was asked for: the refusal is not the loop's to hide", async () => {
    const { boundary } = testBoundary();
    expect(
      await run(
        waitingClient(() => undefined),
        boundary,
      ),
    ).toMatchObject({ status: "failed" });
  });

  it("fails the run on any other refusal, even with a stop asked for", async () => {
    const { state, boundary } = testBoundary();
    const llm: LlmClient = {
      createMessage: async () => {
        state.stop = "enough";
        throw new LlmError("overloaded", "busy");
      },
    };
    expect(await run(llm, boundary)).toMatchObject({ status: "failed" });
  });
});

function stripCacheControl(message: MessageParam): MessageParam {
  return JSON.parse(JSON.stringify(message), (key, value) =>
    key === "cache_control" ? undefined : value,
  ) as MessageParam;
}
