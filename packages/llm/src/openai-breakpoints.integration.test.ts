// GPT-5.6 on, over real HTTP to the simulator: a fork's children mark the last block they share with
// `prompt_cache_breakpoint`, so the second child reads the prefix the first wrote (writes billed as
// such); a native parent's bytes stay its own but for that one marker; the API's rules on breakpoints
// (the 1,024-token minimum at the boundary, the models that take them, the blocks that carry them)
// through the `openai` SDK's own request types.
import { forkPrefixFromNative, type LlmRequest, nativeMessageCount } from "@forkd/core";
import { prepareForkRun } from "@forkd/core/internal";
import type { ForkPrefix } from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import OpenAI from "openai";
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

const MODEL = "gpt-5.6-terra";
const client = (api: OpenAiApi) =>
  new OpenAiLlmClient({ api, baseURL: `${sim.url}/v1`, apiKey: "sk-test-openai", retry: { maxRetries: 0 } });
const sdk = () => new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: "sk-test-openai", maxRetries: 0 });

/** A canonical parent of about 3,000 tokens whose reply forks (one tool call). */
const parentPrefix = (): ForkPrefix => ({
  params: reviewConversation(MODEL, 3000, "@sim say Splitting."),
  reply: {
    role: "assistant",
    content: [
      { type: "text", text: "Splitting." },
      { type: "tool_use", id: "call_1", name: "Read", input: { file_path: "a.ts" } },
    ],
  },
});

const childOf = (prefix: ForkPrefix, n: number): LlmRequest =>
  prepareForkRun({ runId: `r${n}`, prefix, cacheShared: true, directive: `Slice ${n}.\n@sim say done ${n}` })
    .request;

/** Every content block of a body that carries a breakpoint. */
function markers(body: Record<string, unknown>): unknown[] {
  const found: unknown[] = [];
  JSON.stringify(body, (key, value: unknown) => {
    if (key === "prompt_cache_breakpoint") found.push(value);
    return value;
  });
  return found;
}

describe.each(["chat", "responses"] as const)("the children of a fork on gpt-5.6 (%s)", (api) => {
  it("mark the last block they share, and the second child reads the prefix the first wrote", async () => {
    const prefix = parentPrefix();
    const llm = client(api);
    const run = llm.forRun({ promptCacheKey: "forkd-siblings" });
    const [one, two, three] = [1, 2, 3].map((n) => childOf(prefix, n));
    // One marker, on the placeholder that answers the parent's tool call (shared by every sibling).
    const body = llm.body(one!, { promptCacheKey: "forkd-siblings" });
    expect(markers(body)).toEqual([{ mode: "explicit" }]);
    const marked = JSON.stringify(body).indexOf("prompt_cache_breakpoint");
    expect(JSON.stringify(body).lastIndexOf("call_1", marked)).toBeGreaterThan(0);
    expect(JSON.stringify(body).slice(marked)).toContain("Slice 1.");

    const first = await run.createMessage(one!);
    expect(first.usage.cache_read_input_tokens).toBe(0);
    // Writes are billed as writes: the whole prompt, to its implicit breakpoint at the directive.
    const firstPrompt = first.usage.input_tokens + (first.usage.cache_creation_input_tokens ?? 0);
    expect(first.usage.cache_creation_input_tokens).toBe(firstPrompt);
    const second = await run.createMessage(two!);
    const read = second.usage.cache_read_input_tokens ?? 0;
    // The parent's 3,000 tokens and its reply and the placeholder, not the directive.
    expect(read).toBeGreaterThan(3000);
    expect(read).toBeLessThan(firstPrompt);
    // Exactly the breakpoint's prefix: the same for every later sibling, and not a 128-token step.
    const third = await run.createMessage(three!);
    expect(third.usage.cache_read_input_tokens).toBe(read);
    // What the second child wrote: only its own tail past the shared prefix.
    const secondPrompt = second.usage.input_tokens + (second.usage.cache_creation_input_tokens ?? 0) + read;
    expect(second.usage.cache_creation_input_tokens).toBe(secondPrompt - read);
  });

  it("with the parent's message count, also mark where the parent's request ended: the first child reads it (Responses)", async () => {
    const prefix = parentPrefix();
    const llm = client(api);
    const options = { promptCacheKey: "forkd-parent", parentMessages: prefix.params.messages.length };
    const body = llm.body(childOf(prefix, 1), options);
    // The parent's last message and the placeholder (Chat: the parent's string message has no block).
    expect(markers(body)).toHaveLength(api === "chat" ? 1 : 2);
    const parent = await llm.send(prefix.params as LlmRequest, { promptCacheKey: "forkd-parent" });
    const parentPrompt = parent.usage.input_tokens + (parent.usage.cache_creation_input_tokens ?? 0);
    const first = await llm.send(childOf(prefix, 1), options);
    // On Chat the first child has no breakpoint where the parent's request ended: it reads nothing.
    expect(first.usage.cache_read_input_tokens).toBe(api === "chat" ? 0 : parentPrompt);
    // The request's own objects are not changed.
    expect(markers(prefix.params as unknown as Record<string, unknown>)).toHaveLength(0);
  });
});

