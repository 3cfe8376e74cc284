// The Anthropic client against the real simulator over real HTTP: a streamed tool conversation,
// the exact bytes on the wire, aborts, retries, and the no-replay rule for interrupted streams.
import { spawn } from "node:child_process";
import { getEventListeners, once } from "node:events";
import { readFile } from "node:fs/promises";
import { createForkPrefix, type LlmError, type LlmRequest, type LlmStreamEvent } from "@forkd/core";
import { prepareForkRun, sealSharedPrefix } from "@forkd/core/internal";
import type {
  AssistantMessage,
  CacheSafeParams,
  ContentBlock,
  ForkPrefix,
  ToolUseBlock,
} from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type AnthropicClientOptions, AnthropicLlmClient } from "./anthropic-client.js";

const MODEL = "claude-sonnet-5-5";

let sim: Sim;

beforeAll(async () => {
  sim = await startSim({ port: 0 });
});

afterAll(async () => {
  await sim.close();
});

beforeEach(() => {
  sim.reset();
});

function client(options: AnthropicClientOptions = {}): AnthropicLlmClient {
  return new AnthropicLlmClient({ baseURL: sim.url, apiKey: "sk-test-llm", ...options });
}

/** A small conversation whose last user text block is the simulator's script. */
function scripted(...lines: string[]): LlmRequest {
  return {
    model: MODEL,
    max_tokens: 2048,
    system: [{ type: "text", text: "You are a careful test agent.", cache_control: { type: "ephemeral" } }],
    tools: [
      {
        name: "Read",
        description: "Read a file",
        input_schema: {
          type: "object",
          properties: { file_path: { type: "string" } },
          required: ["file_path"],
        },
      },
    ],
    messages: [{ role: "user", content: [{ type: "text", text: lines.join("\n") }] }],
  };
}

/** Collects stream events. */
function recorder(): { events: LlmStreamEvent[]; onEvent: (event: LlmStreamEvent) => void } {
  const events: LlmStreamEvent[] = [];
  return { events, onEvent: (event) => events.push(event) };
}

function abortListeners(signal: AbortSignal): number {
  return getEventListeners(signal, "abort").length;
}

async function rejection(promise: Promise<unknown>): Promise<LlmError> {
  try {
    await promise;
  } catch (error) {
    return error as LlmError;
  }
  throw new Error("expected the call to fail");
}

