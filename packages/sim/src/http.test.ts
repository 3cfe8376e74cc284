// The HTTP surface with plain fetch: SSE framing, validation errors, auth, the /v1/sim routes,
// the JSONL log, events, latency and rate faults.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type RequestLogEntry, requestBodyBytes } from "./log.js";
import { type Sim, type SimStats, startSim } from "./server.js";
import { post, tokensOf } from "./test-support.js";

const MODEL = "claude-sonnet-4-6";
let sim: Sim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

/** Parses an SSE body into [event, data] pairs. */
function parseSse(body: string): Array<[string, Record<string, unknown>]> {
  return body
    .split("\n\n")
    .filter((chunk) => chunk.trim() !== "")
    .map((chunk) => {
      const event = /^event: (.*)$/m.exec(chunk)?.[1] ?? "";
      const data = /^data: (.*)$/m.exec(chunk)?.[1] ?? "{}";
      return [event, JSON.parse(data) as Record<string, unknown>];
    });
}

async function stream(
  s: Sim,
  body: unknown,
): Promise<{ status: number; headers: Headers; events: Array<[string, Record<string, unknown>]> }> {
  const res = await fetch(`${s.url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "k" },
    body: JSON.stringify({ stream: true, ...(body as object) }),
  });
  return { status: res.status, headers: res.headers, events: parseSse(await res.text()) };
}

describe("SSE", () => {
  it("sends Anthropic's event sequence, with ping, input usage up front and final usage at the end", async () => {
    sim = await startSim();
    const r = await stream(sim, {
      model: MODEL,
      max_tokens: 1000,
      system: [{ type: "text", text: tokensOf(1100, "s"), cache_control: { type: "ephemeral" } }],
      tools: [{ name: "Read", input_schema: { type: "object" } }],
      messages: [{ role: "user", content: 'Go\n@sim text 20\n@sim tool Read {"file_path":"a.ts"}' }],
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(r.headers.get("request-id")).toMatch(/^req_/);
    const names = r.events.map(([e]) => e);
    expect(names.slice(0, 4)).toEqual([
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
    ]);
    expect(names.slice(-2)).toEqual(["message_delta", "message_stop"]);
    for (const [event, data] of r.events) expect(data.type).toBe(event);
    const start = r.events[0]![1].message as {
      usage: Record<string, unknown>;
      content: unknown[];
      stop_reason: unknown;
    };
    expect(start.content).toEqual([]);
    expect(start.stop_reason).toBeNull();
    // The tool comes first: {"name":"Read","input_schema":{"type":"object"}} is 48 characters, 12 + 3 tokens.
    expect(start.usage).toMatchObject({
      cache_creation_input_tokens: 1118,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 1118, ephemeral_1h_input_tokens: 0 },
    });
    const blocks = r.events
      .filter(([e]) => e === "content_block_start")
      .map(([, d]) => (d.content_block as { type: string }).type);
    expect(blocks).toEqual(["text", "tool_use"]);
    const deltaTypes = new Set(
      r.events
        .filter(([e]) => e === "content_block_delta")
        .map(([, d]) => (d.delta as { type: string }).type),
    );
    expect(deltaTypes).toEqual(new Set(["text_delta", "input_json_delta"]));
    const json = r.events
      .filter(
        ([e, d]) => e === "content_block_delta" && (d.delta as { type: string }).type === "input_json_delta",
      )
      .map(([, d]) => (d.delta as { partial_json: string }).partial_json)
      .join("");
    expect(JSON.parse(json)).toEqual({ file_path: "a.ts" });
    const delta = r.events.at(-2)![1] as { delta: { stop_reason: string }; usage: Record<string, number> };
    expect(delta.delta.stop_reason).toBe("tool_use");
    expect(delta.usage.output_tokens).toBe(
      20 + Math.ceil(`Read${JSON.stringify({ file_path: "a.ts" })}`.length / 4),
    );
    expect(delta.usage.cache_creation_input_tokens).toBe(1118);
  });
});

describe("validation errors", () => {
  const ok = { model: MODEL, max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
  const cases: Array<[string, unknown, RegExp]> = [
    ["invalid JSON", "{not json", /invalid JSON/],
    [
      // Past WHOLE_PARSE_BYTES the body is parsed in pieces; the error must still be JSON.parse's.
      "invalid JSON in a large body",
      `{"model":"${MODEL}","max_tokens":10,"messages":[${'{"role":"user","content":"hi"},'.repeat(4000)}]}`,
      /invalid JSON \(.*JSON/,
    ],
    ["model missing", { max_tokens: 10, messages: ok.messages }, /^model: Field required/],
    ["max_tokens missing", { model: MODEL, messages: ok.messages }, /^max_tokens: Field required/],
    ["max_tokens not an integer", { ...ok, max_tokens: 1.5 }, /^max_tokens: Input should be a valid integer/],
    ["messages missing", { model: MODEL, max_tokens: 10 }, /^messages: Field required/],
    ["messages empty", { ...ok, messages: [] }, /^messages: at least one message/],
    [
      "bad role",
      { ...ok, messages: [{ role: "system", content: "x" }] },
      /^messages\.0\.role: Input should be 'user' or 'assistant'/,
    ],
    [
      "empty text",
      { ...ok, messages: [{ role: "user", content: [{ type: "text", text: "" }] }] },
      /text content blocks must be non-empty/,
    ],
    [
      "tool_result without tool_use",
      {
        ...ok,
        messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "x" }] }],
      },
      /^messages\.0\.content\.0: unexpected `tool_use_id`/,
    ],
    [
      "tool_use without tool_result",
      {
        ...ok,
        messages: [
          { role: "user", content: "a" },
          { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Read", input: {} }] },
          { role: "user", content: "b" },
        ],
      },
      /^messages\.1: `tool_use` ids were found without `tool_result` blocks immediately after: t1/,
    ],
    [
      "text before tool_result",
      {
        ...ok,
        messages: [
          { role: "user", content: "a" },
          { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Read", input: {} }] },
          {
            role: "user",
            content: [
              { type: "text", text: "b" },
              { type: "tool_result", tool_use_id: "t1" },
            ],
          },
        ],
      },
      /must come before any other content/,
    ],
    [
      "tool_use in a user message",
      { ...ok, messages: [{ role: "user", content: [{ type: "tool_use", id: "t", name: "x", input: {} }] }] },
      /does not match/,
    ],
    [
      "duplicate tool names",
      {
        ...ok,
        tools: [
          { name: "a", input_schema: { type: "object" } },
          { name: "a", input_schema: { type: "object" } },
        ],
      },
      /Tool names must be unique/,
    ],
    [
      "tool without input_schema",
      { ...ok, tools: [{ name: "a" }] },
      /^tools\.0\.custom\.input_schema: Field required$/,
    ],
    [
      "tool_choice names an unknown tool",
      { ...ok, tool_choice: { type: "tool", name: "nope" } },
      /Tool 'nope' not found/,
    ],
    [
      "thinking budget too small",
      { ...ok, max_tokens: 5000, thinking: { type: "enabled", budget_tokens: 100 } },
      /greater than or equal to 1024/,
    ],
    [
      "max_tokens not above the thinking budget",
      { ...ok, max_tokens: 2000, thinking: { type: "enabled", budget_tokens: 2000 } },
      /`max_tokens` must be greater/,
    ],
    [
      "bad cache_control type",
      { ...ok, system: [{ type: "text", text: "s", cache_control: { type: "persistent" } }] },
      /^system\.0\.cache_control\.type/,
    ],
    ["bad ttl", { ...ok, cache_control: { type: "ephemeral", ttl: "2h" } }, /^cache_control\.ttl/],
    [
      "trailing whitespace in a prefill",
      {
        ...ok,
        messages: [
          { role: "user", content: "a" },
          { role: "assistant", content: "b " },
        ],
      },
      /trailing whitespace/,
    ],
    [
      // The SDK's request types no longer have sampling parameters; the API refuses them from Opus 4.7 on.
      "temperature on a model that no longer takes it",
      { ...ok, model: "claude-opus-4-7", temperature: 0.5 },
      /^`temperature` is deprecated for this model\.$/,
    ],
  ];

  it.each(cases)("%s → 400 invalid_request_error", async (_name, body, message) => {
    sim ??= await startSim();
    const r = await post<{ type: string; error: { type: string; message: string }; request_id: string }>(
      sim,
      body,
    );
    expect(r.status).toBe(400);
    expect(r.body.type).toBe("error");
    expect(r.body.error.type).toBe("invalid_request_error");
    expect(r.body.error.message).toMatch(message);
    expect(r.headers.get("request-id")).toBe(r.body.request_id);
  });

  it("answers auth, routing and size problems in the same shape", async () => {
    sim = await startSim({ maxBodyBytes: 1000 });
    const noKey = await fetch(`${sim.url}/v1/messages`, { method: "POST", body: "{}" });
    expect(noKey.status).toBe(401);
    expect(((await noKey.json()) as { error: { type: string } }).error.type).toBe("authentication_error");
    const bearer = await fetch(`${sim.url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: { authorization: "Bearer abc" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(bearer.status).toBe(200);
    const missing = await fetch(`${sim.url}/v1/nothing`, { method: "POST" });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { type: string } }).error.type).toBe("not_found_error");
    const method = await fetch(`${sim.url}/v1/messages`, { headers: { "x-api-key": "k" } });
    expect(method.status).toBe(405);
    const big = await post<{ error: { type: string } }>(sim, {
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: "user", content: "x".repeat(2000) }],
    });
    expect(big.status).toBe(413);
    expect(big.body.error.type).toBe("request_too_large");
  });
});

