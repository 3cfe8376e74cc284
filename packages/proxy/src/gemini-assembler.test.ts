import { describe, expect, it } from "vitest";
import { GeminiAssembler, type GeminiReply, geminiReplyOfJson } from "./gemini-assembler.js";
import { turnApi } from "./turn-apis.js";

/** An SSE body of `events`, cut into pieces of `size` characters (CRLF line ends when `crlf`). */
function body(events: readonly unknown[], size: number, crlf = false): string[] {
  const end = crlf ? "\r\n\r\n" : "\n\n";
  const text = events.map((event) => `data: ${JSON.stringify(event)}${end}`).join("");
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

/** A chunk of a streamed reply: candidate 0's `parts`, and its finishReason when it ends the reply. */
const chunk = (parts: Record<string, unknown>[], finishReason?: string) => ({
  candidates: [{ content: { parts, role: "model" }, index: 0, ...(finishReason ? { finishReason } : {}) }],
  modelVersion: "gemini-2.5-flash",
  responseId: "r-1",
});

const SIGNATURE = "c2lnbmF0dXJl";

// As the Gemini API streams a reply of thoughts, text and two calls of the fork tool: the thought
// and the text in pieces, each call whole in its own chunk (no `id`: the Gemini API gives none).
const EVENTS = [
  chunk([{ text: "Weighing the ", thought: true }]),
  chunk([{ text: "two audits.", thought: true }]),
  chunk([{ text: "Forking ", thoughtSignature: SIGNATURE }]),
  chunk([{ text: "twice." }]),
  chunk([{ functionCall: { name: "mcp_forkd_fork", args: { directive: "Audit A" } } }]),
  chunk([{ functionCall: { name: "mcp_forkd_fork", args: { directive: "Audit B", label: "b" } } }], "STOP"),
  { usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 4 }, modelVersion: "gemini-2.5-flash" },
];

const REPLY: GeminiReply = {
  role: "model",
  parts: [
    { text: "Weighing the ", thought: true },
    { text: "two audits.", thought: true },
    { text: "Forking twice.", thoughtSignature: SIGNATURE },
    { functionCall: { name: "mcp_forkd_fork", args: { directive: "Audit A" } } },
    { functionCall: { name: "mcp_forkd_fork", args: { directive: "Audit B", label: "b" } } },
  ],
};

describe("GeminiAssembler", () => {
  it("joins text pieces and keeps thoughts, signatures and each call as their own parts, whatever the chunking", () => {
    for (const size of [1, 7, 64, 100_000]) {
      for (const crlf of [false, true]) {
        const assembler = new GeminiAssembler();
        const pieces = body(EVENTS, size, crlf);
        const done = pieces.findIndex((piece) => assembler.push(piece));
        expect(done, `size ${size}`).toBeGreaterThanOrEqual(0);
        expect(assembler.reply).toEqual(REPLY);
      }
    }
  });

  it("does not join a later text piece that carries a signature of its own", () => {
    const assembler = new GeminiAssembler();
    for (const piece of body(
      [chunk([{ text: "a" }]), chunk([{ text: "b", thoughtSignature: SIGNATURE }], "STOP")],
      9,
    ))
      assembler.push(piece);
    expect(assembler.reply?.parts).toEqual([{ text: "a" }, { text: "b", thoughtSignature: SIGNATURE }]);
  });

  it("yields no reply for a stream cut before its finishReason, and an error for an error event", () => {
    const cut = new GeminiAssembler();
    for (const piece of body(EVENTS.slice(0, 4), 50)) cut.push(piece);
    expect(cut.end()).toBe(false);
    expect(cut.reply).toBeUndefined();
    const failed = new GeminiAssembler();
    failed.push(
      `data: ${JSON.stringify({ error: { code: 503, message: "overloaded", status: "UNAVAILABLE" } })}\n\n`,
    );
    expect(failed.error?.message).toContain("overloaded");
  });
});

describe("the gemini turn API", () => {
  const gemini = turnApi("gemini");

  it("recognises generateContent and streamGenerateContent of any model, nothing else", () => {
    expect(gemini.recognises("/v1beta/models/gemini-2.5-flash:streamGenerateContent")).toBe(true);
    expect(gemini.recognises("/v1beta/models/gemini-2.5-pro:generateContent")).toBe(true);
    expect(gemini.recognises("/v1/models/gemini-2.5-pro:generateContent")).toBe(true);
    expect(gemini.recognises("/v1beta/models/gemini-2.5-pro:countTokens")).toBe(false);
    expect(gemini.recognises("/v1beta/cachedContents")).toBe(false);
  });

  it("reads a JSON reply: generateContent's response, or streamGenerateContent's array of chunks", () => {
    expect(gemini.replyOfJson(chunk(REPLY.parts, "STOP"))).toEqual(REPLY);
    expect(geminiReplyOfJson(EVENTS)).toEqual(REPLY);
    expect(gemini.replyOfJson({ promptFeedback: { blockReason: "SAFETY" } })).toBeUndefined();
  });

  it("gives each call its own id, else the core's <name>-<turn>-<part> made unique per reply", () => {
    const request = { contents: [{ role: "user", parts: [{ text: "hi" }] }] };
    const calls = gemini.toolCalls(REPLY, request);
    expect(calls).toEqual([
      {
        id: expect.stringMatching(/^mcp_forkd_fork-1-3~\d+$/),
        name: "mcp_forkd_fork",
        input: { directive: "Audit A" },
      },
      {
        id: expect.stringMatching(/^mcp_forkd_fork-1-4~\d+$/),
        name: "mcp_forkd_fork",
        input: { directive: "Audit B", label: "b" },
      },
    ]);
    // The same conversation again (after /clear): new ids, or a fork call answered once would hide it.
    const again = gemini.toolCalls(REPLY, request);
    expect(again.map((call) => call.id.replace(/~\d+$/, ""))).toEqual(
      calls.map((call) => call.id.replace(/~\d+$/, "")),
    );
    expect(new Set([...calls, ...again].map((call) => call.id)).size).toBe(4);
    const withId: GeminiReply = {
      role: "model",
      parts: [{ functionCall: { id: "call-7", name: "read_file", args: {} } }],
    };
    expect(gemini.toolCalls(withId, request)).toEqual([{ id: "call-7", name: "read_file", input: {} }]);
  });
});
