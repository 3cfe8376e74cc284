// A fork is made only from a turn of the asking `forkd mcp` instance's own session, for OpenAI
// agents as for Claude Code: two qwen-code-like conversations with the same credential and the same
// prompt (one session key), each offering a different forkd mcp's tools, both calling fork with the
// same directive. Neither instance may be given the other's turn, nor may a session name reach a
// turn whose request did not offer the asking instance's tools. Real HTTP: the simulator upstream.
import { mcpInstanceMarker, type RunningProxy, startProxy } from "@forkd/proxy";
import { type Sim, startSim } from "@forkd/sim";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ALICE = "a11ce0000000000000000001";
const MALLORY = "0a11010000000000000000ff";
const PROMPT = '@sim tool mcp__forkd__fork {"directive":"Audit it."}';

let sim: Sim;
let proxy: RunningProxy;

beforeAll(async () => {
  sim = await startSim({ port: 0 });
  proxy = await startProxy({ upstream: sim.url, openaiUpstream: `${sim.url}/v1` });
});

afterAll(async () => {
  await proxy?.close();
  await sim?.close();
});

/**
 * One Chat Completions turn offering `instance`'s fork tool; returns the fork call's id. The model
 * (not part of the session key) makes the simulator's call ids differ.
 */
async function chatTurn(instance: string, model: string): Promise<string> {
  const response = await fetch(`${proxy.url}/openai/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-shared" },
    body: JSON.stringify({
      model,
      stream: true,
      messages: [{ role: "user", content: PROMPT }],
      tools: [
        {
          type: "function",
          function: {
            name: "mcp__forkd__fork",
            description: `Fork. ${mcpInstanceMarker(instance)}`,
            parameters: { type: "object", properties: { directive: { type: "string" } } },
          },
        },
      ],
    }),
  });
  const text = await response.text();
  const id = /"id":"(call_[^"]+)"/.exec(text)?.[1];
  if (id === undefined) throw new Error(`no tool call in ${text.slice(0, 500)}`);
  return id;
}

describe("the proxy gives a forkd mcp instance only its own OpenAI turns", () => {
  it("same credential and prompt, two instances: each finds its own call, never the other's", async () => {
    const alice = await chatTurn(ALICE, "gpt-5");
    const mallory = await chatTurn(MALLORY, "gpt-5-mini");
    expect(mallory).not.toBe(alice);
    const query = { toolName: "fork", input: { directive: "Audit it." } };
    const forAlice = proxy.turns.findToolCall({ ...query, mcpInstance: ALICE });
    expect(forAlice?.toolUse.id).toBe(alice);
    expect(forAlice?.turn.api).toBe("openai-chat");
    // One session: the same credential, system prompt and first message.
    expect(proxy.turns.sessions()).toHaveLength(1);
    expect(proxy.turns.findToolCall({ ...query, mcpInstance: MALLORY })?.toolUse.id).toBe(mallory);
    // Mallory's instance naming Alice's call id, or Alice's session, still gets nothing of Alice's.
    expect(proxy.turns.findToolCall({ ...query, mcpInstance: MALLORY, toolUseId: alice })).toBeUndefined();
    expect(
      proxy.turns.findToolCall({
        ...query,
        mcpInstance: MALLORY,
        session: forAlice!.turn.session,
        exclude: [mallory],
      }),
    ).toBeUndefined();
    // An instance no request offered finds nothing at all.
    expect(proxy.turns.findToolCall({ ...query, mcpInstance: "feed0000000000000000beef" })).toBeUndefined();
  });
});
