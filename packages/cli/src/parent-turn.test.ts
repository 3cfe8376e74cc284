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
