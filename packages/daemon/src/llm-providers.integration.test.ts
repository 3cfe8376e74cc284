// The provider a run's requests go to, and the prompt_cache_key they carry, seen on the simulator's
// log: the spec's shard key wins, a native parent keeps its own key, any other child gets the key
// derived from its prefix; the retention is the spec's, else a native parent's own; a spec naming an
// API the daemon has no client for fails with its code.
import { createForkPrefix, derivedPromptCacheKey, forkPrefixFromNative, type LlmClient } from "@forkd/core";
import { prepareForkRun } from "@forkd/core/internal";
import { GeminiLlmClient, OpenAiLlmClient } from "@forkd/llm";
import { type ForkPrefix, type ForkSpec, ForkSpecSchema } from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DaemonError } from "./errors.js";
import { runApi, runLlmClient } from "./llm-providers.js";

let sim: Sim;
beforeAll(async () => {
  sim = await startSim({ port: 0 });
});
afterAll(async () => {
  await sim.close();
});

const unusedAnthropic: LlmClient = {
  createMessage: () => Promise.reject(new Error("the Anthropic client must not be used for an OpenAI run")),
};
const openai = (api: "chat" | "responses") =>
  new OpenAiLlmClient({ api, baseURL: `${sim.url}/v1`, apiKey: "sk-providers", retry: { maxRetries: 0 } });

function spec(provider?: ForkSpec["provider"]): ForkSpec {
  return ForkSpecSchema.parse({
    v: 1,
    run_id: "run-providers",
    parent: { agent_id: "p" },
    directive: "@sim say ok",
    prefix: { kind: "none" },
    created_at: 0,
    ...(provider === undefined ? {} : { provider }),
  });
}

const canonical: ForkPrefix = createForkPrefix({
  model: "gpt-5",
  max_tokens: 100,
  messages: [{ role: "user", content: "hello" }],
});

/** The body (as sent, and parsed) of the request `spec`'s run sends for `prefix`. */
async function bodySent(
  runSpec: ForkSpec,
  prefix: ForkPrefix,
): Promise<{ raw: string; body: Record<string, unknown> }> {
  const plan = prepareForkRun({
    runId: runSpec.run_id,
    prefix,
    cacheShared: true,
    directive: runSpec.directive,
  });
  const api = runApi(runSpec, prefix);
  const llm = runLlmClient({
    api,
    anthropic: unusedAnthropic,
    openai,
    spec: runSpec,
    prefix,
    prefixHash: plan.prefixHash,
  });
  sim.reset();
  await llm.createMessage(plan.request);
  const [entry] = sim.requests();
  return { raw: entry!.body, body: JSON.parse(entry!.body) as Record<string, unknown> };
}

/** The prompt_cache_key of the request `spec`'s run sends for `prefix`. */
async function keySent(runSpec: ForkSpec, prefix: ForkPrefix): Promise<unknown> {
  return (await bodySent(runSpec, prefix)).body.prompt_cache_key;
}

