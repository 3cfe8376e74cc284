// The proxy's Gemini route between a Gemini client (plain fetch, as the Gemini CLI's SDK sends it) and
// the simulator, over real HTTP on loopback: the reply comes through unchanged, the turn is recorded
// with its calls, and the API key, in a header or in `?key=`, is forwarded and never kept.
import { type Sim, startSim } from "@forkd/sim";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type RunningProxy, startProxy } from "./proxy-server.js";
import { mcpInstanceMarker } from "./session-key.js";
import type { ProxyTurn } from "./turn-store.js";

let sim: Sim;
let proxy: RunningProxy;
const turns: ProxyTurn[] = [];
const SECRET_KEY = "AIza-proxy-very-secret";
const INSTANCE = "00112233445566778899";
const GENERATE = "/gemini/v1beta/models/gemini-2.5-flash";

beforeAll(async () => {
  sim = await startSim({ port: 0 });
  proxy = await startProxy({
    upstream: "http://127.0.0.1:9",
    geminiUpstream: sim.url,
    onTurn: (turn) => {
      turns.push(turn);
    },
  });
});

afterAll(async () => {
  await proxy?.close();
  await sim?.close();
});

afterEach(() => sim.reset());

/** A Gemini CLI-like request whose scripted reply calls the fork tool twice. */
const REQUEST = {
  contents: [
    {
      role: "user",
      parts: [
        {
          text: [
            "Audit the codec.",
            '@sim tool mcp_forkd_fork {"directive":"Audit A"}',
            '@sim tool mcp_forkd_fork {"directive":"Audit B"}',
          ].join("\n"),
        },
      ],
    },
  ],
  systemInstruction: { parts: [{ text: "You are a careful agent." }] },
  tools: [
    {
      functionDeclarations: [
        {
          name: "mcp_forkd_fork",
          description: `Fork. ${mcpInstanceMarker(INSTANCE)}`,
          parametersJsonSchema: { type: "object", properties: { directive: { type: "string" } } },
        },
      ],
    },
  ],
};

/** Posts `REQUEST` to `path` through the proxy; the body it got and the turn the proxy recorded. */
async function call(
  path: string,
  headers: Record<string, string>,
): Promise<{ text: string; turn: ProxyTurn }> {
  const before = turns.length;
  const response = await fetch(`${proxy.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(REQUEST),
  });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  // Recorded before the reply's last byte was forwarded.
  expect(turns).toHaveLength(before + 1);
  return { text, turn: turns.at(-1)! };
}

describe("the Gemini route", () => {
  it("streams a reply through unchanged and records the turn: its model content, calls and MCP instance", async () => {
    const { text, turn } = await call(`${GENERATE}:streamGenerateContent?alt=sse`, {
      "x-goog-api-key": SECRET_KEY,
    });
    const upstream = sim.requests().at(-1)!;
    expect(upstream.path).toBe("/v1beta/models/gemini-2.5-flash:streamGenerateContent");
    expect(text).toContain('"functionCall"');
    expect(turn.api).toBe("gemini");
    expect(turn.path).toBe(`${GENERATE}:streamGenerateContent?alt=sse`);
    expect(turn.request).toEqual(REQUEST);
    expect(turn.response).toMatchObject({ role: "model" });
    expect(turn.toolCalls).toEqual([
      {
        id: expect.stringMatching(/^mcp_forkd_fork-1-0~\d+$/),
        name: "mcp_forkd_fork",
        input: { directive: "Audit A" },
      },
      {
        id: expect.stringMatching(/^mcp_forkd_fork-1-1~\d+$/),
        name: "mcp_forkd_fork",
        input: { directive: "Audit B" },
      },
    ]);
    expect(turn.mcpInstances).toEqual([INSTANCE]);
    expect(proxy.turns.findToolCall({ toolName: "fork", input: { directive: "Audit B" } })?.toolUse.id).toBe(
      turn.toolCalls[1]?.id,
    );
  });

  it("records a JSON reply of generateContent as the same model content", async () => {
    const streamed = (
      await call(`${GENERATE}:streamGenerateContent?alt=sse`, { "x-goog-api-key": SECRET_KEY })
    ).turn;
    const json = (await call(`${GENERATE}:generateContent`, { "x-goog-api-key": SECRET_KEY })).turn;
    expect(json.response).toEqual(streamed.response);
    const withoutReplyNumber = (calls: typeof json.toolCalls) =>
      calls.map((call) => ({ ...call, id: call.id.replace(/~\d+$/, "") }));
    expect(withoutReplyNumber(json.toolCalls)).toEqual(withoutReplyNumber(streamed.toolCalls));
    expect(json.session).toBe(streamed.session);
  });

  it("forwards a ?key= credential but never records it, in the path or anywhere in the turn", async () => {
    const { turn } = await call(`${GENERATE}:streamGenerateContent?alt=sse&key=${SECRET_KEY}`, {});
    // The upstream got the key (the simulator refuses a request without one).
    expect(sim.requests().at(-1)!.status).toBe(200);
    expect(turn.path).toBe(`${GENERATE}:streamGenerateContent?alt=sse`);
    expect(JSON.stringify(turn)).not.toContain(SECRET_KEY);
    const onlyKey = (await call(`${GENERATE}:generateContent?key=${SECRET_KEY}`, {})).turn;
    expect(onlyKey.path).toBe(`${GENERATE}:generateContent`);
    expect(JSON.stringify(onlyKey)).not.toContain(SECRET_KEY);
    // The same key as a header or a parameter: the same session.
    const header = (await call(`${GENERATE}:generateContent`, { "x-goog-api-key": SECRET_KEY })).turn;
    expect(onlyKey.session).toBe(header.session);
  });

  it("answers 502 in Google's error shape when the Gemini upstream cannot be reached", async () => {
    const dead = await startProxy({ geminiUpstream: "http://127.0.0.1:9" });
    try {
      const response = await fetch(`${dead.url}${GENERATE}:generateContent`, { method: "POST", body: "{}" });
      expect(response.status).toBe(502);
      expect(await response.json()).toMatchObject({ error: { code: 502, status: "UNAVAILABLE" } });
    } finally {
      await dead.close();
    }
  });
});
