// Cache diagnostics over real HTTP, read with the real @anthropic-ai/sdk (whose `Diagnostics` and
// `CacheMiss*` types are what the simulator answers with).
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { diagnosticsParamOf, MAX_FINGERPRINTS } from "./cache-diagnostics.js";
import { SimApiError } from "./errors.js";
import { type Sim, startSim } from "./server.js";
import { tokensOf } from "./test-support.js";

const MODEL = "claude-sonnet-4-6";
const tools: Anthropic.Tool[] = [
  { name: "Read", description: tokensOf(600, "read tool"), input_schema: { type: "object" } },
];
const system = tokensOf(1200, "system");
const history: Anthropic.MessageParam[] = [
  { role: "user", content: tokensOf(800, "first question") },
  { role: "assistant", content: "An answer." },
  { role: "user", content: "Go on." },
];
const base = { model: MODEL, max_tokens: 64, tools, system, messages: history };

// One simulator for the file: every test compares with responses it made itself, by their ids.
let sim: Sim;
const clientFor = (apiKey: string) => new Anthropic({ apiKey, baseURL: sim.url, maxRetries: 0 });
let client: Anthropic;
beforeAll(async () => {
  sim = await startSim();
  client = clientFor("sk-test");
});
afterAll(() => sim.close());

async function first(): Promise<Anthropic.Message> {
  return client.messages.create({ ...base, diagnostics: { previous_message_id: null } });
}

function missedTokensOf(message: Anthropic.Message): number | undefined {
  const reason = message.diagnostics?.cache_miss_reason;
  return reason !== null && reason !== undefined && "cache_missed_input_tokens" in reason
    ? reason.cache_missed_input_tokens
    : undefined;
}

describe("cache diagnostics", () => {
  it("answers diagnostics null on a first turn and on a request that only appended", async () => {
    const one = await first();
    expect(one.diagnostics).toBeNull();
    const two = await client.messages.create({
      ...base,
      messages: [...history, { role: "assistant", content: "More." }, { role: "user", content: "And?" }],
      diagnostics: { previous_message_id: one.id },
    });
    expect(two).toHaveProperty("diagnostics", null);
  });

  it("leaves diagnostics out of a response to a request that did not ask", async () => {
    const plain = await client.messages.create(base);
    expect(plain).not.toHaveProperty("diagnostics");
  });

  it("names the first layer that differs, with the tokens a matching prefix would have read", async () => {
    const one = await first();
    const prompt = one.usage.input_tokens;
    const changes: [string, Partial<Anthropic.MessageCreateParamsNonStreaming>][] = [
      ["model_changed", { model: "claude-opus-4-6" }],
      ["model_changed", { speed: "fast" } as never],
      ["tools_changed", { tools: [{ ...tools[0]!, description: "changed" }] }],
      ["tools_changed", { tools: [], system: "also changed" }],
      ["system_changed", { system: `${system}!` }],
      ["messages_changed", { messages: [{ role: "user", content: "edited" }, ...history.slice(1)] }],
      ["messages_changed", { messages: history.slice(0, 1) }],
      ["unavailable", { tool_choice: { type: "any" } }],
    ];
    for (const [type, change] of changes) {
      const next = await client.messages.create({
        ...base,
        ...change,
        diagnostics: { previous_message_id: one.id },
      });
      expect(next.diagnostics?.cache_miss_reason?.type, type).toBe(type);
    }
    const tools2 = await client.messages.create({
      ...base,
      tools: [],
      diagnostics: { previous_message_id: one.id },
    });
    expect(tools2.diagnostics?.cache_miss_reason).toEqual({
      type: "tools_changed",
      cache_missed_input_tokens: prompt,
    });
    const system2 = await client.messages.create({
      ...base,
      system: "short",
      diagnostics: { previous_message_id: one.id },
    });
    const missed = missedTokensOf(system2);
    // Everything from the system prompt on: the prompt less the tool's tokens (about 600).
    expect(missed).toBeLessThan(prompt - 550);
    expect(missed).toBeGreaterThan(prompt - 700);
    const edited = await client.messages.create({
      ...base,
      messages: [...history.slice(0, 2), { role: "user", content: "Go on!" }],
      diagnostics: { previous_message_id: one.id },
    });
    const lastMissed = missedTokensOf(edited);
    expect(lastMissed).toBeGreaterThan(0);
    expect(lastMissed).toBeLessThan(20);
  });

  it("ignores cache_control: moving a breakpoint is not a divergence", async () => {
    const one = await first();
    const next = await client.messages.create({
      ...base,
      system: [{ type: "text", text: system, cache_control: { type: "ephemeral" } }],
      diagnostics: { previous_message_id: one.id },
    });
    expect(next.diagnostics).toBeNull();
  });

  it("does not find an id it never answered, one from another workspace, or one that did not opt in", async () => {
    const unknown = await client.messages.create({
      ...base,
      diagnostics: { previous_message_id: "msg_nope" },
    });
    expect(unknown.diagnostics?.cache_miss_reason).toEqual({ type: "previous_message_not_found" });
    const plain = await client.messages.create(base);
    const notStored = await client.messages.create({
      ...base,
      diagnostics: { previous_message_id: plain.id },
    });
    expect(notStored.diagnostics?.cache_miss_reason).toEqual({ type: "previous_message_not_found" });
    const one = await first();
    const other = clientFor("sk-other");
    const elsewhere = await other.messages.create({ ...base, diagnostics: { previous_message_id: one.id } });
    expect(elsewhere.diagnostics?.cache_miss_reason).toEqual({ type: "previous_message_not_found" });
  });

  it("streams the diagnostics on message_start", async () => {
    const one = await first();
    const stream = client.messages.stream({
      ...base,
      system: "other",
      diagnostics: { previous_message_id: one.id },
    });
    let started: Anthropic.Message | undefined;
    stream.on("streamEvent", (event) => {
      if (event.type === "message_start") started = event.message;
    });
    const message = await stream.finalMessage();
    expect(started?.diagnostics?.cache_miss_reason?.type).toBe("system_changed");
    expect(message.diagnostics?.cache_miss_reason?.type).toBe("system_changed");
  });

  it("refuses a malformed diagnostics object", async () => {
    await expect(
      client.messages.create({ ...base, diagnostics: { previous_message_id: 7 as never } }),
    ).rejects.toMatchObject({ status: 400 });
    expect(() => diagnosticsParamOf({ diagnostics: [] })).toThrow(SimApiError);
    expect(() => diagnosticsParamOf({ diagnostics: "x" })).toThrow(SimApiError);
    expect(diagnosticsParamOf({})).toBeUndefined();
    expect(diagnosticsParamOf({ diagnostics: null })).toBeUndefined();
    expect(diagnosticsParamOf({ diagnostics: {} })).toEqual({ previousMessageId: null });
    expect(MAX_FINGERPRINTS).toBe(10_000);
  });
});