describe("runLlmClient", () => {
  it("sends the key derived from the prefix, unless the spec names a shard's key", async () => {
    const plan = prepareForkRun({ runId: "r", prefix: canonical, cacheShared: true, directive: "x" });
    expect(await keySent(spec({ api: "openai-chat" }), canonical)).toBe(
      derivedPromptCacheKey(plan.prefixHash!),
    );
    expect(await keySent(spec({ api: "openai-responses", prompt_cache_key: "shard-2" }), canonical)).toBe(
      "shard-2",
    );
  });

  it("keeps a native parent's own key (or none), so its children land where its cache is", async () => {
    const request = {
      model: "gpt-5",
      messages: [{ role: "user", content: "hi" }],
      prompt_cache_key: "thread-7",
    };
    expect(await keySent(spec(), forkPrefixFromNative({ api: "openai-chat", request, reply: [] }))).toBe(
      "thread-7",
    );
    const { prompt_cache_key: _, ...keyless } = request;
    expect(
      await keySent(spec(), forkPrefixFromNative({ api: "openai-chat", request: keyless, reply: [] })),
    ).toBeUndefined();
  });

  it("sends the spec's prompt_cache_retention, else a native parent's own as it was, else none", async () => {
    expect((await bodySent(spec({ api: "openai-chat" }), canonical)).body).not.toHaveProperty(
      "prompt_cache_retention",
    );
    const retained = spec({ api: "openai-responses", prompt_cache_retention: "24h" });
    expect((await bodySent(retained, canonical)).body.prompt_cache_retention).toBe("24h");
    // A native parent's own field, and the caching options and explicit breakpoint a client writes
    // for GPT-5.6 and later (fields of the pinned SDK's types), come back byte for byte.
    const request = {
      model: "gpt-5.6-terra",
      messages: [
        {
          role: "user",
          content: [{ type: "text", text: "hi", prompt_cache_breakpoint: { mode: "explicit" } }],
        },
      ],
      prompt_cache_options: { mode: "explicit", ttl: "30m" },
      prompt_cache_retention: "in_memory",
    };
    const native = forkPrefixFromNative({ api: "openai-chat", request, reply: [] });
    const sent = await bodySent(spec(), native);
    expect(sent.raw).toContain(JSON.stringify(request.messages[0]));
    expect(sent.raw).toContain(
      '"prompt_cache_options":{"mode":"explicit","ttl":"30m"},"prompt_cache_retention":"in_memory"',
    );
    // The spec's wins, in the same place.
    const overridden = await bodySent(spec({ api: "openai-chat", prompt_cache_retention: "24h" }), native);
    expect(overridden.raw).toContain('"prompt_cache_retention":"24h"');
    expect(overridden.body.prompt_cache_options).toEqual({ mode: "explicit", ttl: "30m" });
    // And on Responses: an input item's breakpoint and the request's options as the parent sent them.
    const item = {
      role: "user",
      content: [{ type: "input_text", text: "hi", prompt_cache_breakpoint: { mode: "explicit" } }],
    };
    const responses = forkPrefixFromNative({
      api: "openai-responses",
      request: { model: "gpt-5.6-terra", input: [item], prompt_cache_options: { mode: "implicit" } },
      reply: [],
    });
    const sentResponses = await bodySent(spec(), responses);
    expect(sentResponses.raw).toContain(`"input":[${JSON.stringify(item)}`);
    expect(sentResponses.raw).toContain('"prompt_cache_options":{"mode":"implicit"}');
  });

  it("marks, on gpt-5.6, where a rendered parent's request ended besides the fork's own breakpoint", async () => {
    const parent = createForkPrefix({
      model: "gpt-5.6-terra",
      max_tokens: 100,
      messages: [{ role: "user", content: "hello" }],
    });
    const sent = await bodySent(spec({ api: "openai-responses" }), parent);
    // The parent's message is the child's first item: its block is marked, as the parent sent it but
    // for the marker (a turn without a reply: it is also the fork's breakpoint); the directive follows.
    const [first] = sent.body.input as { content: unknown[] }[];
    expect(first!.content[0]).toEqual({
      type: "input_text",
      text: "hello",
      prompt_cache_breakpoint: { mode: "explicit" },
    });
    expect(first!.content).toHaveLength(2);
    // Before gpt-5.6: none.
    expect((await bodySent(spec({ api: "openai-responses" }), canonical)).raw).not.toContain(
      "prompt_cache_breakpoint",
    );
  });

  it("fails with provider_unavailable for an API without a client, or one the native prefix was not sent to", () => {
    const native = forkPrefixFromNative({
      api: "openai-chat",
      request: { model: "gpt-5", messages: [] },
      reply: [],
    });
    expect(() => runApi(spec({ api: "openai-responses" }), native)).toThrow(DaemonError);
    expect(() => runApi(spec({ api: "anthropic" }), native)).toThrow(/cannot run on anthropic/);
    expect(runApi(spec(), null)).toBe("anthropic");
    try {
      runLlmClient({
        api: "openai-chat",
        anthropic: unusedAnthropic,
        openai: undefined,
        spec: spec(),
        prefix: canonical,
        prefixHash: null,
      });
      expect.unreachable();
    } catch (error) {
      expect((error as DaemonError).code).toBe("provider_unavailable");
    }
  });

  describe("gemini", () => {
    // A parent's turn that got a reply: the children share its messages and the reply.
    const geminiPrefix: ForkPrefix = {
      ...createForkPrefix({
        model: "gemini-2.5-flash",
        max_tokens: 100,
        system: `You review code. ${"Background on the codebase. ".repeat(400)}`,
        messages: [{ role: "user", content: "hello" }],
      }),
      reply: { role: "assistant", content: [{ type: "text", text: "Looking." }] },
    };
    const geminiRun = async (runSpec: ForkSpec, cacheShared: boolean) => {
      const plan = prepareForkRun({
        runId: runSpec.run_id,
        prefix: geminiPrefix,
        cacheShared,
        directive: "@sim say ok",
      });
      const llm = runLlmClient({
        api: runApi(runSpec, geminiPrefix),
        anthropic: unusedAnthropic,
        openai: undefined,
        gemini: new GeminiLlmClient({
          baseURL: sim.url,
          apiKey: "gemini-providers",
          retry: { maxRetries: 0 },
        }),
        cacheShared,
        spec: runSpec,
        prefix: geminiPrefix,
        prefixHash: plan.prefixHash,
      });
      await llm.createMessage(plan.request);
      const generate = sim.requests().find((e) => e.path.includes(":streamGenerateContent"));
      return JSON.parse(generate!.body) as Record<string, unknown>;
    };

    it("names the fan-out's explicit cache for a parent's prefix, and none for the daemon's own request", async () => {
      sim.reset();
      const shared = await geminiRun(spec({ api: "gemini" }), true);
      expect(shared.cachedContent).toMatch(/^cachedContents\//);
      expect(shared.systemInstruction).toBeUndefined();
      sim.reset();
      const own = await geminiRun(spec({ api: "gemini" }), false);
      expect(own.cachedContent).toBeUndefined();
      expect(own.systemInstruction).toBeDefined();
    });

    it("names the cache the spec gives (one the parent made), without looking for one", async () => {
      sim.reset();
      const made = await fetch(`${sim.url}/v1beta/cachedContents?key=gemini-providers`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "models/gemini-2.5-flash",
          contents: [{ role: "user", parts: [{ text: "x".repeat(8000) }] }],
        }),
      });
      const { name } = (await made.json()) as { name: string };
      const before = sim.requests().length;
      const body = await geminiRun(spec({ api: "gemini", cached_content: name }), true);
      expect(body.cachedContent).toBe(name);
      const after = sim.requests().slice(before);
      expect(after.filter((e) => e.path.startsWith("/v1beta/cachedContents"))).toHaveLength(0);
    });

    it("fails with provider_unavailable without a Gemini client", () => {
      try {
        runLlmClient({
          api: "gemini",
          anthropic: unusedAnthropic,
          openai: undefined,
          spec: spec({ api: "gemini" }),
          prefix: geminiPrefix,
          prefixHash: null,
        });
        expect.unreachable();
      } catch (error) {
        expect((error as DaemonError).code).toBe("provider_unavailable");
        expect((error as DaemonError).message).toContain("GEMINI_API_KEY");
      }
    });
  });
});
