// The proxy between the real Anthropic SDK and the simulator, over real HTTP on loopback: what the
// agent sends and gets is unchanged, and what the proxy remembers is what was exchanged.
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import Anthropic from "@anthropic-ai/sdk";
import { type Sim, startSim } from "@forkd/sim";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ChatReply, ChatToolCall } from "./chat-assembler.js";
import type { AssembledMessage } from "./message-assembler.js";
import { ProxyClient } from "./proxy-client.js";
import { type RunningProxy, startProxy } from "./proxy-server.js";
import { forkPrefixOfTurn } from "./recorded-turn.js";
import { mcpInstanceMarker } from "./session-key.js";
import type { ProxyTurn } from "./turn-store.js";

let sim: Sim;
let proxy: RunningProxy;
const API_KEY = "sk-proxy-test";

beforeAll(async () => {
  sim = await startSim({ port: 0 });
  proxy = await startProxy({ upstream: sim.url, openaiUpstream: `${sim.url}/v1` });
});

afterAll(async () => {
  await proxy?.close();
  await sim?.close();
});

afterEach(() => sim.reset());

function client(headers: Record<string, string> = {}): Anthropic {
  return new Anthropic({ apiKey: API_KEY, baseURL: proxy.url, defaultHeaders: headers, maxRetries: 0 });
}

const READ_TOOL = {
  name: "Read",
  description: "Reads a file.",
  input_schema: { type: "object" as const, properties: { file_path: { type: "string" } } },
};

/** A logger that keeps what it is told at warn and debug, with the message and its fields. */
function recordingLogger() {
  type Line = { message: string | undefined; fields: Record<string, unknown> };
  const warnings: Line[] = [];
  const debugs: Line[] = [];
  const ignore = () => {};
  const logger = {
    info: ignore,
    error: ignore,
    warn: (fields: Record<string, unknown>, message?: string) => warnings.push({ message, fields }),
    debug: (fields: Record<string, unknown>, message?: string) => debugs.push({ message, fields }),
  };
  return { logger, warnings, debugs };
}