describe("log, stats and events", () => {
  it("logs each request in memory, as JSON lines, and over HTTP, and emits firstByte before request", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sim-log-"));
    try {
      const logFile = join(dir, "requests.jsonl");
      sim = await startSim({ logFile });
      const order: string[] = [];
      sim.on("firstByte", () => order.push("firstByte"));
      sim.on("request", () => order.push("request"));
      const body = JSON.stringify({
        model: MODEL,
        max_tokens: 100,
        system: [{ type: "text", text: tokensOf(1100, "s"), cache_control: { type: "ephemeral" } }],
        messages: [{ role: "user", content: "hello" }],
      });
      const first = await post(sim, body, { key: "secret-key-1" });
      await post(sim, body, { key: "secret-key-1" });
      await post(sim, { model: MODEL, messages: [] }, { key: "secret-key-1" });
      expect(order).toEqual(["firstByte", "request", "firstByte", "request", "request"]);

      const entries = sim.requests();
      expect(entries).toHaveLength(3);
      const [a, b, c] = entries as [RequestLogEntry, RequestLogEntry, RequestLogEntry];
      expect(a.id).toBe(first.headers.get("request-id"));
      expect(a.body).toBe(body);
      // The raw bytes, for a listener that needs only part of a large body.
      expect(requestBodyBytes(a)?.toString("utf8")).toBe(body);
      expect(requestBodyBytes({ ...a })).toBeUndefined();
      expect(a.keyId).toMatch(/^key_[0-9a-f]{12}$/);
      expect(JSON.stringify(entries)).not.toContain("secret-key-1");
      expect(a.usage?.cache_creation_input_tokens).toBe(1103);
      expect(b.usage?.cache_read_input_tokens).toBe(1103);
      expect(a.acceptedAt! <= a.firstByteAt! && a.firstByteAt! <= a.endedAt).toBe(true);
      expect(c.status).toBe(400);
      expect(c.usage).toBeNull();

      const stats = (await (await fetch(`${sim.url}/v1/sim/stats`)).json()) as SimStats;
      expect(stats).toMatchObject({ requests: 3, messages: 3, errors: 1, byStatus: { "200": 2, "400": 1 } });
      expect(stats.tokens.cacheCreation).toBe(1103);
      expect(stats.tokens.cacheRead).toBe(1103);
      expect(stats.tokens.prompt).toBe(
        stats.tokens.input + stats.tokens.cacheCreation + stats.tokens.cacheRead,
      );
      expect(stats.cache).toMatchObject({ entries: 1, hits: 1, misses: 1, writes: 1 });
      expect(sim.stats()).toEqual(stats);

      const listed = (await (await fetch(`${sim.url}/v1/sim/requests?limit=2&bodies=0`)).json()) as {
        data: RequestLogEntry[];
      };
      expect(listed.data.map((e) => e.seq)).toEqual([b.seq, c.seq]);
      expect(listed.data[0]!.body).toBe("");

      await sim.close();
      const lines = (await readFile(logFile, "utf8"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as RequestLogEntry);
      expect(lines.map((l) => l.id)).toEqual(entries.map((e) => e.id));
      expect(lines[0]!.body).toBe(body);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("parses large bodies that arrive in many chunks, and keeps each body's own bytes in the log", async () => {
    sim = await startSim();
    // Every multi-chunk body is joined for parsing into one buffer that the next request reuses; the
    // log must keep what each request sent, not what the buffer holds later.
    const bodies = [200_000, 320_000, 150_000].map((chars, i) =>
      JSON.stringify({
        model: MODEL,
        max_tokens: 10,
        messages: [{ role: "user", content: `${i} ${tokensOf(chars / 4, `body ${i}`)}` }],
      }),
    );
    // Larger than PARSE_BUFFER_BYTES: a buffer of its own.
    const huge = JSON.stringify({
      model: MODEL,
      messages: [{ role: "user", content: tokensOf(5_000_000 / 4, "huge") }],
    });
    for (const body of bodies) expect((await post(sim, body)).status).toBe(200);
    const counted = await post<{ input_tokens: number }>(sim, huge, { path: "/v1/messages/count_tokens" });
    expect(counted.status).toBe(200);
    expect(counted.body.input_tokens).toBeGreaterThan(1_000_000);
    const logged = sim.requests().map((entry) => requestBodyBytes(entry)?.toString("utf8"));
    expect(logged).toStrictEqual([...bodies, huge]);
    expect(sim.requests()[1]!.body).toBe(bodies[1]);
  });

  it("reset forgets the cache, the log and the totals", async () => {
    sim = await startSim();
    const body = {
      model: MODEL,
      max_tokens: 100,
      cache_control: { type: "ephemeral" },
      messages: [{ role: "user", content: tokensOf(1100, "u") }],
    };
    await post(sim, body);
    expect((await fetch(`${sim.url}/v1/sim/reset`, { method: "POST" })).status).toBe(200);
    expect(sim.requests()).toEqual([]);
    expect(sim.stats().requests).toBe(0);
    const again = await post(sim, body);
    expect(again.body.usage.cache_read_input_tokens).toBe(0);
  });
});

describe("latency and faults", () => {
  it("holds the first byte for the time to first token, globally or per request", async () => {
    sim = await startSim({ latency: { ttftMs: 120 } });
    await post(sim, { model: MODEL, max_tokens: 100, messages: [{ role: "user", content: "a" }] });
    await post(sim, {
      model: MODEL,
      max_tokens: 100,
      messages: [{ role: "user", content: "b\n@sim ttft 250" }],
    });
    const [a, b] = sim.requests() as [RequestLogEntry, RequestLogEntry];
    expect(a.firstByteAt! - a.acceptedAt!).toBeGreaterThanOrEqual(115);
    expect(b.firstByteAt! - b.acceptedAt!).toBeGreaterThanOrEqual(245);
  });

  it("paces output at the requested tokens per second", async () => {
    sim = await startSim();
    await stream(sim, {
      model: MODEL,
      max_tokens: 1000,
      messages: [{ role: "user", content: "go\n@sim tps 400\n@sim text 100" }],
    });
    const e = sim.requests()[0]!;
    expect(e.outputTokensSent).toBe(100);
    expect(e.endedAt - e.firstByteAt!).toBeGreaterThanOrEqual(240); // 100 tokens at 400/s = 250 ms
  });

  it("injects rate faults deterministically from the seed", async () => {
    const run = async (): Promise<number[]> => {
      const s = await startSim({ faults: { rate: 0.5, seed: 7, kinds: ["529", "500 retry-after=0"] } });
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 20; i++) {
          statuses.push(
            (await post(s, { model: MODEL, max_tokens: 10, messages: [{ role: "user", content: `m${i}` }] }))
              .status,
          );
        }
        return statuses;
      } finally {
        await s.close();
      }
    };
    const first = await run();
    expect(await run()).toEqual(first);
    expect(first.filter((s) => s !== 200).length).toBeGreaterThan(3);
    expect(new Set(first)).toEqual(new Set([200, 529, 500]));
  });

  it("fault-once fires only the first time a request is seen", async () => {
    sim = await startSim();
    const body = {
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: "user", content: "x\n@sim fault-once 500" }],
    };
    expect((await post(sim, body)).status).toBe(500);
    expect((await post(sim, body)).status).toBe(200);
    expect((await post(sim, body, { key: "other" })).status).toBe(500);
    const faulted = await post(sim, {
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: "user", content: "x\n@sim fault 429 retry-after=3" }],
    });
    expect(faulted.status).toBe(429);
    expect(faulted.headers.get("retry-after")).toBe("3");
  });

  it("a client that leaves before the first byte abandons its cache write", async () => {
    sim = await startSim();
    const body = {
      model: MODEL,
      max_tokens: 10,
      cache_control: { type: "ephemeral" },
      messages: [{ role: "user", content: `${tokensOf(1100, "x")}\n@sim ttft 5000` }],
    };
    const controller = new AbortController();
    const accepted = sim.next("accepted");
    const disconnected = sim.next("disconnect");
    const pending = fetch(`${sim.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": "k" },
      body: JSON.stringify(body),
      signal: controller.signal,
    }).catch(() => undefined);
    expect((await accepted).usage.cache_creation_input_tokens).toBeGreaterThan(1100);
    expect(sim.stats().cache.entries).toBe(1); // pending
    controller.abort();
    await pending;
    const gone = await disconnected;
    expect(gone.afterFirstByte).toBe(false);
    expect(sim.stats().cache.entries).toBe(0);
  });
});
