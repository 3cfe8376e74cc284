// Parent-turn files as real clients' captures give them: a null reply, betas as a list or as the
// anthropic-beta header's text, and the reply kept as { role, content } (plus its id and usage).
import { describe, expect, it } from "vitest";
import { CliError } from "./errors.js";
import { parentTurnOf, splitBetaHeader } from "./parent-turn.js";

const request = { model: "claude-opus-4-7", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
const reply = {
  id: "msg_1",
  type: "message",
  role: "assistant",
  content: [{ type: "tool_use", id: "toolu_1", name: "Agent", input: { prompt: "Audit it." } }],
  stop_reason: "tool_use",
  usage: { input_tokens: 1, output_tokens: 1 },
};

describe("parentTurnOf", () => {
  it('reads "response": null as no reply', () => {
    const turn = parentTurnOf({ request, response: null }, "f.json");
    expect(turn.prefix.reply).toBeUndefined();
    expect(turn.toolCalls).toEqual([]);
  });

  it("keeps the reply as { role, content } (with its id and usage, for cache diagnostics) and its tool calls as fork calls", () => {
    const turn = parentTurnOf({ request, response: reply }, "f.json");
    expect(turn.prefix.reply).toEqual({
      role: "assistant",
      content: reply.content,
      id: reply.id,
      usage: reply.usage,
    });
    expect(turn.toolCalls).toEqual([{ forkCall: { tool_use_id: "toolu_1" }, prompt: "Audit it." }]);
  });

  it("takes betas as a list or as the header's text", () => {
    const list = parentTurnOf({ request, response: reply, betas: ["a-1", "b-2"] }, "f.json");
    const header = parentTurnOf({ request, response: reply, betas: " a-1, b-2 ," }, "f.json");
    expect(list.prefix.betas).toEqual(["a-1", "b-2"]);
    expect(header.prefix.betas).toEqual(["a-1", "b-2"]);
    expect(splitBetaHeader("")).toEqual([]);
  });

  it("refuses betas that are not names, as a config error naming the file", () => {
    for (const betas of [[1], { a: 1 }, ["two words"]]) {
      const error = (() => {
        try {
          parentTurnOf({ request, betas }, "f.json");
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(CliError);
      expect((error as CliError).message).toMatch(/^f\.json: /);
    }
  });
});

// As `forkd capture` writes a turn of another API: `{ api, path, request, response }`.
describe("parentTurnOf, with the file's text", () => {
  // A capture of an agent in Python: its request as it sent it, `1.0` and all, in an indented file.
  const sent =
    '{"model":"claude-opus-4-7","max_tokens":100,"tools":[{"name":"t","input_schema":{"properties":{"x":{"default":1.0}}}}],"messages":[{"role":"user","content":"hi"}]}';
  const file = `{\n  "request": ${sent},\n  "response": null,\n  "betas": []\n}\n`;

  it("keeps the request's values that JavaScript writes differently, as the agent wrote them", () => {
    const turn = parentTurnOf(JSON.parse(file), "f.json", file);
    expect(turn.prefix.verbatim).toEqual([
      { at: ["tools", 0, "input_schema", "properties", "x"], text: '{"default":1.0}' },
    ]);
  });

  it("keeps an OpenAI turn's values in its native prefix, and none of a Gemini turn's", () => {
    const chat =
      '{"model":"gpt-5","tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"w":{"default":1.0}}}}}],"messages":[{"role":"user","content":"hi"}]}';
    const chatFile = `{\n  "api": "openai-chat",\n  "path": "/openai/chat/completions",\n  "request": ${chat},\n  "response": {"role": "assistant", "content": "ok"}\n}\n`;
    expect(parentTurnOf(JSON.parse(chatFile), "c.json", chatFile).prefix.native?.verbatim).toEqual([
      { at: ["tools", 0, "function", "parameters", "properties", "w"], text: '{"default":1.0}' },
    ]);
    const gemini =
      '{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"f","parametersJsonSchema":{"properties":{"w":{"default":1.0}}}}]}]}';
    const geminiFile = `{"api": "gemini", "path": "/gemini/v1beta/models/gemini-2.5-flash:generateContent", "request": ${gemini}, "response": {"role": "model", "parts": [{"text": "ok"}]}}`;
    expect(parentTurnOf(JSON.parse(geminiFile), "g.json", geminiFile).prefix.native).not.toHaveProperty(
      "verbatim",
    );
  });

  it("keeps nothing without the text, or for a request JavaScript could have written (whatever the indentation)", () => {
    expect(parentTurnOf(JSON.parse(file), "f.json").prefix).not.toHaveProperty("verbatim");
    const indented = JSON.stringify({ request, response: null }, null, 2);
    expect(parentTurnOf(JSON.parse(indented), "f.json", indented).prefix).not.toHaveProperty("verbatim");
  });
});

describe("parentTurnOf, for a turn of another API", () => {
  /** A call of the `fork` tool, as both OpenAI APIs name a function and its JSON arguments. */
  const fork = { name: "fork", arguments: '{"directive":"Audit it.","description":"audit"}' };

  it("forks a Chat Completions turn from its native request and reply, its tool calls as fork calls", () => {
    const chatRequest = { model: "gpt-5", messages: [{ role: "user", content: "hi" }] };
    const message = {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_1", type: "function", function: fork }],
    };
    const turn = parentTurnOf(
      { api: "openai-chat", path: "/openai/chat/completions", request: chatRequest, response: message },
      "c.json",
    );
    expect(turn.prefix.native).toEqual({ api: "openai-chat", request: chatRequest, reply: [message] });
    expect(turn.prefix.params.model).toBe("gpt-5");
    expect(turn.toolCalls).toEqual([
      { forkCall: { tool_use_id: "call_1", description: "audit" }, prompt: "Audit it." },
    ]);
  });

  it("forks a Responses turn from its output items", () => {
    const responsesRequest = { model: "gpt-5", input: [{ role: "user", content: "hi" }] };
    const items = [{ type: "function_call", call_id: "call_9", ...fork, id: "fc_9" }];
    const turn = parentTurnOf(
      { api: "openai-responses", path: "/openai/responses", request: responsesRequest, response: items },
      "r.json",
    );
    expect(turn.prefix.native?.reply).toEqual(items);
    expect(turn.toolCalls.map((call) => [call.forkCall.tool_use_id, call.prompt])).toEqual([
      ["call_9", "Audit it."],
    ]);
  });

  it("takes a Gemini turn's model from its path, and refuses one whose path names none", () => {
    const geminiRequest = { contents: [{ role: "user", parts: [{ text: "hi" }] }] };
    const content = { role: "model", parts: [{ text: "ok" }] };
    const path = "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
    const turn = parentTurnOf({ api: "gemini", path, request: geminiRequest, response: content }, "g.json");
    expect(turn.prefix.native).toMatchObject({ api: "gemini", model: "gemini-2.5-flash" });
    expect(() =>
      parentTurnOf({ api: "gemini", request: geminiRequest, response: content }, "g.json"),
    ).toThrow(/^g\.json: a Gemini prefix names its model/);
  });

  it("refuses an API it does not know, and a native turn without a reply, as config errors naming the file", () => {
    expect(() => parentTurnOf({ api: "cohere", request: {}, response: {} }, "x.json")).toThrow(
      /^x\.json: api "cohere" is none of anthropic, openai-chat, openai-responses, gemini$/,
    );
    expect(() =>
      parentTurnOf({ api: "openai-chat", request: { model: "gpt-5", messages: [] } }, "y.json"),
    ).toThrow(CliError);
  });
});
