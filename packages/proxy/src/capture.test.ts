// Capture's files: JSON.stringify's indented text, but the request as the agent sent it, byte for byte.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { turnCapture } from "./capture.js";
import type { ProxyTurn } from "./turn-store.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "forkd-capture-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sent =
  '{"model":"m","tools":[{"name":"t","input_schema":{"default":1.0}}],"messages":[{"role":"user","content":"a\\nb"}]}';

function turnOf(api: ProxyTurn["api"]): ProxyTurn {
  return {
    seq: 1,
    session: "cc_s",
    at: 0,
    api,
    path: "/v1/messages",
    request: JSON.parse(sent) as Record<string, unknown>,
    betas: ["b-1"],
    response: { role: "assistant", content: [{ type: "text", text: "line 1\nline 2" }] } as never,
    toolCalls: [],
    mcpInstances: [],
    requestBytes: sent.length,
  };
}

async function written(turn: ProxyTurn, requestText?: string): Promise<string> {
  let path = "";
  await turnCapture(dir, (at) => {
    path = at;
  })(turn, requestText);
  return readFile(path, "utf8");
}

describe("turnCapture", () => {
  it("writes the request as the agent sent it, the rest as JSON.stringify indents it", async () => {
    const turn = turnOf("anthropic");
    const text = await written(turn, sent);
    const indented = `${JSON.stringify({ request: turn.request, response: turn.response, betas: turn.betas }, null, 2)}\n`;
    expect(text).toBe(indented.replace(JSON.stringify(turn.request, null, 2).replaceAll("\n", "\n  "), sent));
    expect(text).toContain('"default":1.0');
    expect(JSON.parse(text)).toEqual({ request: turn.request, response: turn.response, betas: turn.betas });
  });

  it("writes exactly JSON.stringify's indented file without the request's text, for every API's shape", async () => {
    const anthropic = turnOf("anthropic");
    expect(await written(anthropic)).toBe(
      `${JSON.stringify({ request: anthropic.request, response: anthropic.response, betas: anthropic.betas }, null, 2)}\n`,
    );
    const chat = { ...turnOf("openai-chat"), seq: 2, path: "/openai/chat/completions" };
    const file = { api: chat.api, path: chat.path, request: chat.request, response: chat.response };
    expect(await written(chat)).toBe(`${JSON.stringify(file, null, 2)}\n`);
  });
});