describe("forwarding", () => {
  it("streams a reply through unchanged and remembers the turn as the SDK assembled it", async () => {
    const body = {
      model: "claude-sonnet-5-5",
      max_tokens: 512,
      tools: [READ_TOOL],
      messages: [
        {
          role: "user" as const,
          content: 'Read it.\n@sim say Reading.\n@sim tool Read {"file_path":"a.txt"}',
        },
      ],
    };
    const stream = client({ "x-claude-code-session-id": "session-one" }).beta.messages.stream(body, {
      headers: { "anthropic-beta": "context-management-2025-06-27, interleaved-thinking-2025-05-14" },
    });
    const final = await stream.finalMessage();

    const [logged] = sim.requests();
    expect(logged?.status).toBe(200);
    expect(logged?.stream).toBe(true);
    expect(JSON.parse(logged!.body)).toEqual({ ...body, stream: true });
    expect(logged?.betas).toEqual(["context-management-2025-06-27", "interleaved-thinking-2025-05-14"]);

    const [turn] = proxy.turns.turnsOf("cc:session-one");
    expect(turn?.request).toEqual({ ...body, stream: true });
    expect(turn?.betas).toEqual(["context-management-2025-06-27", "interleaved-thinking-2025-05-14"]);
    // The SDK's own reassembly of the stream is the reference.
    // (less `parsed_output`, the SDK's own addition for structured outputs, never on the wire).
    const { parsed_output: _parsed, ...sdkMessage } = final as typeof final & { parsed_output?: unknown };
    expect(turn?.response).toEqual(JSON.parse(JSON.stringify(sdkMessage)));
    expect(turn?.api).toBe("anthropic");
    expect((turn!.response as AssembledMessage).content.map((block) => block.type)).toEqual([
      "text",
      "tool_use",
    ]);
  });

  it("passes a non-streamed reply and an API error through with their status and body", async () => {
    const reply = await client().messages.create({
      model: "claude-sonnet-5-5",
      max_tokens: 64,
      messages: [{ role: "user", content: "Hello.\n@sim say Hi." }],
    });
    expect(reply.content).toEqual([{ type: "text", text: "Hi." }]);

    // The same invalid request, through the proxy and straight to the simulator.
    const invalid = (baseUrl: string) =>
      fetch(`${baseUrl}/v1/messages`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-api-key": API_KEY,
          "anthropic-version": "2023-06-01",
        },
        body: JSON.stringify({ model: "claude-sonnet-5-5", messages: [] }),
      });
    const refused = await invalid(proxy.url);
    const direct = await invalid(sim.url);
    expect(refused.status).toBe(400);
    expect(refused.status).toBe(direct.status);
    const [viaProxy, viaSim] = [
      (await refused.json()) as Record<string, unknown>,
      (await direct.json()) as Record<string, unknown>,
    ];
    expect(viaProxy.error).toEqual(viaSim.error);
  });

  it("forwards a path that starts with // to the upstream, not to a host named by the path", async () => {
    const ask = (base: string) =>
      fetch(`${base}//example.invalid/v1/messages`, { method: "POST", headers: { "x-api-key": API_KEY } });
    const [direct, viaProxy] = await Promise.all([ask(sim.url), ask(proxy.url)]);
    expect(viaProxy.status).toBe(direct.status);
    expect(((await viaProxy.json()) as { error: unknown }).error).toEqual(
      ((await direct.json()) as { error: unknown }).error,
    );
  });

  it("answers a WebSocket upgrade 426 at once, never forwarding it, so a client falls back to HTTP", async () => {
    // The Codex CLI asks for its Responses transport as a WebSocket first; 426 is what it falls back on.
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${proxy.url}/v1/responses`, {
        headers: {
          connection: "Upgrade",
          upgrade: "websocket",
          "sec-websocket-version": "13",
          "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          authorization: `Bearer ${API_KEY}`,
        },
      });
      req.on("upgrade", () => reject(new Error("the proxy switched protocols")));
      req.on("response", (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("error", reject);
      req.end();
    });
    expect(answer.status).toBe(426);
    expect(JSON.parse(answer.body)).toMatchObject({
      type: "error",
      error: { type: "invalid_request_error" },
    });
    expect(sim.requests()).toEqual([]);
    // The proxy still serves plain HTTP after it.
    const counted = await client().messages.countTokens({
      model: "claude-sonnet-5-5",
      messages: [{ role: "user", content: "Hello" }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
  });

  it("forwards a path the proxy does not know (count_tokens) and its query", async () => {
    const counted = await client().messages.countTokens({
      model: "claude-sonnet-5-5",
      messages: [{ role: "user", content: "Count these words please." }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(sim.requests().at(-1)?.path).toContain("/v1/messages/count_tokens");
  });

  it("abandons the upstream call when the agent hangs up mid-stream", async () => {
    const controller = new AbortController();
    const stream = client().messages.stream(
      {
        model: "claude-sonnet-5-5",
        max_tokens: 4096,
        messages: [{ role: "user", content: "Write.\n@sim tps 20\n@sim text 2000" }],
      },
      { signal: controller.signal },
    );
    const logged = sim.next("request");
    stream.on("text", () => controller.abort());
    await expect(stream.finalMessage()).rejects.toThrow(/aborted/);
    const entry = await logged;
    expect(entry.disconnected).toBe(true);
    expect(entry.outputTokensSent).toBeLessThan(2000);
  });

  it("answers 502 with an API-shaped error when the upstream cannot be reached, and warns", async () => {
    const { logger, warnings } = recordingLogger();
    const dead = await startProxy({ upstream: "http://127.0.0.1:9", logger });
    try {
      const response = await fetch(`${dead.url}/v1/messages`, { method: "POST", body: "{}" });
      expect(response.status).toBe(502);
      expect(await response.json()).toMatchObject({ type: "error", error: { type: "api_error" } });
    } finally {
      await dead.close();
    }
    expect(warnings).toEqual([
      {
        message: "upstream request failed",
        fields: { path: "/v1/messages", err: expect.stringMatching(/ECONNREFUSED/) },
      },
    ]);
  });

  it("warns of nothing when the agent hangs up before the reply comes (Esc while the model thinks)", async () => {
    const { logger, warnings, debugs } = recordingLogger();
    const quiet = await startProxy({ upstream: sim.url, logger });
    const controller = new AbortController();
    try {
      const accepted = sim.next("accepted");
      const logged = sim.next("request");
      const call = new Anthropic({ apiKey: API_KEY, baseURL: quiet.url, maxRetries: 0 }).messages.create(
        {
          model: "claude-sonnet-5-5",
          max_tokens: 64,
          stream: true,
          messages: [{ role: "user", content: "Think.\n@sim ttft 30000\n@sim say late" }],
        },
        { signal: controller.signal },
      );
      await accepted;
      controller.abort();
      await expect(call).rejects.toThrow(/abort/i);
      expect((await logged).disconnected).toBe(true);
      await expect
        .poll(() => debugs.map(({ message }) => message))
        .toContain("the agent hung up; upstream call abandoned");
    } finally {
      await quiet.close();
    }
    expect(warnings).toEqual([]);
  });
});

describe("credentials", () => {
  it("logs each exchange without its credentials or its conversation", async () => {
    const lines: string[] = [];
    const log = (fields: Record<string, unknown>, message?: string) =>
      lines.push(JSON.stringify({ ...fields, message }));
    const logged = await startProxy({
      upstream: sim.url,
      logger: { debug: log, info: log, warn: log, error: log },
    });
    try {
      const secretClient = new Anthropic({
        apiKey: "sk-ant-very-secret",
        baseURL: logged.url,
        maxRetries: 0,
      });
      await secretClient.messages.create({
        model: "claude-sonnet-5-5",
        max_tokens: 32,
        messages: [{ role: "user", content: "The launch code is 0000.\n@sim say ok" }],
      });
      const bearer = new Anthropic({ authToken: "bearer-very-secret", baseURL: logged.url, maxRetries: 0 });
      await bearer.messages.create({
        model: "claude-sonnet-5-5",
        max_tokens: 32,
        messages: [{ role: "user", content: "hi" }],
      });
    } finally {
      await logged.close();
    }
    expect(lines.filter((line) => line.includes('"proxied"'))).toHaveLength(2);
    const all = lines.join("\n");
    for (const secret of ["sk-ant-very-secret", "bearer-very-secret", "launch code"])
      expect(all).not.toContain(secret);
  });
});

describe("sessions", () => {
  it("keeps two agents' turns apart by Claude Code's session id, and finds a call by its MCP instance", async () => {
    const instance = "0123456789abcdef0123";
    const forkTool = {
      name: "mcp__forkd__fork",
      description: `Forks a child. ${mcpInstanceMarker(instance)}`,
      input_schema: { type: "object" as const, properties: { directive: { type: "string" } } },
    };
    const ask = (session: string, tools: (typeof forkTool)[]) =>
      client({ "x-claude-code-session-id": session }).messages.create({
        model: "claude-sonnet-5-5",
        max_tokens: 256,
        tools,
        messages: [{ role: "user", content: '@sim tool mcp__forkd__fork {"directive":"Audit the codec."}' }],
      });
    await Promise.all([
      ask("session-a", [forkTool]),
      ask("session-b", [{ ...forkTool, description: "Forks a child." }]),
    ]);

    expect(proxy.turns.turnsOf("cc:session-a")).toHaveLength(1);
    expect(proxy.turns.turnsOf("cc:session-b")).toHaveLength(1);
    const control = new ProxyClient({ url: proxy.url, controlToken: proxy.controlToken });
    const found = await control.findToolCall({
      mcpInstance: instance,
      toolName: "fork",
      input: { directive: "Audit the codec." },
    });
    expect(found?.turn.session).toBe("cc:session-a");
    expect(found?.toolUse.name).toBe("mcp__forkd__fork");
    // Once its only call is answered, the turn no longer matches.
    expect(
      await control.findToolCall({
        mcpInstance: instance,
        toolName: "fork",
        input: { directive: "Audit the codec." },
        exclude: [found!.toolUse.id],
      }),
    ).toBeUndefined();
    // The control API passes the call's own id on: another id finds nothing.
    const query = { mcpInstance: instance, toolName: "fork", input: { directive: "Audit the codec." } };
    expect((await control.findToolCall({ ...query, toolUseId: found!.toolUse.id }))?.toolUse.id).toBe(
      found!.toolUse.id,
    );
    expect(await control.findToolCall({ ...query, toolUseId: "toolu_other" })).toBeUndefined();
  });

  it("refuses the control API without the bearer token", async () => {
    // The right token with its last character changed (to another one, whatever it was).
    const last = proxy.controlToken.at(-1) === "0" ? "1" : "0";
    const wrong = new ProxyClient({
      url: proxy.url,
      controlToken: `${proxy.controlToken.slice(0, -1)}${last}`,
    });
    await expect(wrong.health()).rejects.toThrow(/401/);
    const health = await fetch(`${proxy.url}/_forkd/v1/health`);
    expect(health.status).toBe(401);
  });
});

describe("values a JavaScript reading writes differently", () => {
  // As Python's json.dumps writes a body: ", " and ": " between tokens, a float default as 1.0.
  function pythonStyleBody(scaleDefault: string, maxTokens: string): string {
    return [
      `{"model": "claude-sonnet-5-5", "max_tokens": ${maxTokens}, `,
      `"tools": [{"name": "Scale", "description": "Scales.", "input_schema": {"type": "object", `,
      `"properties": {"factor": {"type": "number", "default": ${scaleDefault}}}}}], `,
      `"messages": [{"role": "user", "content": "@sim say ok"}]}`,
    ].join("");
  }

  async function loggedProxy(upstreams: { geminiUpstream?: string } = {}) {
    const warnings: Record<string, unknown>[] = [];
    const turns: { turn: ProxyTurn; text: string }[] = [];
    const ignore = () => {};
    const logged = await startProxy({
      upstream: sim.url,
      openaiUpstream: `${sim.url}/v1`,
      ...upstreams,
      logger: { debug: ignore, info: ignore, error: ignore, warn: (fields) => warnings.push(fields) },
      onTurn: (turn, text) => {
        turns.push({ turn, text });
      },
    });
    return { logged, warnings, turns };
  }

  async function send(url: string, path: string, headers: Record<string, string>, body: string) {
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });
    expect(response.status, await response.text()).toBe(200);
  }

  const anthropicHeaders = (session: string) => ({
    "x-api-key": API_KEY,
    "anthropic-version": "2023-06-01",
    "x-claude-code-session-id": session,
  });

  it("keeps an Anthropic turn's values in the agent's text for its forks, and hands onTurn the text", async () => {
    const { logged, warnings, turns } = await loggedProxy();
    try {
      const sent = pythonStyleBody("1.0", "32");
      await send(logged.url, "/v1/messages", anthropicHeaders("py-float"), sent);
      // A float written as JavaScript writes it, and 32.0 only where no prompt reads it.
      await send(logged.url, "/v1/messages", anthropicHeaders("py-kept"), pythonStyleBody("1.5", "32.0"));
      const javaScriptClient = new Anthropic({
        apiKey: API_KEY,
        baseURL: logged.url,
        defaultHeaders: { "x-claude-code-session-id": "js" },
        maxRetries: 0,
      });
      await javaScriptClient.messages.create({
        model: "claude-sonnet-5-5",
        max_tokens: 32,
        tools: [{ ...READ_TOOL, input_schema: { ...READ_TOOL.input_schema, default: 1.0 } as never }],
        messages: [{ role: "user", content: "@sim say ok" }],
      });
      await expect.poll(() => turns).toHaveLength(3);
      const [float, kept, js] = turns.map(({ turn }) => turn);
      expect(turns[0]!.text).toBe(sent);
      expect(float?.verbatim).toEqual([
        {
          at: ["tools", 0, "input_schema", "properties", "factor"],
          text: '{"type": "number", "default": 1.0}',
        },
      ]);
      expect(forkPrefixOfTurn(float!).verbatim).toEqual(float?.verbatim);
      expect(kept).not.toHaveProperty("verbatim");
      expect(js).not.toHaveProperty("verbatim");
      expect(forkPrefixOfTurn(js!)).not.toHaveProperty("verbatim");
    } finally {
      await logged.close();
    }
    // The forks keep those values: nothing to warn of.
    expect(warnings).toEqual([]);
  });

  it("keeps an OpenAI turn's values for its native prefix; a Gemini turn's need no keeping, and no warning", async () => {
    const { logged, warnings, turns } = await loggedProxy({ geminiUpstream: sim.url });
    const chatBody = (weight: string) =>
      `{"model": "gpt-5", "tools": [{"type": "function", "function": {"name": "fork", "parameters": {"type": "object", "properties": {"w": {"type": "number", "default": ${weight}}}}}}], "messages": [{"role": "user", "content": "@sim say ok"}]}`;
    const geminiBody = (weight: string) =>
      `{"contents": [{"role": "user", "parts": [{"text": "@sim say ok"}]}], "tools": [{"functionDeclarations": [{"name": "f", "parametersJsonSchema": {"type": "object", "properties": {"w": {"default": ${weight}}}}}]}]}`;
    const openai = (session: string) => ({ authorization: `Bearer ${API_KEY}`, "session-id": session });
    const gemini = { "x-goog-api-key": API_KEY };
    const generate = "/gemini/v1beta/models/gemini-2.5-flash:generateContent";
    try {
      await send(logged.url, "/openai/chat/completions", openai("py"), chatBody("1.0"));
      await send(logged.url, "/openai/chat/completions", openai("kept"), chatBody("1.5"));
      await send(logged.url, generate, gemini, geminiBody("1.0"));
      await expect.poll(() => turns).toHaveLength(3);
    } finally {
      await logged.close();
    }
    const [chat, kept, geminiTurn] = turns.map(({ turn }) => turn);
    const verbatim = [
      {
        at: ["tools", 0, "function", "parameters", "properties", "w"],
        text: '{"type": "number", "default": 1.0}',
      },
    ];
    expect(chat?.verbatim).toEqual(verbatim);
    expect(forkPrefixOfTurn(chat!).native?.verbatim).toEqual(verbatim);
    expect(kept).not.toHaveProperty("verbatim");
    // The Gemini API parses a request into its protocol buffers: `1.0` and the `1` a fork writes are
    // one value to it, so there is nothing to keep and nothing to warn of.
    expect(geminiTurn?.api).toBe("gemini");
    expect(geminiTurn).not.toHaveProperty("verbatim");
    expect(forkPrefixOfTurn(geminiTurn!).native).not.toHaveProperty("verbatim");
    expect(warnings).toEqual([]);
  });
});

describe("compressed replies", () => {
  let upstream: Server;
  let url: string;
  const events = [
    {
      type: "message_start",
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "m",
        content: [],
        stop_reason: null,
        usage: { input_tokens: 3, output_tokens: 0 },
      },
    },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello" } },
    { type: "content_block_stop", index: 0 },
    { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 1 } },
    { type: "message_stop" },
  ];
  const sse = events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join("");
  let acceptEncoding: string | undefined;

  beforeAll(async () => {
    // A gzip-speaking upstream: the simulator does not compress, the real API may.
    upstream = createServer((req, res) => {
      acceptEncoding = req.headers["accept-encoding"];
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "gzip" });
        res.end(gzipSync(sse));
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => upstream.close(() => resolve())));

  it("forwards the compressed bytes as they are and reads a decoded copy; offers only encodings it can read", async () => {
    let recorded!: (turn: ProxyTurn) => void;
    const turnRecorded = new Promise<ProxyTurn>((resolve) => {
      recorded = resolve;
    });
    const gzipProxy = await startProxy({ upstream: url, onTurn: (turn) => recorded(turn) });
    try {
      const response = await fetch(`${gzipProxy.url}/v1/messages`, {
        method: "POST",
        headers: { "accept-encoding": "gzip, zstd", "x-claude-code-session-id": "gz" },
        body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] }),
      });
      expect(response.headers.get("content-encoding")).toBe("gzip");
      expect(await response.text()).toBe(sse); // fetch decodes gzip itself
      expect(acceptEncoding).toBe("gzip");
      const turn = await turnRecorded;
      expect(turn.session).toBe("cc:gz");
      const message = turn.response as AssembledMessage;
      expect(message.content).toEqual([{ type: "text", text: "Hello" }]);
      expect(message.stop_reason).toBe("end_turn");
    } finally {
      await gzipProxy.close();
    }
  });
});

describe("OpenAI turns", () => {
  const FORKS = '@sim say Forking.\n@sim tool fork {"directive":"A"}\n@sim tool fork {"directive":"B"}';
  const chatTool = { type: "function", function: { name: "fork", parameters: { type: "object" } } };
  const responsesTool = { type: "function", name: "fork", parameters: { type: "object" } };

  /** Posts `body` to `/openai/<path>` and returns the text of the answer. */
  async function post(path: string, body: Record<string, unknown>, session: string): Promise<string> {
    const response = await fetch(`${proxy.url}/openai/${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${API_KEY}`,
        "session-id": session,
      },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    return response.text();
  }

  it.each([true, false])(
    "records a Chat Completions turn (stream %s) with the reply as the API takes it back",
    async (stream) => {
      const session = `chat-${stream}`;
      const body = {
        model: "gpt-5",
        stream,
        tools: [chatTool],
        messages: [{ role: "user", content: FORKS }],
      };
      const text = await post("chat/completions", body, session);
      const [turn] = proxy.turns.turnsOf(`codex:${session}`);
      expect(turn?.api).toBe("openai-chat");
      expect(turn?.path).toBe("/openai/chat/completions");
      expect(turn?.request).toEqual(body);
      const calls = turn!.toolCalls;
      expect(calls.map((call) => call.input)).toEqual([{ directive: "A" }, { directive: "B" }]);
      expect(turn?.response).toMatchObject({ role: "assistant", content: "Forking." });
      const ids = ((turn!.response as ChatReply).tool_calls as ChatToolCall[]).map((call) => call.id);
      expect(ids).toEqual(calls.map((call) => call.id));
      for (const id of ids) expect(text).toContain(id);
    },
  );

  it.each([true, false])("records a Responses turn (stream %s) as its output items", async (stream) => {
    const session = `responses-${stream}`;
    const body = { model: "gpt-5", stream, tools: [responsesTool], input: FORKS };
    const text = await post("responses", body, session);
    const [turn] = proxy.turns.turnsOf(`codex:${session}`);
    expect(turn?.api).toBe("openai-responses");
    const items = turn?.response as Record<string, unknown>[];
    // A reasoning model's output starts with its reasoning item.
    expect(items.map((item) => item.type)).toEqual([
      "reasoning",
      "message",
      "function_call",
      "function_call",
    ]);
    expect(turn?.toolCalls.map((call) => [call.id, call.name, call.input])).toEqual(
      items.slice(2).map((item) => [item.call_id, "fork", JSON.parse(String(item.arguments))]),
    );
    // The items are the API's own: the non-streamed answer's `output`, or the stream's final one.
    if (!stream) expect(items).toEqual((JSON.parse(text) as { output: unknown }).output);
  });
});