describe("AnthropicLlmClient against the simulator", () => {
  it("runs a streamed multi-turn tool conversation: tool_use → tool_result → final text", async () => {
    const llm = client();
    const controller = new AbortController();
    const { events, onEvent } = recorder();
    let request = scripted(
      "Read the file x, then say what you found.",
      '@sim tool Read {"file_path":"x"}',
      "@sim turn",
      "@sim say The file x holds the answer.",
    );
    const sent: LlmRequest[] = [];
    const stopReasons: (string | null)[] = [];
    let finalText = "";
    // The turn loop, in miniature: call, run the tools, send their results, until the model stops.
    for (let turn = 0; turn < 4; turn++) {
      sent.push(request);
      const response = await llm.createMessage(request, { signal: controller.signal, onEvent });
      stopReasons.push(response.stop_reason);
      expect(response.message.role).toBe("assistant");
      expect(response.ttftMs).toBeGreaterThan(0);
      expect(response.durationMs).toBeGreaterThanOrEqual(response.ttftMs);
      expect(response.usage.input_tokens + (response.usage.cache_read_input_tokens ?? 0)).toBeGreaterThan(0);
      if (response.stop_reason !== "tool_use") {
        finalText = response.message.content
          .filter((block) => block.type === "text")
          .map((block) => block.text as string)
          .join("");
        break;
      }
      const toolUses = response.message.content.filter(
        (block): block is ToolUseBlock => block.type === "tool_use",
      );
      expect(toolUses).toHaveLength(1);
      // The input arrives as a parsed object, not a JSON string.
      expect(toolUses[0]?.name).toBe("Read");
      expect(toolUses[0]?.input).toEqual({ file_path: "x" });
      const results: ContentBlock[] = toolUses.map((toolUse) => ({
        type: "tool_result",
        tool_use_id: toolUse.id,
        content: "42",
      }));
      request = {
        ...request,
        messages: [...request.messages, response.message, { role: "user", content: results }],
      };
    }

    expect(stopReasons).toEqual(["tool_use", "end_turn"]);
    expect(finalText).toBe("The file x holds the answer.");
    // Each response started once, and the text deltas of the final turn spell its text.
    const started = events.filter((event) => event.type === "response_started");
    expect(started).toHaveLength(2);
    const streamedText = events.map((event) => (event.type === "text_delta" ? event.text : "")).join("");
    expect(streamedText).toContain(finalText);
    expect(events.some((event) => event.type === "retry")).toBe(false);
    // Every turn went out byte for byte as given.
    const log = sim.requests();
    expect(log.map((entry) => entry.status)).toEqual([200, 200]);
    // response_started names the request as the server's request-id header did.
    expect(started.map((event) => event.requestId)).toEqual(log.map((entry) => entry.id));
    expect(log.map((entry) => entry.body)).toEqual(
      sent.map((sentRequest) => JSON.stringify({ ...sentRequest, stream: true })),
    );
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("returns a tool input's escaped keys as the model wrote them, where the SDK's native parse misreads them", async () => {
    // Leaves the map transition that makes V8 12.8+ (Node 24) read the next `"\""` key after
    // `file_path` as `\` (https://github.com/nodejs/node/issues/63785); harmless on older V8.
    JSON.parse('{"file_path":[],"\\\\":0}');
    const input = { file_path: "x", '"': 1 };
    const response = await client().createMessage(scripted(`@sim tool Read ${JSON.stringify(input)}`));
    const toolUse = response.message.content.find(
      (block): block is ToolUseBlock => block.type === "tool_use",
    );
    expect(toolUse?.input).toEqual(input);
  });

  it("sends a parent's request byte for byte: what the server received is JSON.stringify(request)", async () => {
    const fixtureUrl = new URL("../../fixtures/turns/parent-turn-4k.json", import.meta.url);
    const fixture = JSON.parse(await readFile(fixtureUrl, "utf8")) as { request: LlmRequest };
    const llm = client();

    // The fixture is a real-shaped parent turn that already says "stream": true.
    await llm.createMessage(fixture.request);
    // A request with what re-rendering would break: unusual key order, unknown fields, escapes,
    // non-ASCII, cache_control on blocks, a tool's schema with keys out of alphabetical order.
    const awkward = {
      messages: [
        {
          content: [
            { text: 'line 1\n\tline 2 "quoted" \\ back\u2028sep — é ✓ 🚀 </script>', type: "text" },
            {
              type: "text",
              text: "  trailing spaces kept  ",
              cache_control: { ttl: "5m", type: "ephemeral" },
            },
          ],
          role: "user",
        },
      ],
      model: MODEL,
      metadata: { user_id: "user-1" },
      tools: [
        {
          name: "Read",
          input_schema: {
            required: ["file_path"],
            type: "object",
            properties: { file_path: { type: "string" } },
          },
          description: "Read",
        },
      ],
      max_tokens: 64,
      system: "sys",
      output_config: { effort: "low" },
    } as unknown as LlmRequest;
    await llm.createMessage(awkward);

    const [fixtureEntry, awkwardEntry] = sim.requests();
    expect(fixtureEntry?.body).toBe(JSON.stringify(fixture.request));
    // The SDK appends "stream": true as the last key; everything before it is the caller's bytes.
    expect(awkwardEntry?.body).toBe(JSON.stringify({ ...awkward, stream: true }));
    expect(awkwardEntry?.body.startsWith(JSON.stringify(awkward).slice(0, -1))).toBe(true);
  });

  // A 4k parent's child is sent as one buffer, a 48k parent's as a stream of its parts.
  it.each(["4k", "48k"])(
    "sends children of a sealed %s prefix with the prefix's bytes serialised once: what the server received is JSON.stringify(request)",
    async (size) => {
      const fixtureUrl = new URL(`../../fixtures/turns/parent-turn-${size}.json`, import.meta.url);
      const fixture = JSON.parse(await readFile(fixtureUrl, "utf8")) as {
        request: CacheSafeParams;
        response: AssistantMessage;
      };
      const sealed = sealSharedPrefix(createForkPrefix(fixture.request, fixture.response));
      const unsealed = createForkPrefix(fixture.request, fixture.response);
      const child = (prefix: ForkPrefix, i: number, model?: string) =>
        prepareForkRun({
          runId: `child-${i}`,
          prefix,
          cacheShared: true,
          directive: `@sim text 3\nSlice ${i}: é ✓ 🚀`,
          overrides: { model },
        }).request;
      const llm = client();
      const sent: LlmRequest[] = [];
      // Three siblings (the third with betas: the SDK's beta API, the betas in a header) and a model
      // override, from the sealed prefix; then the first again from an ordinary copy of the same turn.
      for (const request of [
        child(sealed, 1),
        child(sealed, 2),
        { ...child(sealed, 3), betas: ["context-management-2025-06-27"] },
        child(sealed, 4, "claude-haiku-4-5"),
        child(unsealed, 1),
      ]) {
        sent.push(request);
        await llm.createMessage(request);
      }

      const bodies = sim.requests().map((entry) => entry.body);
      expect(bodies).toEqual(
        sent.map(({ betas: _betas, ...request }) => JSON.stringify({ ...request, stream: true })),
      );
      expect(bodies[4]).toBe(bodies[0]);
      expect(sim.requests()[2]?.betas).toEqual(["context-management-2025-06-27"]);
    },
  );

  it("sends a request's betas as the anthropic-beta header, through the SDK's beta API, and not in the body", async () => {
    const betas = ["context-management-2025-06-27", "mid-conversation-system-2026-04-07"];
    const request = scripted("Hello.", "@sim text 5");
    request.messages.push({ role: "system", content: "Be brief." }, { role: "user", content: "Go." });
    await expect(client().createMessage({ ...request, betas })).resolves.toMatchObject({
      stop_reason: "end_turn",
    });
    const [entry] = sim.requests();
    expect(entry?.betas).toEqual(betas);
    expect(entry?.body).toBe(JSON.stringify({ ...request, stream: true }));

    // Without betas, the plain API: no header at all.
    await client().createMessage(scripted("Hello.", "@sim text 5"));
    expect(sim.requests()[1]?.betas).toEqual([]);
  });

  it("aborts mid-stream: the simulator sees a disconnect, the caller gets partial usage, no listener is left", async () => {
    const llm = client();
    const controller = new AbortController();
    const disconnected = sim.next("disconnect");
    const { events, onEvent } = recorder();
    const call = llm.createMessage(scripted("Write a lot.", "@sim text 4000", "@sim tps 200"), {
      signal: controller.signal,
      onEvent: (event) => {
        onEvent(event);
        if (event.type === "text_delta") controller.abort();
      },
    });

    const error = await rejection(call);
    const disconnect = await disconnected;

    expect(error).toMatchObject({ name: "LlmError", code: "aborted", retryable: false });
    expect(error.partialUsage?.input_tokens).toBeGreaterThan(0);
    expect(error.partialText).toBeTruthy();
    expect(disconnect.afterFirstByte).toBe(true);
    expect(disconnect.outputTokensSent).toBeLessThan(4000);
    expect(events[0]?.type).toBe("response_started");
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("aborts while waiting to retry, and leaves no listener", async () => {
    const llm = client({ retry: { baseDelayMs: 60_000, maxDelayMs: 60_000 } });
    const controller = new AbortController();
    const call = llm.createMessage(scripted("Busy.", "@sim fault 529"), {
      signal: controller.signal,
      onEvent: (event) => {
        if (event.type === "retry") controller.abort();
      },
    });

    const error = await rejection(call);

    expect(error).toMatchObject({ code: "aborted", retryable: false });
    expect(sim.requests()).toHaveLength(1);
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("retries a 429 after the retry-after the server asked for, then succeeds", async () => {
    const llm = client();
    const controller = new AbortController();
    const { events, onEvent } = recorder();

    const response = await llm.createMessage(
      scripted("Hello.", "@sim fault-once 429 retry-after=1", "@sim say hi"),
      {
        signal: controller.signal,
        onEvent,
      },
    );

    expect(response.message.content).toEqual([{ type: "text", text: "hi" }]);
    const retries = events.filter((event) => event.type === "retry");
    expect(retries).toEqual([
      { type: "retry", attempt: 1, delayMs: 1000, error: "rate_limited", status: 429 },
    ]);
    const [limited, served] = sim.requests();
    expect(limited?.status).toBe(429);
    expect(served?.status).toBe(200);
    // The second attempt really waited: it arrived at least a second after the 429 went out.
    expect((served?.receivedAt ?? 0) - (limited?.endedAt ?? 0)).toBeGreaterThanOrEqual(990);
    expect(served?.body).toBe(limited?.body);
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("gives up on a 529 storm after maxRetries with a typed overloaded error", async () => {
    const llm = client({ retry: { maxRetries: 3, baseDelayMs: 5, maxDelayMs: 20 } });
    const controller = new AbortController();
    const { events, onEvent } = recorder();

    const error = await rejection(
      llm.createMessage(scripted("Busy.", "@sim fault 529"), { signal: controller.signal, onEvent }),
    );

    expect(error).toMatchObject({ name: "LlmError", code: "overloaded", retryable: true, status: 529 });
    expect(
      events
        .filter((event) => event.type === "retry")
        .map((event) => event.type === "retry" && event.attempt),
    ).toEqual([1, 2, 3]);
    for (const event of events) {
      if (event.type === "retry") expect(event.delayMs).toBeLessThan(20);
    }
    expect(sim.requests().map((entry) => entry.status)).toEqual([529, 529, 529, 529]);
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("fails with stream_interrupted when the stream is cut after output began, and does not replay it", async () => {
    const llm = client({ retry: { baseDelayMs: 1 } });
    const controller = new AbortController();
    const { events, onEvent } = recorder();
    const logged = sim.next("request");

    const error = await rejection(
      llm.createMessage(scripted("Write.", "@sim text 400", "@sim tps 500", "@sim fault cut-after=20"), {
        signal: controller.signal,
        onEvent,
      }),
    );
    await logged;

    expect(error).toMatchObject({ name: "LlmError", code: "stream_interrupted", retryable: true });
    expect(error.partialText).toBeTruthy();
    expect(error.partialUsage?.input_tokens).toBeGreaterThan(0);
    expect(events.some((event) => event.type === "retry")).toBe(false);
    const log = sim.requests();
    expect(log).toHaveLength(1);
    expect(log[0]?.cut).toBe(true);
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("fails with stream_interrupted on an error event after output began", async () => {
    const llm = client({ retry: { baseDelayMs: 1 } });
    const logged = sim.next("request");

    const error = await rejection(
      llm.createMessage(scripted("Write.", "@sim text 400", "@sim fault error-after=20 overloaded_error")),
    );
    await logged;

    expect(error).toMatchObject({ code: "stream_interrupted", retryable: true });
    expect(error.message).toContain("overloaded");
    expect(error.partialText).toBeTruthy();
    expect(sim.requests()).toHaveLength(1);
  });

  it("does not retry an invalid request", async () => {
    const llm = client({ retry: { baseDelayMs: 1 } });
    const { events, onEvent } = recorder();

    const error = await rejection(llm.createMessage({ ...scripted("Hi."), max_tokens: 0 }, { onEvent }));

    expect(error).toMatchObject({ code: "invalid_request", retryable: false, status: 400 });
    expect(events).toEqual([]);
    expect(sim.requests()).toHaveLength(1);
  });
});

/**
 * Runs `script` (ESM) in a fresh node process that records every module it loads; `loaded()` in the
 * script resolves, once every load so far is recorded, with the set of their URLs. Prints JSON.
 */
async function inFreshProcess(script: string): Promise<Record<string, unknown>> {
  const hooks = `data:text/javascript,${encodeURIComponent(
    "let port; export function initialize(data) { port = data.port; } " +
      "export async function load(url, context, next) { const result = await next(url, context); port.postMessage(url); return result; }",
  )}`;
  const prelude = `
    import { register } from "node:module";
    const { port1, port2 } = new MessageChannel();
    register(${JSON.stringify(hooks)}, { data: { port: port2 }, transferList: [port2] });
    const urls = new Set();
    let marker;
    port1.on("message", (url) => { urls.add(url); if (url === marker?.url) marker.resolve(); });
    port1.unref();
    let markers = 0;
    // A module loaded after everything else: its URL arrives after theirs (the channel is ordered).
    // The port holds the process open only while a marker is awaited: a message still on its way
    // from the hooks' thread keeps nothing else alive (Node 24 exited before it arrived).
    globalThis.loaded = async () => {
      const url = "data:text/javascript,export%20default%20" + ++markers;
      const arrived = new Promise((resolve) => { marker = { url, resolve }; });
      port1.ref();
      try {
        await import(url);
        await arrived;
      } finally {
        port1.unref();
      }
      return urls;
    };
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", prelude + script], {
    env: { ...process.env, SIM_URL: sim.url },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  const [code] = (await once(child, "close")) as [number | null];
  if (code !== 0) throw new Error(`the child exited with ${code}: ${err}`);
  return JSON.parse(out) as Record<string, unknown>;
}

describe("AnthropicLlmClient's SDK", () => {
  it("is loaded at the client's first request, not when @forkd/llm is imported or a client made", async () => {
    const llm = new URL("../dist/index.js", import.meta.url).href;
    const result = await inFreshProcess(`
      const sdkClient = (urls) => [...urls].some((url) => url.endsWith("/@anthropic-ai/sdk/client.mjs"));
      const { AnthropicLlmClient } = await import(${JSON.stringify(llm)});
      const client = new AnthropicLlmClient({ baseURL: process.env.SIM_URL, apiKey: "sk-test-llm" });
      const baseURL = client.baseURL;
      const before = sdkClient(await loaded());
      const response = await client.createMessage({
        model: ${JSON.stringify(MODEL)},
        max_tokens: 64,
        messages: [{ role: "user", content: [{ type: "text", text: "@sim text 3" }] }],
      });
      const after = sdkClient(await loaded());
      process.stdout.write(JSON.stringify({ before, after, baseURL, stop: response.stop_reason }));
    `);
    expect(result).toEqual({ before: false, after: true, baseURL: sim.url, stop: "end_turn" });
    expect(sim.requests()).toHaveLength(1);
  });
});
