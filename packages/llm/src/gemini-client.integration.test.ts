// The Gemini client against the real simulator over real HTTP: streamed text and function calls,
// usage with cachedContentTokenCount, one explicit cache per prefix (created once, found by its
// siblings, its creation billed once), the API's refusals as typed errors, and aborts.
import {
  GEMINI_CACHE_RENEW_BELOW_SECONDS,
  GEMINI_CACHE_TTL_SECONDS,
  type LlmError,
  type LlmRequest,
} from "@forkd/core";
import { ManualClock, type Sim, startSim } from "@forkd/sim";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { GeminiLlmClient } from "./gemini-client.js";
import { reviewConversation } from "./test-support/conversation.js";
import { costOfUsage } from "./usage.js";

let sim: Sim;
beforeAll(async () => {
  sim = await startSim({ port: 0 });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => sim.reset());

const client = () =>
  new GeminiLlmClient({ baseURL: sim.url, apiKey: "gemini-test-key", retry: { maxRetries: 0 } });

/** A conversation of about `tokens` tokens whose last user text is the simulator's script. */
const conversation = (tokens: number, ...script: string[]): LlmRequest =>
  reviewConversation("gemini-2.5-flash", tokens, ...script);

/** `parent`, answered `answer`, then a child's own turn `directive`. */
function childOf(parent: LlmRequest, answer: string, directive: string): LlmRequest {
  return {
    ...parent,
    messages: [
      ...parent.messages,
      { role: "assistant", content: answer },
      { role: "user", content: directive },
    ],
  };
}

const geminiRequests = (suffix: string) =>
  sim.requests().filter((entry) => entry.path.endsWith(suffix) && entry.status === 200);

describe("Gemini generateContent", () => {
  it("streams text over SSE and reports the prompt's tokens, none cached on a cold cache", async () => {
    const events: string[] = [];
    const response = await client().createMessage(conversation(2000, "@sim say All good."), {
      onEvent: (e) => events.push(e.type),
    });
    expect(response.message.content).toMatchObject([{ type: "text", text: "All good." }]);
    expect(response.stop_reason).toBe("end_turn");
    expect(response.usage.cache_read_input_tokens).toBe(0);
    expect(response.usage.input_tokens).toBeGreaterThan(2000);
    expect(events[0]).toBe("response_started");
    expect(events).toContain("text_delta");
    const [entry] = geminiRequests(":streamGenerateContent");
    expect(entry?.model).toBe("gemini-2.5-flash");
    const body = JSON.parse(entry!.body) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(["contents", "systemInstruction", "tools", "generationConfig"]);
  });

  it("returns function calls as tool_use blocks that keep their part", async () => {
    const response = await client().createMessage(conversation(100, '@sim tool Read {"file_path":"a.ts"}'));
    expect(response.stop_reason).toBe("tool_use");
    const call = response.message.content.find((b) => b.type === "tool_use");
    expect(call).toMatchObject({
      name: "Read",
      input: { file_path: "a.ts" },
      gemini_part: { functionCall: { name: "Read", args: { file_path: "a.ts" } } },
    });
  });

  it("returns a function call's escaped argument keys as the model wrote them, where the SDK's parse misreads them", async () => {
    // Leaves the map transition that makes V8 12.8+ (Node 24) read the `"\""` key after `file_path`
    // as `\` (https://github.com/nodejs/node/issues/63785); harmless on older V8.
    JSON.parse('{"file_path":[],"\\\\":0}');
    const args = { file_path: "a.ts", '"': 1 };
    const response = await client().createMessage(
      conversation(100, `@sim tool Read ${JSON.stringify(args)}`),
    );
    const call = response.message.content.find((b) => b.type === "tool_use");
    expect(call).toMatchObject({ input: args, gemini_part: { functionCall: { name: "Read", args } } });
  });

  it("reads a prefix it sent shortly before from the implicit cache", async () => {
    const llm = client();
    const parent = conversation(3000, "@sim say first");
    await llm.createMessage(parent);
    const second = await llm.createMessage(childOf(parent, "first", "@sim say second"));
    expect(second.usage.cache_read_input_tokens).toBeGreaterThan(3000);
  });

  it("makes one explicit cache of a prefix, names it in every child, and bills its creation once", async () => {
    const llm = client();
    const parent = conversation(3000, "@sim say parent");
    const count = parent.messages.length + 1; // the parent's messages and its reply
    const children = [1, 2, 3].map((i) => childOf(parent, "parent", `@sim say child ${i}`));
    const [first, ...others] = await Promise.all(
      children.map((child) => llm.send(child, { count, cachedContent: "auto" })),
    );
    const creations = geminiRequests("/v1beta/cachedContents").filter((e) => e.method === "POST");
    expect(creations).toHaveLength(1);
    const created = creations[0]!;
    const cache = JSON.parse(created.body) as Record<string, unknown>;
    expect(cache.ttl).toBe(`${GEMINI_CACHE_TTL_SECONDS}s`);
    expect(cache.displayName).toMatch(/^forkd-[0-9a-f]{32}$/);
    expect(cache.contents).toEqual([
      { role: "user", parts: [{ text: parent.messages[0]!.content as string }] },
      { role: "model", parts: [{ text: "parent" }] },
    ]);
    const written = created.usage?.cache_creation_input_tokens ?? 0;
    expect(written).toBeGreaterThan(3000);
    const all = [first!, ...others];
    expect(all.map((r) => r.usage.cache_creation_input_tokens).sort()).toEqual([0, 0, written]);
    for (const response of all) expect(response.usage.cache_read_input_tokens).toBe(written);
    for (const entry of geminiRequests(":streamGenerateContent")) {
      const body = JSON.parse(entry.body) as Record<string, unknown>;
      expect(body.cachedContent).toMatch(/^cachedContents\//);
      expect(body.systemInstruction).toBeUndefined();
      expect(body.tools).toBeUndefined();
      expect(body.contents).toHaveLength(1);
    }
  });

  it("finds a sibling's cache by its display name instead of making another", async () => {
    const parent = conversation(3000, "@sim say parent");
    const count = parent.messages.length + 1;
    await client().send(childOf(parent, "parent", "@sim say one"), { count, cachedContent: "auto" });
    // Another daemon: a client of its own, with nothing remembered.
    const other = await client().send(childOf(parent, "parent", "@sim say two"), {
      count,
      cachedContent: "auto",
    });
    expect(geminiRequests("/v1beta/cachedContents").filter((e) => e.method === "POST")).toHaveLength(1);
    expect(other.usage.cache_creation_input_tokens).toBe(0);
    expect(other.usage.cache_read_input_tokens).toBeGreaterThan(3000);
  });

  it("sends a prefix below the model's explicit-cache minimum whole", async () => {
    const parent = conversation(200, "@sim say parent");
    const response = await client().send(childOf(parent, "parent", "@sim say child"), {
      count: 2,
      cachedContent: "auto",
    });
    expect(response.usage.cache_creation_input_tokens).toBe(0);
    const [entry] = geminiRequests(":streamGenerateContent");
    expect((JSON.parse(entry!.body) as Record<string, unknown>).cachedContent).toBeUndefined();
  });

  it("makes the cache again, once, when the one it named is gone", async () => {
    const llm = client();
    const parent = conversation(3000, "@sim say parent");
    const count = parent.messages.length + 1;
    await llm.send(childOf(parent, "parent", "@sim say one"), { count, cachedContent: "auto" });
    const list = (await (await fetch(`${sim.url}/v1beta/cachedContents?key=gemini-test-key`)).json()) as {
      cachedContents: { name: string }[];
    };
    const name = list.cachedContents[0]!.name;
    const deleted = await fetch(`${sim.url}/v1beta/${name}?key=gemini-test-key`, { method: "DELETE" });
    expect(deleted.status).toBe(200);
    const again = await llm.send(childOf(parent, "parent", "@sim say two"), { count, cachedContent: "auto" });
    expect(again.usage.cache_creation_input_tokens).toBeGreaterThan(3000);
    expect(geminiRequests("/v1beta/cachedContents").filter((e) => e.method === "POST")).toHaveLength(2);
  });

  it("refuses an unknown model with a typed not_found error", async () => {
    const error = (await client()
      .createMessage({ ...conversation(10, "@sim say x"), model: "gemini-0-nope" })
      .catch((e: unknown) => e)) as LlmError;
    expect(error.code).toBe("not_found");
    expect(error.status).toBe(404);
    expect(error.message).toContain("NOT_FOUND");
  });

  it("rejects with aborted when the caller's signal fires", async () => {
    const controller = new AbortController();
    const pending = client().createMessage(conversation(10, "@sim ttft 5000", "@sim say late"), {
      signal: controller.signal,
      onEvent: () => undefined,
    });
    setImmediate(() => controller.abort());
    const error = (await pending.catch((e: unknown) => e)) as LlmError;
    expect(error.code).toBe("aborted");
  });

  it("renews a cache it still needs when less than the renewal margin is left, once for concurrent siblings", async () => {
    // A simulator whose clock runs 40 s behind: a cache made now expires 20 s from the client's now.
    const clock = new ManualClock(Date.now() - 40_000);
    const late = await startSim({ port: 0, clock });
    try {
      const llm = new GeminiLlmClient({
        baseURL: late.url,
        apiKey: "gemini-test-key",
        retry: { maxRetries: 0 },
      });
      const parent = conversation(3000, "@sim say parent");
      const count = parent.messages.length + 1;
      await llm.send(childOf(parent, "parent", "@sim say one"), { count, cachedContent: "auto" });
      const patches = () => late.requests().filter((e) => e.method === "PATCH" && e.status === 200);
      // Made with 20 s left (under the 30 s margin): renewed before the request names it.
      expect(patches()).toHaveLength(1);
      expect(patches()[0]!.body).toBe(JSON.stringify({ ttl: `${GEMINI_CACHE_TTL_SECONDS}s` }));
      // Still 20 s left by the client's clock: two siblings at once renew it once between them.
      await Promise.all(
        ["two", "three"].map((n) =>
          llm.send(childOf(parent, "parent", `@sim say ${n}`), { count, cachedContent: "auto" }),
        ),
      );
      expect(patches()).toHaveLength(2);
      // Renewed to a full TTL from the simulator's now.
      const listed = (await (
        await fetch(`${late.url}/v1beta/cachedContents?key=gemini-test-key`)
      ).json()) as {
        cachedContents: { expireTime: string }[];
      };
      expect(Date.parse(listed.cachedContents[0]!.expireTime)).toBe(
        clock.now() + GEMINI_CACHE_TTL_SECONDS * 1000,
      );
    } finally {
      await late.close();
    }
  });

  describe("renewal storage", () => {
    // The simulator and the client read one manual clock: the boundary is exact, not a race.
    const start = 1_800_000_000_000;
    let clock: ManualClock;
    let timed: Sim;
    beforeEach(async () => {
      clock = new ManualClock(start);
      timed = await startSim({ port: 0, clock });
    });
    afterEach(async () => {
      await timed.close();
    });
    const timedClient = () =>
      new GeminiLlmClient({
        baseURL: timed.url,
        apiKey: "gemini-test-key",
        retry: { maxRetries: 0 },
        now: () => clock.now(),
      });
    const patches = () => timed.requests().filter((e) => e.method === "PATCH" && e.status === 200);
    const margin = GEMINI_CACHE_RENEW_BELOW_SECONDS * 1000;
    /** A child of `parent` saying `text`, naming the fan-out's cache. */
    const sendChild = (llm: GeminiLlmClient, parent: LlmRequest, text: string) =>
      llm.send(childOf(parent, "parent", `@sim say ${text}`), {
        count: parent.messages.length + 1,
        cachedContent: "auto",
      });

    it("renews nothing and bills no storage for a fan-out that ends just before the renewal margin", async () => {
      const llm = timedClient();
      const parent = conversation(3000, "@sim say parent");
      const first = await sendChild(llm, parent, "one");
      // The last child starts with 1 ms more than the margin left.
      clock.advance(GEMINI_CACHE_TTL_SECONDS * 1000 - margin - 1);
      const last = await sendChild(llm, parent, "two");
      expect(patches()).toHaveLength(0);
      for (const response of [first, last])
        expect(response.usage.cache_storage_token_seconds).toBeUndefined();
    });

    it("renews once just past it, and bills the seconds it added × the tokens, once, at the documented price", async () => {
      const llm = timedClient();
      const parent = conversation(3000, "@sim say parent");
      const first = await sendChild(llm, parent, "one");
      const tokens = first.usage.cache_creation_input_tokens ?? 0;
      expect(tokens).toBeGreaterThan(3000);
      // 1 ms less than the margin left: the next children renew it (once between them) first.
      const elapsed = GEMINI_CACHE_TTL_SECONDS * 1000 - margin + 1;
      clock.advance(elapsed);
      const later = await Promise.all(["two", "three"].map((n) => sendChild(llm, parent, n)));
      expect(patches()).toHaveLength(1);
      // The expiry moved from start + TTL to now + TTL: by the time elapsed since the creation.
      const stored = later.map((r) => r.usage.cache_storage_token_seconds ?? 0);
      expect(stored.filter((s) => s > 0)).toHaveLength(1);
      const seconds = elapsed / 1000;
      expect(Math.max(...stored)).toBeCloseTo(tokens * seconds, 6);
      // Priced at Gemini 2.5 Flash's storage: 1.00 USD per million tokens per hour.
      const renewing = later.find((r) => (r.usage.cache_storage_token_seconds ?? 0) > 0)!;
      const withoutStorage = { ...renewing.usage, cache_storage_token_seconds: undefined };
      const storageUsd =
        (costOfUsage("gemini-2.5-flash", renewing.usage) ?? 0) -
        (costOfUsage("gemini-2.5-flash", withoutStorage) ?? 0);
      expect(storageUsd).toBeCloseTo((tokens * seconds * 1.0) / 3600 / 1_000_000, 12);
      // Nothing is billed again by a child after it.
      const after = await sendChild(llm, parent, "four");
      expect(after.usage.cache_storage_token_seconds).toBeUndefined();
    });
  });
});
