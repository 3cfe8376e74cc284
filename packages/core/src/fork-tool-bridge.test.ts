import type { AssistantMessage, ForkEvent, MessageParam } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { parseDirectiveBlock } from "./directive.js";
import type { ForkSubagent } from "./fork-subagent.js";
import { describeForkCall, ForkToolBridge } from "./fork-tool-bridge.js";
import { InProcessForkSubagent } from "./in-process-fork.js";
import { type LlmClient, LlmError, type LlmRequest, type LlmResponse } from "./llm-client.js";
import { parseTaskNotification } from "./task-notification.js";
import { testDispatcher } from "./test-support/dispatcher.js";
import { loadFixture } from "./test-support/fixtures.js";
import { usage } from "./test-support/scripted-llm.js";

type Block = Record<string, unknown>;

// Answers each child from its own directive: one Echo call, then a report naming the directive.
// A directive containing "explode" fails on its second turn.
class DirectiveLlm implements LlmClient {
  readonly requests: string[] = [];

  async createMessage(request: LlmRequest): Promise<LlmResponse> {
    this.requests.push(JSON.stringify(request));
    const firstUser = request.messages.findLast((m) =>
      (m.content as Block[]).some((b) => parseDirectiveBlock(String(b.text ?? ""))),
    );
    const directiveBlock = (firstUser!.content as Block[]).find((b) =>
      parseDirectiveBlock(String(b.text ?? "")),
    )!;
    const directive = String(directiveBlock.text).split("Your directive:\n")[1]!;
    const lastRole = request.messages.at(-1)!.content;
    const answered = (lastRole as Block[]).some(
      (b) => b.type === "tool_result" && String(b.tool_use_id).startsWith("echo-"),
    );
    const base = { id: "msg", model: request.model, usage: usage(), ttftMs: 1, durationMs: 1 };
    if (!answered) {
      return {
        ...base,
        message: {
          role: "assistant",
          content: [
            { type: "tool_use", id: `echo-${request.messages.length}`, name: "Echo", input: { directive } },
          ],
        },
        stop_reason: "tool_use",
      };
    }
    if (directive.includes("explode")) throw new LlmError("server_error", "the model exploded");
    return {
      ...base,
      message: {
        role: "assistant",
        content: [{ type: "text", text: `Scope: ${directive}\nResult: done <ok> & "fine"` }],
      },
      stop_reason: "end_turn",
    };
  }
}

function setup(subagent?: ForkSubagent) {
  const llm = new DirectiveLlm();
  const fork =
    subagent ?? new InProcessForkSubagent({ llm, cwd: "/tmp", dispatcherFactory: () => testDispatcher() });
  const notified: MessageParam[] = [];
  const events: ForkEvent[] = [];
  const bridge = new ForkToolBridge({
    subagent: fork,
    parent: { agent_id: "parent-1" },
    onNotification: (message) => notified.push(message),
    onEvent: (event) => events.push(event),
  });
  return { llm, bridge, notified, events };
}

