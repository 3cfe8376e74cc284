// The simulator's Gemini API over real HTTP, on a manual clock: what Google's docs say the API
// refuses (with its error shape), the explicit cache's rules (minimum per model, TTL, one key's own,
// never beside systemInstruction/tools/toolConfig, same model), and implicit caching's.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../clock.js";
import { type Sim, startSim } from "../server.js";
import { GEMINI_IMPLICIT_IDLE_MS } from "./gemini-cache.js";

const clock = new ManualClock();
let sim: Sim;
beforeAll(async () => {
  sim = await startSim({ port: 0, clock });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => sim.reset());

type Json = Record<string, unknown>;
const KEY = "gemini-key";

async function call(path: string, init: { method?: string; body?: unknown; key?: string | null } = {}) {
  const key = init.key === undefined ? KEY : init.key;
  const response = await fetch(`${sim.url}/v1beta/${path}`, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers: { "content-type": "application/json", ...(key === null ? {} : { "x-goog-api-key": key }) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    text,
    json: () => JSON.parse(text) as Json,
  };
}

/** A text of about `tokens` tokens. */
const text = (tokens: number, seed = "a") => `${seed}${"x".repeat(tokens * 4)}`;
const user = (t: string) => ({ role: "user", parts: [{ text: t }] });
const generate = (body: Json, model = "gemini-2.5-flash", key?: string | null) =>
  call(`models/${model}:generateContent`, { body, ...(key === undefined ? {} : { key }) });
const createCache = (body: Json, key?: string) =>
  call("cachedContents", {
    body: { model: "models/gemini-2.5-flash", ttl: "300s", ...body },
    ...(key ? { key } : {}),
  });

function expectError(
  result: { status: number; json: () => Json },
  status: number,
  name: string,
  message: RegExp,
) {
  expect(result.status).toBe(status);
  const error = result.json().error as { code: number; status: string; message: string };
  expect(error.code).toBe(status);
  expect(error.status).toBe(name);
  expect(error.message).toMatch(message);
}

describe("generateContent", () => {
  it("answers with candidates and usageMetadata; streams over SSE with alt=sse, else a JSON array", async () => {
    const body = { contents: [user("@sim say Hello there.")] };
    const plain = (await generate(body)).json();
    expect(plain.candidates).toEqual([
      { content: { parts: [{ text: "Hello there." }], role: "model" }, finishReason: "STOP", index: 0 },
    ]);
    const usage = plain.usageMetadata as Json;
    expect(usage.promptTokenCount).toBeGreaterThan(0);
    expect(usage.cachedContentTokenCount).toBeUndefined();
    const sse = await call("models/gemini-2.5-flash:streamGenerateContent?alt=sse", { body });
    expect(sse.type).toBe("text/event-stream");
    expect(sse.text.startsWith("data: {")).toBe(true);
    expect(sse.text.endsWith("\r\n\r\n")).toBe(true);
    const array = await call("models/gemini-2.5-flash:streamGenerateContent", { body });
    expect(Array.isArray(JSON.parse(array.text))).toBe(true);
  });

  it("refuses what the API refuses, in Google's error shape", async () => {
    expectError(
      await generate({ contents: [user("hi")] }, "gemini-0-nope"),
      404,
      "NOT_FOUND",
      /models\/gemini-0-nope is not found/,
    );
    expectError(
      await generate({ contents: [user("hi")] }, "gemini-2.5-flash", null),
      403,
      "PERMISSION_DENIED",
      /unregistered callers/,
    );
    expectError(
      await generate({ contents: [user("hi")], model: "x" }),
      400,
      "INVALID_ARGUMENT",
      /Unknown name "model"/,
    );
    expectError(await generate({ contents: [] }), 400, "INVALID_ARGUMENT", /contents is not specified/);
    expectError(
      await generate({ contents: [{ role: "system", parts: [{ text: "x" }] }] }),
      400,
      "INVALID_ARGUMENT",
      /valid role: user, model/,
    );
    expectError(
      await generate({ contents: [{ role: "user", parts: [] }] }),
      400,
      "INVALID_ARGUMENT",
      /parts must not be empty/,
    );
    expectError(
      await generate({ contents: [{ role: "user", parts: [{ text: "a", bogus: 1 }] }] }),
      400,
      "INVALID_ARGUMENT",
      /Unknown name "bogus"/,
    );
    expectError(
      await generate({ contents: [{ role: "user", parts: [{ text: "a", inlineData: {} }] }] }),
      400,
      "INVALID_ARGUMENT",
      /oneof field 'data'/,
    );
    const call1 = {
      role: "model",
      parts: [{ functionCall: { name: "f", args: {} } }, { functionCall: { name: "g", args: {} } }],
    };
    const answer = (n: number) => ({
      role: "user",
      parts: Array.from({ length: n }, () => ({ functionResponse: { name: "f", response: {} } })),
    });
    expectError(
      await generate({ contents: [user("a"), call1, user("b")] }),
      400,
      "INVALID_ARGUMENT",
      /function response turn comes immediately after a function call turn/,
    );
    expectError(
      await generate({ contents: [user("a"), call1, answer(1)] }),
      400,
      "INVALID_ARGUMENT",
      /number of function response parts is equal/,
    );
    expectError(
      await generate({ contents: [answer(1), user("a")] }),
      400,
      "INVALID_ARGUMENT",
      /immediately after a function call turn/,
    );
    expect((await generate({ contents: [user("a"), call1, answer(2), user("@sim say ok")] })).status).toBe(
      200,
    );
  });

  it("reads a recent prefix of the same key and model from the implicit cache, at content boundaries", async () => {
    const prefix = [user(text(2000)), { role: "model", parts: [{ text: "ok" }] }];
    await generate({ contents: [...prefix, user("@sim say one")] });
    const hit = (await generate({ contents: [...prefix, user("@sim say two")] })).json()
      .usageMetadata as Json;
    expect(hit.cachedContentTokenCount).toBeGreaterThan(2000);
    expect(hit.cachedContentTokenCount).toBeLessThan(hit.promptTokenCount as number);
    // Another key, another model: nothing.
    expect(
      (await generate({ contents: [...prefix, user("@sim say 3")] }, "gemini-2.5-flash", "other")).json()
        .usageMetadata,
    ).not.toHaveProperty("cachedContentTokenCount");
    expect(
      (await generate({ contents: [...prefix, user("@sim say 4")] }, "gemini-2.5-pro")).json().usageMetadata,
    ).not.toHaveProperty("cachedContentTokenCount");
    // Idle too long: gone.
    clock.advance(GEMINI_IMPLICIT_IDLE_MS);
    expect(
      (await generate({ contents: [...prefix, user("@sim say 5")] })).json().usageMetadata,
    ).not.toHaveProperty("cachedContentTokenCount");
  });

  it("caches nothing implicitly below the model's minimum", async () => {
    const prefix = [user(text(500)), { role: "model", parts: [{ text: "ok" }] }];
    await generate({ contents: [...prefix, user("@sim say one")] });
    expect(
      (await generate({ contents: [...prefix, user("@sim say two")] })).json().usageMetadata,
    ).not.toHaveProperty("cachedContentTokenCount");
  });
});

describe("cachedContents", () => {
  const prefix = { contents: [user(text(2000))], systemInstruction: { parts: [{ text: "Be brief." }] } };

  it("creates, gets, lists, extends and deletes a cache; a request naming it reads all of it", async () => {
    const created = await createCache({ ...prefix, displayName: "mine" });
    expect(created.status).toBe(200);
    const cache = created.json();
    expect(cache.name).toMatch(/^cachedContents\/[a-f0-9]+$/);
    expect(cache).toMatchObject({ model: "models/gemini-2.5-flash", displayName: "mine" });
    expect(cache).not.toHaveProperty("contents");
    const tokens = (cache.usageMetadata as Json).totalTokenCount as number;
    expect(tokens).toBeGreaterThan(2000);
    expect(Date.parse(cache.expireTime as string) - clock.now()).toBe(300_000);
    expect((await call(cache.name as string)).json().name).toBe(cache.name);
    expect((await call("cachedContents")).json().cachedContents).toHaveLength(1);
    const used = (await generate({ contents: [user("@sim say hi")], cachedContent: cache.name })).json();
    expect((used.usageMetadata as Json).cachedContentTokenCount).toBe(tokens);
    expect((used.usageMetadata as Json).promptTokenCount).toBeGreaterThan(tokens);
    const patched = await call(`${cache.name}?updateMask=ttl`, { method: "PATCH", body: { ttl: "600s" } });
    expect(Date.parse(patched.json().expireTime as string) - clock.now()).toBe(600_000);
    expectError(
      await call(`${cache.name}?updateMask=contents`, { method: "PATCH", body: {} }),
      400,
      "INVALID_ARGUMENT",
      /Only ttl or expire_time/,
    );
    expectError(
      await call(cache.name as string, { method: "PATCH", body: {} }),
      400,
      "INVALID_ARGUMENT",
      /Only ttl or expire_time/,
    );
    // No mask (as the SDK sends it): the body's field is the update.
    const unmasked = await call(cache.name as string, { method: "PATCH", body: { ttl: "120s" } });
    expect(Date.parse(unmasked.json().expireTime as string) - clock.now()).toBe(120_000);
    expect((await call(cache.name as string, { method: "DELETE" })).status).toBe(200);
    expectError(await call(cache.name as string), 403, "PERMISSION_DENIED", /CachedContent not found/);
    expect((await call("cachedContents")).json()).toEqual({});
  });

  it("is gone at its expire time, and only its key sees it", async () => {
    const cache = (await createCache({ ...prefix, ttl: "60s" })).json();
    expectError(
      await call(cache.name as string, { key: "someone-else" }),
      403,
      "PERMISSION_DENIED",
      /not found/,
    );
    clock.advance(60_000);
    expectError(await call(cache.name as string), 403, "PERMISSION_DENIED", /not found/);
    expectError(
      await generate({ contents: [user("hi")], cachedContent: cache.name }),
      403,
      "PERMISSION_DENIED",
      /CachedContent not found/,
    );
  });

  it("refuses a cache below the model's minimum: 1,024 tokens on Flash, 4,096 on Pro", async () => {
    expectError(
      await createCache({ contents: [user(text(900))] }),
      400,
      "INVALID_ARGUMENT",
      /Cached content is too small. total_token_count=\d+, min_total_token_count=1024/,
    );
    expectError(
      await createCache({ ...prefix, model: "models/gemini-2.5-pro" }),
      400,
      "INVALID_ARGUMENT",
      /min_total_token_count=4096/,
    );
    expect((await createCache({ contents: [user(text(4100))], model: "gemini-2.5-pro" })).status).toBe(200);
    expectError(
      await createCache({ ...prefix, ttl: "5m" }),
      400,
      "INVALID_ARGUMENT",
      /Illegal duration format/,
    );
    expectError(await createCache({ ...prefix, extra: 1 }), 400, "INVALID_ARGUMENT", /Unknown name "extra"/);
    expectError(
      await call("cachedContents", { body: { contents: prefix.contents } }),
      400,
      "INVALID_ARGUMENT",
      /model is required/,
    );
  });

  it("may not be named beside systemInstruction, tools or toolConfig, nor by another model", async () => {
    const cache = (await createCache(prefix)).json();
    for (const extra of [
      { systemInstruction: { parts: [{ text: "x" }] } },
      { tools: [{ functionDeclarations: [{ name: "f" }] }] },
      { toolConfig: { functionCallingConfig: { mode: "AUTO" } } },
    ])
      expectError(
        await generate({ contents: [user("hi")], cachedContent: cache.name, ...extra }),
        400,
        "INVALID_ARGUMENT",
        /CachedContent can not be used with GenerateContent request setting system_instruction, tools or tool_config/,
      );
    expectError(
      await generate({ contents: [user("hi")], cachedContent: cache.name }, "gemini-2.5-pro"),
      400,
      "INVALID_ARGUMENT",
      /Model used by GenerateContent request \(models\/gemini-2.5-pro\) and CachedContent \(models\/gemini-2.5-flash\) has to be the same/,
    );
    expectError(
      await generate({ contents: [user("hi")], cachedContent: "nope" }),
      400,
      "INVALID_ARGUMENT",
      /Invalid resource name/,
    );
  });
});