describe("a native Responses parent on gpt-5.6", () => {
  const parentBody = (ownBreakpoint: boolean) => ({
    model: MODEL,
    instructions: "You are codex. ".repeat(400),
    input: [
      {
        type: "message",
        role: "developer",
        content: [
          {
            type: "input_text",
            text: "Project rules. ".repeat(300),
            ...(ownBreakpoint ? { prompt_cache_breakpoint: { mode: "explicit" } } : {}),
          },
        ],
      },
      { type: "message", role: "user", content: [{ type: "input_text", text: "Audit.\n@sim say ok" }] },
    ],
    stream: true,
  });

  it("keeps the parent's bytes but for one marker on its last block, and its own breakpoints as sent", async () => {
    const request = parentBody(true);
    const prefix = forkPrefixFromNative({ api: "openai-responses", request, reply: [] });
    const llm = client("responses");
    const native = { prefix: prefix.native!, count: nativeMessageCount(prefix) };
    const body = llm.body(childOf(prefix, 1), { native });
    const input = body.input as Record<string, unknown>[];
    // The parent's own breakpoint, byte for byte; the fork's on the parent's last block, nothing else.
    expect(JSON.stringify(input[0])).toBe(JSON.stringify(request.input[0]));
    const last = structuredClone(request.input[1]!) as { content: Record<string, unknown>[] };
    last.content[0]!.prompt_cache_breakpoint = { mode: "explicit" };
    expect(input[1]).toEqual(last);
    expect(markers(body)).toHaveLength(2);
    // The parent's request wrote its implicit breakpoint at its last message: the first child reads it.
    const parent = await sdk().responses.create({
      ...request,
      stream: false,
    } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    const first = await llm.send(childOf(prefix, 1), { native });
    // All of it: its own breakpoint's shorter prefix would do without the fork's marker.
    expect(first.usage.cache_read_input_tokens).toBe(parent.usage?.input_tokens);
    const second = await llm.send(childOf(prefix, 2), { native });
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_read_input_tokens);
  });
});

