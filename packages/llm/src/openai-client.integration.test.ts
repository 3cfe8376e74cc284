// The OpenAI client against the real simulator over real HTTP, on both APIs: streamed text and tool
// calls, usage with cached tokens under OpenAI's rules (1,024-token minimum, 128-token steps, routing
// by prompt start and prompt_cache_key), the API's refusals as typed errors, and aborts.
import { forkPrefixFromNative, type LlmError, type LlmRequest, nativeMessageCount } from "@forkd/core";
import { prepareForkRun, sealSharedPrefix, tieVerbatimTexts, verbatimValuesOf } from "@forkd/core/internal";
import { memberTextOf, parseJsonText } from "@forkd/protocol/internal";
import { ManualClock, type Sim, startSim } from "@forkd/sim";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type OpenAiApi, OpenAiLlmClient } from "./openai-client.js";
import { reviewConversation } from "./test-support/conversation.js";

let sim: Sim;
beforeAll(async () => {
  sim = await startSim({ port: 0 });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => sim.reset());

const client = (api: OpenAiApi) =>
  new OpenAiLlmClient({ api, baseURL: `${sim.url}/v1`, apiKey: "sk-test-openai", retry: { maxRetries: 0 } });

/** A conversation of about `tokens` tokens whose last user text is the simulator's script. */
const conversation = (tokens: number, ...script: string[]): LlmRequest =>
  reviewConversation("gpt-5", tokens, ...script);

/** `parent` answered "first", then the user's next turn. */
const secondTurn = (parent: LlmRequest): LlmRequest => ({
  ...parent,
  messages: [
    ...parent.messages,
    { role: "assistant", content: "first" },
    { role: "user", content: "@sim say second" },
  ],
});

describe.each(["chat", "responses"] as const)("OpenAI %s API", (api) => {
  it("streams text and reports the prompt's tokens, none cached on a cold cache", async () => {
    const events: string[] = [];
    const response = await client(api).createMessage(conversation(2000, "@sim say All good."), {
      onEvent: (e) => events.push(e.type),
    });
    // A reasoning model's Responses output starts with its reasoning item, kept as it came.
    expect(response.message.content).toEqual([
      ...(api === "responses"
        ? [
            {
              type: "openai_item",
              item: {
                id: expect.stringMatching(/^rs_/),
                type: "reasoning",
                summary: [],
                encrypted_content: expect.any(String),
              },
            },
          ]
        : []),
      { type: "text", text: "All good." },
    ]);
    expect(response.stop_reason).toBe("end_turn");
    expect(response.usage.cache_read_input_tokens).toBe(0);
    expect(response.usage.input_tokens).toBeGreaterThan(2000);
    expect(events[0]).toBe("response_started");
    expect(events).toContain("text_delta");
  });

  it("returns tool calls with the model's own arguments string", async () => {
    const response = await client(api).createMessage(
      conversation(100, '@sim tool Read {"file_path":"a.ts"}'),
    );
    expect(response.stop_reason).toBe("tool_use");
    const call = response.message.content.find((b) => b.type === "tool_use");
    expect(call).toMatchObject({
      name: "Read",
      input: { file_path: "a.ts" },
      openai_arguments: '{"file_path":"a.ts"}',
    });
  });

  it("reads a shared prefix in 128-token steps only under the same prompt_cache_key", async () => {
    const llm = client(api);
    const parent = conversation(3000, "@sim say first");
    const first = await llm.send(parent, { promptCacheKey: "k1" });
    const prompt = first.usage.input_tokens;
    const child = secondTurn(parent);
    const same = await llm.send(child, { promptCacheKey: "k1" });
    const read = same.usage.cache_read_input_tokens ?? 0;
    expect(read % 128).toBe(0);
    expect(read).toBeGreaterThanOrEqual(Math.floor(prompt / 128) * 128 - 128);
    expect(read).toBeLessThanOrEqual(prompt);
    const other = await llm.send(child, { promptCacheKey: "k2" });
    expect(other.usage.cache_read_input_tokens).toBe(0);
  });

  it("keeps a prefix sent with prompt_cache_retention 24h past in-memory's hour, and refuses a retention it does not know", async () => {
    const clock = new ManualClock(1_800_000_000_000);
    const timed = await startSim({ port: 0, clock });
    try {
      const llm = new OpenAiLlmClient({
        api,
        baseURL: `${timed.url}/v1`,
        apiKey: "sk-test-openai",
        retry: { maxRetries: 0 },
      });
      const parent = conversation(3000, "@sim say first");
      const child = secondTurn(parent);
      // In memory (gpt-5's default here): gone after five minutes unused.
      await llm.send(parent, { promptCacheKey: "mem" });
      clock.advance(5 * 60_000);
      expect((await llm.send(child, { promptCacheKey: "mem" })).usage.cache_read_input_tokens).toBe(0);
      // 24h: still read two hours later.
      await llm.send(parent, { promptCacheKey: "long", promptCacheRetention: "24h" });
      expect(JSON.parse(timed.requests().at(-1)!.body).prompt_cache_retention).toBe("24h");
      clock.advance(2 * 60 * 60_000);
      const later = await llm.send(child, { promptCacheKey: "long", promptCacheRetention: "24h" });
      expect(later.usage.cache_read_input_tokens).toBeGreaterThan(2048);
      const res = await fetch(`${timed.url}/v1/${api === "chat" ? "chat/completions" : "responses"}`, {
        method: "POST",
        headers: { authorization: "Bearer sk-test-openai", "content-type": "application/json" },
        body: JSON.stringify({ ...llm.body(parent), prompt_cache_retention: "1h" }),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe("prompt_cache_retention");
    } finally {
      await timed.close();
    }
  });

  it("caches nothing below 1,024 tokens", async () => {
    const llm = client(api);
    const small = conversation(600, "@sim say hi");
    await llm.createMessage(small);
    const again = await llm.createMessage(small);
    expect(again.usage.cache_read_input_tokens).toBe(0);
  });

  it("refuses an unknown model and a field the API does not know, as typed errors", async () => {
    const llm = client(api);
    await expect(
      llm.createMessage({ ...conversation(10, "@sim say x"), model: "gpt-nope" }),
    ).rejects.toMatchObject({ code: "not_found", status: 404 });
    await expect(
      llm.createMessage(
        { ...conversation(10, "@sim say x"), stop_sequences: undefined, metadata: undefined },
        {},
      ),
    ).resolves.toBeDefined();
    const bad = new OpenAiLlmClient({
      api,
      baseURL: `${sim.url}/v1`,
      apiKey: "sk-test-openai",
      retry: { maxRetries: 0 },
    });
    const body = bad.body(conversation(10, "@sim say x"));
    const res = await fetch(`${sim.url}/v1/${api === "chat" ? "chat/completions" : "responses"}`, {
      method: "POST",
      headers: { authorization: "Bearer sk-test-openai", "content-type": "application/json" },
      body: JSON.stringify({ ...body, cache_control: { type: "ephemeral" } }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: {
        message: "Unrecognized request argument supplied: cache_control",
        type: "invalid_request_error",
        param: "cache_control",
        code: null,
      },
    });
  });

  it("aborts mid-call with an aborted LlmError", async () => {
    const controller = new AbortController();
    const call = client(api).createMessage(conversation(10, "@sim ttft 5000", "@sim say slow"), {
      signal: controller.signal,
      onEvent: () => {},
    });
    setTimeout(() => controller.abort(), 50);
    await expect(call).rejects.toMatchObject({ code: "aborted" } satisfies Partial<LlmError>);
  });
});

describe("a Responses tool loop that stores nothing", () => {
  it("keeps a reasoning model's reasoning across a tool call: asked for encrypted, and sent back so", async () => {
    const llm = client("responses");
    const first = conversation(100, '@sim tool Read {"file_path":"a.ts"}');
    expect(llm.body(first)).toMatchObject({ store: false, include: ["reasoning.encrypted_content"] });
    const response = await llm.createMessage(first);
    const reasoning = (response.message.content[0] as unknown as { item: Record<string, unknown> }).item;
    expect(reasoning).toMatchObject({ type: "reasoning", encrypted_content: expect.any(String) });
    const call = response.message.content.find((block) => block.type === "tool_use") as unknown as {
      id: string;
    };
    const next = await llm.createMessage({
      ...first,
      messages: [
        ...first.messages,
        response.message,
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: call.id, content: "export {}" },
            { type: "text", text: "@sim say read" },
          ],
        },
      ],
    });
    expect(next.message.content.at(-1)).toEqual({ type: "text", text: "read" });
    const sent = JSON.parse(sim.requests().at(-1)!.body) as { input: unknown[] };
    expect(sent.input).toContainEqual(reasoning);

    // What the simulator, like the API, refuses under store: false: the reasoning without its
    // encrypted content, an id that refers to nothing stored.
    const { encrypted_content: _, ...bare } = reasoning;
    const refused = await fetch(`${sim.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: "Bearer sk-test-openai", "content-type": "application/json" },
      body: JSON.stringify({ ...llm.body(first), input: [...(llm.body(first).input as unknown[]), bare] }),
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
      /^Item with id 'rs_[^']+' not found\. Items are not persisted when `store` is set to false\./,
    );
  });
});

describe("a native Chat Completions parent", () => {
  it("starts the child's body with the parent's messages and reply, byte for byte", async () => {
    const parentBody = {
      model: "gpt-5",
      messages: [
        { role: "system", content: "You are qwen. ".repeat(400) },
        { role: "user", content: "Audit.\n@sim say ok" },
      ],
      tools: [
        { type: "function", function: { name: "Read", parameters: { type: "object", properties: {} } } },
      ],
      stream: true,
      stream_options: { include_usage: true },
    };
    const reply = {
      role: "assistant",
      content: "Forking.",
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "Read", arguments: '{"file_path":"x"}' } },
      ],
    };
    const prefix = forkPrefixFromNative({ api: "openai-chat", request: parentBody, reply: [reply] });
    const plan = prepareForkRun({
      runId: "r1",
      prefix,
      cacheShared: true,
      directive: "Check x.\n@sim say done",
    });
    const llm = client("chat");
    const body = llm.body(plan.request, {
      native: { prefix: prefix.native!, count: nativeMessageCount(prefix) },
    });
    const sent = JSON.stringify(body);
    const parentMessages = JSON.stringify(parentBody.messages);
    expect(sent).toContain(parentMessages.slice(0, -1));
    const messages = body.messages as Record<string, unknown>[];
    expect(messages[2]).toEqual(reply);
    expect(messages[3]).toMatchObject({ role: "tool", tool_call_id: "call_1" });
    expect(messages[4]).toMatchObject({ role: "user" });
    await llm.send(plan.request, { native: { prefix: prefix.native!, count: nativeMessageCount(prefix) } });
  });
});

describe("a native parent in Python", () => {
  // The openai Python SDK's bytes: a pydantic default written 1.0, a large integer with all its digits.
  const sent =
    '{"messages":[{"role":"system","content":"' +
    "You are a Python agent. ".repeat(300) +
    '"},{"role":"user","content":"Audit.\\n@sim say ok"}],"model":"gpt-5","tools":[{"type":"function","function":{"name":"search","parameters":{"properties":{"min_score":{"default":1.0,"type":"number"},"since":{"default":12345678901234567890,"type":"integer"}},"type":"object"}}}]}';

  it.each([true, false])(
    "sends its values as it wrote them, sealed (%s) as a daemon seals a stored prefix",
    async (stored) => {
      const request = parseJsonText(sent) as Record<string, unknown>;
      const verbatim = verbatimValuesOf(request, sent, "openai-chat");
      expect(verbatim.map(({ at }) => at.join("."))).toEqual([
        "tools.0.function.parameters.properties.min_score",
        "tools.0.function.parameters.properties.since",
      ]);
      const reply = { role: "assistant", content: "ok" };
      const built = forkPrefixFromNative({ api: "openai-chat", request, reply: [reply], verbatim });
      const prefix = tieVerbatimTexts(stored ? sealSharedPrefix(built) : built);
      const plan = prepareForkRun({
        runId: "r-py",
        prefix,
        cacheShared: true,
        directive: "Check.\n@sim say done",
      });
      await client("chat").send(plan.request, {
        native: { prefix: prefix.native!, count: nativeMessageCount(prefix) },
      });
      const body = sim.requests().at(-1)!.body;
      expect(body).toContain(`"tools":${memberTextOf(sent, "tools")}`);
      // The parent's messages, byte for byte, then its reply and the child's own.
      expect(body.startsWith(`{"messages":${memberTextOf(sent, "messages")!.slice(0, -1)},`)).toBe(true);
    },
  );
});
