import { describe, expect, it } from "vitest";
import { ChatAssembler } from "./chat-assembler.js";
import { ResponsesAssembler } from "./responses-assembler.js";
import { turnApi } from "./turn-apis.js";

/** An SSE body of `events` (`[DONE]` as is), cut into pieces of `size` characters. */
function body(events: readonly unknown[], size: number): string[] {
  const text = events
    .map((event) => (typeof event === "string" ? `data: ${event}\n\n` : `data: ${JSON.stringify(event)}\n\n`))
    .join("");
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta, finish_reason: finish }],
});

const CHAT_EVENTS = [
  chunk({ role: "assistant", content: "", refusal: null }),
  chunk({ content: "Forking " }),
  chunk({ content: "twice." }),
  chunk({
    tool_calls: [
      { index: 0, id: "call_a", type: "function", function: { name: "mcp__forkd__fork", arguments: "" } },
    ],
  }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"directive":"Au' } }] }),
  chunk({
    tool_calls: [
      {
        index: 1,
        id: "call_b",
        type: "function",
        function: { name: "mcp__forkd__fork", arguments: '{"dir' },
      },
    ],
  }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: 'dit A"}' } }] }),
  chunk({ tool_calls: [{ index: 1, function: { arguments: 'ective":"Audit B","label":"b"}' } }] }),
  chunk({}, "tool_calls"),
  { id: "chatcmpl-1", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 9 } },
  "[DONE]",
];

const CHAT_REPLY = {
  role: "assistant",
  content: "Forking twice.",
  tool_calls: [
    {
      id: "call_a",
      type: "function",
      function: { name: "mcp__forkd__fork", arguments: '{"directive":"Audit A"}' },
    },
    {
      id: "call_b",
      type: "function",
      function: { name: "mcp__forkd__fork", arguments: '{"directive":"Audit B","label":"b"}' },
    },
  ],
};

describe("ChatAssembler", () => {
  it.each([1, 7, 64, 100_000])(
    "joins content and each parallel call's argument deltas, in pieces of %i characters",
    (size) => {
      const assembler = new ChatAssembler();
      const done = body(CHAT_EVENTS, size).map((piece) => assembler.push(piece));
      expect(done.filter(Boolean)).toHaveLength(1);
      expect(done.at(-1)).toBe(true);
      expect(assembler.reply).toEqual(CHAT_REPLY);
      expect(assembler.error).toBeUndefined();
    },
  );

  it("gives a reply of tool calls only `content: null`, as the non-streamed API does", () => {
    const assembler = new ChatAssembler();
    for (const piece of body([CHAT_EVENTS[0], ...CHAT_EVENTS.slice(3)], 10)) assembler.push(piece);
    expect(assembler.reply).toEqual({ ...CHAT_REPLY, content: null });
  });

  it("ends at the body's end after a finish_reason when the server leaves [DONE] out, and not before", () => {
    const unfinished = new ChatAssembler();
    for (const piece of body(CHAT_EVENTS.slice(0, 3), 10)) unfinished.push(piece);
    expect(unfinished.end()).toBe(false);
    const assembler = new ChatAssembler();
    for (const piece of body(CHAT_EVENTS.slice(0, -1), 10)) assembler.push(piece);
    expect(assembler.reply).toBeUndefined();
    expect(assembler.end()).toBe(true);
    expect(assembler.reply).toEqual(CHAT_REPLY);
  });

  it("stops at an error event", () => {
    const assembler = new ChatAssembler();
    assembler.push(`data: ${JSON.stringify({ error: { message: "overloaded" } })}\n\n`);
    expect(assembler.error?.message).toMatch(/overloaded/);
    expect(assembler.reply).toBeUndefined();
  });

  it("keeps of a non-streamed reply what the API takes back, and lists its calls with parsed input", () => {
    const chat = turnApi("openai-chat");
    const reply = chat.replyOfJson({
      object: "chat.completion",
      choices: [
        { index: 0, message: { ...CHAT_REPLY, refusal: null, annotations: [] }, finish_reason: "tool_calls" },
      ],
    });
    expect(reply).toEqual({ ...CHAT_REPLY, refusal: null });
    expect(chat.toolCalls(reply!)).toEqual([
      { id: "call_a", name: "mcp__forkd__fork", input: { directive: "Audit A" } },
      { id: "call_b", name: "mcp__forkd__fork", input: { directive: "Audit B", label: "b" } },
    ]);
  });
});

const reasoning = { id: "rs_1", type: "reasoning", summary: [], encrypted_content: "enc" };
const callA = {
  id: "fc_1",
  type: "function_call",
  status: "completed",
  call_id: "call_a",
  namespace: "mcp__forkd",
  name: "fork",
  arguments: '{"directive":"Audit A"}',
};
const callB = { ...callA, id: "fc_2", call_id: "call_b", arguments: '{"directive":"Audit B"}' };

const responsesEvents = (output: unknown[]) => [
  { type: "response.created", response: { id: "resp_1", status: "in_progress", output: [] } },
  { type: "response.output_item.added", output_index: 0, item: { ...reasoning, encrypted_content: null } },
  { type: "response.output_item.done", output_index: 0, item: reasoning },
  { type: "response.output_item.added", output_index: 1, item: { ...callA, arguments: "" } },
  { type: "response.function_call_arguments.delta", output_index: 1, delta: '{"directive"' },
  { type: "response.function_call_arguments.delta", output_index: 1, delta: ':"Audit A"}' },
  { type: "response.output_item.done", output_index: 1, item: callA },
  { type: "response.output_item.done", output_index: 2, item: callB },
  { type: "response.completed", response: { id: "resp_1", status: "completed", output } },
];

describe("ResponsesAssembler", () => {
  it.each([1, 13, 100_000])("gives the output items, in pieces of %i characters", (size) => {
    const assembler = new ResponsesAssembler();
    const done = body(responsesEvents([reasoning, callA, callB]), size).map((piece) => assembler.push(piece));
    expect(done.at(-1)).toBe(true);
    expect(assembler.reply).toEqual([reasoning, callA, callB]);
  });

  it("gives the items of the output_item.done events when response.completed lists none", () => {
    const assembler = new ResponsesAssembler();
    for (const piece of body(responsesEvents([]), 50)) assembler.push(piece);
    expect(assembler.reply).toEqual([reasoning, callA, callB]);
  });

  it("stops at response.failed", () => {
    const assembler = new ResponsesAssembler();
    assembler.push(
      `data: ${JSON.stringify({ type: "response.failed", response: { error: { code: "x" } } })}\n\n`,
    );
    expect(assembler.error).toBeDefined();
  });

  it("names a namespaced call as namespace__name (the Codex CLI's MCP tools), and reads a non-streamed reply", () => {
    const responses = turnApi("openai-responses");
    const reply = responses.replyOfJson({
      id: "resp_1",
      object: "response",
      output: [reasoning, callA, callB],
    });
    expect(responses.toolCalls(reply!)).toEqual([
      { id: "call_a", name: "mcp__forkd__fork", input: { directive: "Audit A" } },
      { id: "call_b", name: "mcp__forkd__fork", input: { directive: "Audit B" } },
    ]);
    expect(
      responses.toolCalls([
        { type: "function_call", call_id: "c", name: "exec_command", arguments: "not json" },
      ]),
    ).toEqual([{ id: "c", name: "exec_command", input: "not json" }]);
  });
});
