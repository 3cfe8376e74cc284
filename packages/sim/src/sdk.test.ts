// The real @anthropic-ai/sdk against the simulator over real HTTP.
import Anthropic from "@anthropic-ai/sdk";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hiResNow } from "./clock.js";
import { countTokens } from "./prompt.js";
import { type Sim, startSim } from "./server.js";
import { EPHEMERAL, tokensOf } from "./test-support.js";

const MODEL = "claude-sonnet-4-6";
const tools: Anthropic.Tool[] = [
  {
    name: "Read",
    description: "Read a file",
    input_schema: { type: "object", properties: { file_path: { type: "string" } }, required: ["file_path"] },
  },
  {
    name: "Bash",
    description: "Run a command",
    input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
  },
];

let sim: Sim;
let client: Anthropic;
beforeEach(async () => {
  sim = await startSim();
  client = new Anthropic({ apiKey: "sk-test", baseURL: sim.url, maxRetries: 0 });
});
afterEach(async () => {
  await sim.close();
});

describe("the Anthropic SDK against the simulator", () => {
  it("streams text and reports usage", async () => {
    const stream = client.messages.stream({
      model: MODEL,
      max_tokens: 1024,
      messages: [{ role: "user", content: "Summarise docs/design.md\n@sim text 40" }],
    });
    let streamed = "";
    stream.on("text", (t) => {
      streamed += t;
    });
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe("end_turn");
    expect(message.content).toHaveLength(1);
    const block = message.content[0]!;
    expect(block.type).toBe("text");
    if (block.type !== "text") return;
    expect(block.text).toBe(streamed);
    expect(block.text).toMatch(/^Scope: Summarise docs\/design\.md\nResult: /);
    expect(block.text).toHaveLength(160);
    expect(message.usage.output_tokens).toBe(40);
    expect(message.usage.input_tokens).toBe(
      countTokens({
        model: MODEL,
        messages: [{ role: "user", content: "Summarise docs/design.md\n@sim text 40" }],
      }).total,
    );
    expect(message.usage.cache_read_input_tokens).toBe(0);
  });

  it("streams tool_use blocks whose input_json_delta the SDK assembles", async () => {
    const jsonDeltas: string[] = [];
    const stream = client.messages.stream({
      model: MODEL,
      max_tokens: 1024,
      tools,
      messages: [
        {
          role: "user",
          content:
            'Look around.\n@sim tool Read {"file_path":"README.md"}\n@sim tool Bash {"command":"ls -la packages && echo done"}',
        },
      ],
    });
    stream.on("inputJson", (partial) => {
      jsonDeltas.push(partial);
    });
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe("tool_use");
    const uses = message.content.filter((b) => b.type === "tool_use");
    expect(uses.map((u) => [u.name, u.input])).toEqual([
      ["Read", { file_path: "README.md" }],
      ["Bash", { command: "ls -la packages && echo done" }],
    ]);
    expect(new Set(uses.map((u) => u.id)).size).toBe(2);
    expect(jsonDeltas.length).toBeGreaterThan(2);
  });

  it("runs a scripted multi-turn tool loop and reports the results it got", async () => {
    const directive = [
      "Inspect the package.",
      '@sim tool Read {"file_path":"package.json"}',
      "@sim turn",
      '@sim tool Bash {"command":"npm test"}',
    ].join("\n");
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: directive }];
    const outputs: Record<string, string> = {
      Read: '{ "name": "forkd" }\nmore',
      Bash: "12 tests passed\n...",
    };
    let turns = 0;
    for (;;) {
      const reply = await client.messages.create({ model: MODEL, max_tokens: 1024, tools, messages });
      turns++;
      messages.push({ role: "assistant", content: reply.content });
      if (reply.stop_reason !== "tool_use") break;
      messages.push({
        role: "user",
        content: reply.content
          .filter((b) => b.type === "tool_use")
          .map((b) => ({ type: "tool_result" as const, tool_use_id: b.id, content: outputs[b.name] ?? "?" })),
      });
    }
    expect(turns).toBe(3);
    const final = messages.at(-1)!.content as Anthropic.ContentBlock[];
    const report = final[0]!.type === "text" ? final[0]!.text : "";
    expect(report).toContain('Read → "{ \\"name\\": \\"forkd\\" }"');
    expect(report).toContain('Bash → "12 tests passed"');
    expect(report).toContain("Key files: package.json");
  });

  it("answers non-streaming requests", async () => {
    const message = await client.messages.create({
      model: MODEL,
      max_tokens: 1024,
      system: [{ type: "text", text: tokensOf(1100, "sys"), cache_control: { type: "ephemeral" } }],
      messages: [{ role: "user", content: "Hello" }],
    });
    expect(message.type).toBe("message");
    expect(message.role).toBe("assistant");
    expect(message.id).toMatch(/^msg_/);
    expect(message.usage.cache_creation_input_tokens).toBe(1103);
    expect(message.usage.cache_creation).toEqual({
      ephemeral_5m_input_tokens: 1103,
      ephemeral_1h_input_tokens: 0,
    });
    const again = await client.messages.create({
      model: MODEL,
      max_tokens: 1024,
      system: [{ type: "text", text: tokensOf(1100, "sys"), cache_control: { type: "ephemeral" } }],
      messages: [{ role: "user", content: "Hello" }],
    });
    expect(again.usage.cache_read_input_tokens).toBe(1103);
    expect(again.content).toEqual(message.content); // deterministic
  });

  it("counts tokens", async () => {
    const params = {
      model: MODEL,
      system: "You are terse.",
      tools,
      messages: [{ role: "user" as const, content: "How many tokens is this?" }],
    };
    const counted = await client.messages.countTokens(params);
    expect(counted.input_tokens).toBe(countTokens(params).total);
  });

  it("returns errors the SDK parses into its typed errors", async () => {
    const err = await client.messages
      .create({
        model: MODEL,
        max_tokens: 10,
        messages: [
          { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_x", content: "orphan" }] },
        ],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    const e = err as InstanceType<typeof Anthropic.BadRequestError>;
    expect(e.status).toBe(400);
    expect(e.type).toBe("invalid_request_error");
    expect(e.message).toContain("unexpected `tool_use_id` found in `tool_result` blocks: toolu_x");
    expect(e.requestID).toMatch(/^req_/);
    expect(sim.requests().at(-1)?.id).toBe(e.requestID);

    const locked = await startSim({ apiKeys: ["sk-right"] });
    try {
      const wrong = new Anthropic({ apiKey: "sk-wrong", baseURL: locked.url, maxRetries: 0 });
      const auth = await wrong.messages
        .create({ model: MODEL, max_tokens: 10, messages: [{ role: "user", content: "hi" }] })
        .catch((x: unknown) => x);
      expect(auth).toBeInstanceOf(Anthropic.AuthenticationError);
    } finally {
      await locked.close();
    }
  });

  it("records a client abort mid-stream as a disconnect, with the time it saw it", async () => {
    const stream = client.messages.stream({
      model: MODEL,
      max_tokens: 4096,
      messages: [{ role: "user", content: "Write a lot.\n@sim tps 200\n@sim text 3000" }],
    });
    const ended = stream.done().catch((e: unknown) => e);
    const disconnected = sim.next("disconnect");
    const logged = sim.next("request");
    await new Promise<void>((resolve) => stream.once("text", () => resolve()));
    const abortedAt = hiResNow();
    stream.abort();
    expect(await ended).toBeInstanceOf(Anthropic.APIUserAbortError);
    const event = await disconnected;
    expect(event.afterFirstByte).toBe(true);
    expect(event.outputTokensSent).toBeGreaterThan(0);
    expect(event.outputTokensSent).toBeLessThan(3000);
    expect(event.at).toBeGreaterThanOrEqual(abortedAt);
    expect(event.at - abortedAt).toBeLessThan(1000);
    const entry = await logged;
    expect(entry.disconnected).toBe(true);
    expect(entry.disconnectedAt).toBe(event.at);
    expect(entry.usage?.output_tokens).toBe(entry.outputTokensSent);
    expect(sim.stats().disconnects).toBe(1);
  });

  it("retries a fault-once 429 after its retry-after", async () => {
    const retrying = new Anthropic({ apiKey: "sk-test", baseURL: sim.url, maxRetries: 2 });
    const message = await retrying.messages.create({
      model: MODEL,
      max_tokens: 256,
      messages: [{ role: "user", content: "Try this.\n@sim fault-once 429 retry-after=1" }],
    });
    expect(message.stop_reason).toBe("end_turn");
    const [first, second] = sim.requests();
    expect(first?.status).toBe(429);
    expect(first?.errorType).toBe("rate_limit_error");
    expect(first?.fault).toBe("429 retry-after=1");
    expect(second?.status).toBe(200);
    expect(second?.body).toBe(first?.body);
    expect(second!.receivedAt - first!.endedAt).toBeGreaterThanOrEqual(900);
  });

  it("streams thinking blocks with a signature when thinking is enabled", async () => {
    const message = await client.messages
      .stream({
        model: MODEL,
        max_tokens: 4096,
        thinking: { type: "enabled", budget_tokens: 1024 },
        messages: [{ role: "user", content: "Think first.\n@sim think 30" }],
      })
      .finalMessage();
    expect(message.content.map((b) => b.type)).toEqual(["thinking", "text"]);
    const thinking = message.content[0]!;
    if (thinking.type !== "thinking") return;
    expect(thinking.thinking).toHaveLength(120);
    expect(thinking.signature).toMatch(/^sim_sig_/);
  });

  it("surfaces a mid-stream overloaded error and a cut connection as errors", async () => {
    const overloaded = await client.messages
      .stream({
        model: MODEL,
        max_tokens: 1024,
        messages: [{ role: "user", content: "Go.\n@sim text 50\n@sim fault error-after=10" }],
      })
      .finalMessage()
      .catch((e: unknown) => e);
    expect(overloaded).toBeInstanceOf(Anthropic.APIError);
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).type).toBe("overloaded_error");

    const cut = await client.messages
      .stream({
        model: MODEL,
        max_tokens: 1024,
        messages: [{ role: "user", content: "Go.\n@sim text 50\n@sim fault cut-after=7" }],
      })
      .finalMessage()
      .catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(Error);
    const entry = sim.requests().at(-1)!;
    expect(entry.cut).toBe(true);
    expect(entry.disconnected).toBe(false);
    expect(entry.outputTokensSent).toBe(7);
  });

  it("keeps message-level breakpoints usable through the SDK (automatic caching)", async () => {
    const body = {
      model: MODEL,
      max_tokens: 256,
      cache_control: EPHEMERAL,
      messages: [{ role: "user" as const, content: tokensOf(1500, "long") }],
    };
    const first = await client.messages.create(body);
    const second = await client.messages.create(body);
    expect(first.usage.cache_creation_input_tokens).toBe(1507);
    expect(second.usage.cache_read_input_tokens).toBe(1507);
  });
});
