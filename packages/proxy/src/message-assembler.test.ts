import { describe, expect, it } from "vitest";
import { MessageAssembler } from "./message-assembler.js";

const EVENTS = [
  {
    type: "message_start",
    message: {
      id: "msg_1",
      role: "assistant",
      content: [],
      stop_reason: null,
      usage: { input_tokens: 5, output_tokens: 1 },
    },
  },
  { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } },
  { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Let me " } },
  { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "think." } },
  { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "sig==" } },
  { type: "content_block_stop", index: 0 },
  { type: "ping" },
  { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
  { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "Forking ✓" } },
  { type: "content_block_stop", index: 1 },
  {
    type: "content_block_start",
    index: 2,
    content_block: { type: "tool_use", id: "toolu_1", name: "fork", input: {} },
  },
  {
    type: "content_block_delta",
    index: 2,
    delta: { type: "input_json_delta", partial_json: '{"directive": "Au' },
  },
  { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: 'dit"}' } },
  { type: "content_block_stop", index: 2 },
  {
    type: "content_block_start",
    index: 3,
    content_block: { type: "tool_use", id: "toolu_2", name: "fork_status", input: {} },
  },
  { type: "content_block_stop", index: 3 },
  {
    type: "message_delta",
    delta: { stop_reason: "tool_use", stop_sequence: null },
    usage: { output_tokens: 42 },
  },
  { type: "message_stop" },
];

const EXPECTED = {
  id: "msg_1",
  role: "assistant",
  content: [
    { type: "thinking", thinking: "Let me think.", signature: "sig==" },
    { type: "text", text: "Forking ✓" },
    { type: "tool_use", id: "toolu_1", name: "fork", input: { directive: "Audit" } },
    { type: "tool_use", id: "toolu_2", name: "fork_status", input: {} },
  ],
  stop_reason: "tool_use",
  stop_sequence: null,
  usage: { input_tokens: 5, output_tokens: 42 },
};

function sse(newline: string): string {
  return EVENTS.map((e) => `event: ${e.type}${newline}data: ${JSON.stringify(e)}${newline}${newline}`).join(
    "",
  );
}

describe("MessageAssembler", () => {
  it("rebuilds the message whatever the chunk boundaries, LF or CRLF", () => {
    for (const newline of ["\n", "\r\n"]) {
      const text = sse(newline);
      for (const size of [1, 2, 3, 7, 64, text.length]) {
        const assembler = new MessageAssembler();
        let completedAt = -1;
        for (let i = 0; i < text.length; i += size) {
          if (assembler.push(text.slice(i, i + size))) completedAt = i;
        }
        expect(assembler.error).toBeUndefined();
        expect(assembler.message).toEqual(EXPECTED);
        // Complete with the chunk holding message_stop's blank line, not before.
        expect(completedAt + size).toBeGreaterThanOrEqual(text.length);
      }
    }
  });

  it("reads a tool input's escaped keys as written, where V8 12.8+ misreads them natively", () => {
    // Leaves the map transition that makes Node 24 read the `"\""` key after `directive` as `\`
    // (https://github.com/nodejs/node/issues/63785); harmless on older V8.
    JSON.parse('{"directive":[],"\\\\":0}');
    const input = { directive: "Audit", '"': 1 };
    const events = EVENTS.map((event) =>
      event.type === "content_block_delta" && event.index === 2
        ? {
            ...event,
            delta: {
              type: "input_json_delta",
              partial_json: event.delta?.partial_json === 'dit"}' ? "" : JSON.stringify(input),
            },
          }
        : event,
    );
    const assembler = new MessageAssembler();
    assembler.push(events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join(""));
    expect(assembler.error).toBeUndefined();
    expect(assembler.message?.content[2]).toEqual({ type: "tool_use", id: "toolu_1", name: "fork", input });
  });

  it("is not complete before message_stop", () => {
    const assembler = new MessageAssembler();
    expect(assembler.push(sse("\n").split("event: message_stop")[0]!)).toBe(false);
    expect(assembler.message).toBeUndefined();
  });

  it("stops at the first inconsistency and says what it was", () => {
    const outOfOrder = new MessageAssembler();
    outOfOrder.push(`data: ${JSON.stringify(EVENTS[1])}\n\n`);
    expect(outOfOrder.error?.message).toMatch(/before message_start/);

    const errored = new MessageAssembler();
    errored.push(
      `data: ${JSON.stringify(EVENTS[0])}\n\ndata: {"type":"error","error":{"type":"overloaded_error"}}\n\n`,
    );
    expect(errored.error?.message).toMatch(/overloaded_error/);
    expect(errored.push(`data: ${JSON.stringify({ type: "message_stop" })}\n\n`)).toBe(false);
    expect(errored.message).toBeUndefined();

    const unknownDelta = new MessageAssembler();
    unknownDelta.push(
      [EVENTS[0], EVENTS[7], { type: "content_block_delta", index: 1, delta: { type: "brand_new_delta" } }]
        .map((e) => `data: ${JSON.stringify(e)}\n\n`)
        .join(""),
    );
    expect(unknownDelta.error?.message).toMatch(/brand_new_delta/);
  });

  it("keeps citations a block's deltas add", () => {
    const assembler = new MessageAssembler();
    const citation = { type: "char_location", cited_text: "x" };
    assembler.push(
      [
        EVENTS[0],
        { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
        { type: "content_block_delta", index: 0, delta: { type: "citations_delta", citation } },
        { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "a" } },
        { type: "content_block_stop", index: 0 },
        { type: "message_stop" },
      ]
        .map((e) => `data: ${JSON.stringify(e)}\n\n`)
        .join(""),
    );
    expect(assembler.message?.content).toEqual([{ type: "text", text: "a", citations: [citation] }]);
  });
});