describe("ForkToolBridge", () => {
  it("answers every fork call at once, launches the children, and delivers their notifications", async () => {
    const fixture = loadFixture("48k");
    const t = setup();
    const calls = fixture.response.content.filter((block) => block.type === "tool_use");
    const answer = t.bridge.answer(fixture.request, fixture.response);
    expect(answer.launched.map((fork) => [fork.toolUseId, fork.description])).toEqual(
      calls.map((call) => [call.id, (call.input as { description: string }).description]),
    );
    expect(answer.toolResults.map((result) => result.tool_use_id)).toEqual(calls.map((call) => call.id));
    for (const result of answer.toolResults) {
      expect(result.is_error).toBeUndefined();
      expect(String(result.content)).toMatch(
        /^Fork started - processing in background \(task-id: [0-9a-f-]{36}\)/,
      );
    }
    expect(t.bridge.running).toBe(3);
    await t.bridge.settled();
    expect(t.bridge.running).toBe(0);

    const messages = t.bridge.takeNotifications();
    expect(messages).toHaveLength(3);
    expect(t.notified).toEqual(messages);
    expect(t.bridge.takeNotifications()).toEqual([]);
    const notifications = messages.map((message) =>
      parseTaskNotification(String((message.content as Block[])[0]!.text)),
    );
    for (const [i, call] of calls.entries()) {
      const notification = notifications.find((n) => n.toolUseId === call.id)!;
      const prompt = (call.input as { prompt: string }).prompt;
      expect(notification).toMatchObject({
        taskId: answer.launched[i]!.handle.runId,
        status: "completed",
        summary: `Fork "slice ${i + 1}" completed`,
        result: `Scope: ${prompt}\nResult: done <ok> & "fine"`,
        usage: { toolUses: 1 },
      });
    }
    expect(t.events.filter((event) => event.type === "completed")).toHaveLength(3);

    // Every child's first request: identical up to its directive block, which names its own call.
    const firstRequests = t.llm.requests.filter((text) => !text.includes('"echo-'));
    expect(firstRequests).toHaveLength(3);
    const heads = firstRequests.map((text) =>
      text.slice(0, text.indexOf('{"type":"text","text":"<fork-boilerplate')),
    );
    expect(new Set(heads).size).toBe(1);
    for (const call of calls) {
      expect(
        firstRequests.filter((text) => text.includes(`Your fork call: tool_use_id=\\"${call.id}\\"`)),
      ).toHaveLength(1);
    }
  });

  it("reports a failed child with its real tool-use count", async () => {
    const fixture = loadFixture("4k");
    const reply = structuredClone(fixture.response);
    (reply.content[1]!.input as { prompt: string }).prompt = "please explode";
    const t = setup();
    t.bridge.answer(fixture.request, reply);
    await t.bridge.settled();
    const notifications = t.bridge
      .takeNotifications()
      .map((message) => parseTaskNotification(String((message.content as Block[])[0]!.text)));
    const failed = notifications.find((n) => n.status === "failed")!;
    expect(failed).toMatchObject({
      summary: 'Fork "slice 1" failed: the model exploded',
      result: "Error server_error: the model exploded",
      usage: { toolUses: 1 },
    });
    expect(failed.usage!.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("refuses fork calls from a parent that is itself a fork, without launching anything", () => {
    const fixture = loadFixture("4k");
    const t = setup();
    const bridge = new ForkToolBridge({
      subagent: { fork: () => expect.unreachable("must not fork") },
      parent: { agent_id: "p" },
      querySource: "fork:run-9",
    });
    const answer = bridge.answer(fixture.request, fixture.response);
    expect(answer.launched).toEqual([]);
    expect(answer.toolResults).toHaveLength(2);
    for (const result of answer.toolResults) {
      expect(result.is_error).toBe(true);
      expect(String(result.content)).toMatch(/^Fork refused: /);
    }
    expect(t.bridge.running).toBe(0);
  });

  it("turns a fork that cannot start into an error result, and ignores other tools", () => {
    const reply: AssistantMessage = {
      role: "assistant",
      content: [
        { type: "tool_use", id: "t1", name: "Read", input: {} },
        { type: "tool_use", id: "t2", name: "Task", input: { description: "x" } },
        { type: "tool_use", id: "t3", name: "Agent", input: { prompt: "go", description: "y" } },
      ],
    };
    const bridge = new ForkToolBridge({
      subagent: {
        fork: () => {
          throw new Error("no capacity");
        },
      },
      parent: { agent_id: "p" },
    });
    const answer = bridge.answer(
      { model: "m", max_tokens: 10, messages: [{ role: "user", content: "go" }] },
      reply,
    );
    expect(answer.toolResults).toEqual([
      {
        type: "tool_result",
        tool_use_id: "t2",
        content: "Fork not started: the call has no prompt. Call the tool again with a prompt.",
        is_error: true,
      },
      { type: "tool_result", tool_use_id: "t3", content: "Fork not started: no capacity", is_error: true },
    ]);
    expect(bridge.isForkCall({ type: "tool_use", name: "Agent" })).toBe(true);
    expect(bridge.isForkCall({ type: "tool_use", name: "Read" })).toBe(false);
    expect(describeForkCall({ id: "x", name: "Agent", input: { directive: "d" } })).toEqual({
      directive: "d",
    });
  });

  it("streams notifications until disposed", async () => {
    const fixture = loadFixture("4k");
    const t = setup();
    t.bridge.answer(fixture.request, fixture.response);
    const received: MessageParam[] = [];
    for await (const message of t.bridge.notifications()) {
      received.push(message);
      if (received.length === 2) break;
    }
    expect(received).toHaveLength(2);
    await t.bridge[Symbol.asyncDispose]();
    const after: MessageParam[] = [];
    for await (const message of t.bridge.notifications()) after.push(message);
    expect(after).toEqual([]);
  });

  it("aborts its running children when disposed", async () => {
    const fixture = loadFixture("4k");
    const hanging: LlmClient = {
      createMessage: (_request, options) =>
        new Promise((_resolve, reject) => {
          options?.signal?.addEventListener("abort", () => reject(new LlmError("aborted", "aborted")), {
            once: true,
          });
        }),
    };
    const subagent = new InProcessForkSubagent({
      llm: hanging,
      cwd: "/tmp",
      dispatcherFactory: () => testDispatcher(),
    });
    const t = setup(subagent);
    t.bridge.answer(fixture.request, fixture.response);
    await t.bridge[Symbol.asyncDispose]();
    const statuses = t.notified.map(
      (m) => parseTaskNotification(String((m.content as Block[])[0]!.text)).status,
    );
    expect(statuses).toEqual(["killed", "killed"]);
  });
});