describe("a native Responses parent on gpt-5.6 whose reply forks", () => {
  it("marks where the parent's request ended and the placeholder: the first child reads the parent's prefix, the next ones the first child's", async () => {
    const request = {
      model: MODEL,
      instructions: "You are codex. ".repeat(400),
      input: [
        { type: "message", role: "user", content: [{ type: "input_text", text: "Audit.\n@sim say ok" }] },
      ],
    };
    const reply = [{ type: "function_call", call_id: "call_9", name: "Task", arguments: '{"n":3}' }];
    const prefix = forkPrefixFromNative({ api: "openai-responses", request, reply });
    const llm = client("responses");
    const native = { prefix: prefix.native!, count: nativeMessageCount(prefix) };
    const body = llm.body(childOf(prefix, 1), { native });
    expect(markers(body)).toHaveLength(2);
    // The parent's reply as it came, and the placeholder that answers it marked.
    const input = body.input as Record<string, unknown>[];
    expect(input[1]).toEqual(reply[0]);
    expect(input[2]).toMatchObject({
      type: "function_call_output",
      call_id: "call_9",
      output: [{ type: "input_text", prompt_cache_breakpoint: { mode: "explicit" } }],
    });
    const parent = await sdk().responses.create(request as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    const first = await llm.send(childOf(prefix, 1), { native });
    expect(first.usage.cache_read_input_tokens).toBe(parent.usage?.input_tokens);
    const second = await llm.send(childOf(prefix, 2), { native });
    expect(second.usage.cache_read_input_tokens).toBeGreaterThan(parent.usage?.input_tokens ?? 0);
    expect(second.usage.cache_read_input_tokens).toBeLessThan(
      first.usage.input_tokens +
        (first.usage.cache_creation_input_tokens ?? 0) +
        (first.usage.cache_read_input_tokens ?? 0),
    );
  });
});

describe("the API's breakpoint rules, through the SDK's types", () => {
  /**
   * A Responses input whose first message ends at exactly `tokens` tokens at a breakpoint, then a
   * question. The simulator renders, before the marked block: `null` (instructions), `null` (tools)
   * and the message's other fields, `{"type":"message","role":"user"}`, each on a line; then the block
   * `{"type":"input_text","text":"…"}`: 4 + 1 + 4 + 1 + 32 + 1 + 31 = 74 characters and the text, 4 a token.
   */
  const boundary = (tokens: number, question: string): OpenAI.Responses.ResponseInputItem[] => [
    {
      type: "message",
      role: "user",
      content: [
        {
          type: "input_text",
          text: "x".repeat(tokens * 4 - 74),
          prompt_cache_breakpoint: { mode: "explicit" },
        },
      ],
    },
    { type: "message", role: "user", content: [{ type: "input_text", text: `${question}\n@sim say ok` }] },
  ];
  const create = (input: OpenAI.Responses.ResponseInputItem[], model = MODEL) =>
    sdk().responses.create({ model, input, prompt_cache_options: { mode: "explicit", ttl: "30m" } });

  it("caches a breakpoint's prefix of 1,024 tokens and reads exactly it; at 1,023 neither", async () => {
    const at = await create(boundary(1024, "first"));
    expect(at.usage?.input_tokens_details).toEqual({ cached_tokens: 0, cache_write_tokens: 1024 });
    const again = await create(boundary(1024, "second"));
    expect(again.usage?.input_tokens_details).toEqual({ cached_tokens: 1024, cache_write_tokens: 0 });
    const below = await create(boundary(1023, "first"));
    expect(below.usage?.input_tokens_details).toEqual({ cached_tokens: 0, cache_write_tokens: 0 });
    const belowAgain = await create(boundary(1023, "second"));
    expect(belowAgain.usage?.input_tokens_details.cached_tokens).toBe(0);
  });

  it("refuses breakpoints and their options on a model before gpt-5.6, on output, and in a shape the types do not give", async () => {
    const refused = (call: Promise<unknown>) => expect(call).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await refused(create(boundary(1024, "q"), "gpt-5.5"));
    await refused(
      sdk().responses.create({ model: "gpt-5", input: "hi", prompt_cache_options: { mode: "implicit" } }),
    );
    await refused(
      sdk().chat.completions.create({
        model: "gpt-5.4",
        messages: [
          {
            role: "user",
            content: [{ type: "text", text: "hi", prompt_cache_breakpoint: { mode: "explicit" } }],
          },
        ],
      }),
    );
    const onOutput = [
      ...boundary(1024, "q").slice(0, 1),
      {
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: "ok", prompt_cache_breakpoint: { mode: "explicit" } }],
      },
    ] as unknown as OpenAI.Responses.ResponseInputItem[];
    await refused(create(onOutput));
    await refused(
      create([
        {
          type: "message",
          role: "user",
          content: [{ type: "input_text", text: "hi", prompt_cache_breakpoint: { mode: "auto" } }],
        },
      ] as unknown as OpenAI.Responses.ResponseInputItem[]),
    );
    await refused(
      sdk().responses.create({
        model: MODEL,
        input: "hi",
        prompt_cache_options: {
          ttl: "12h",
        } as unknown as OpenAI.Responses.ResponseCreateParams.PromptCacheOptions,
      }),
    );
    // The same request, well formed, is served.
    await expect(create(boundary(1024, "q"))).resolves.toMatchObject({ status: "completed" });
  });
});
