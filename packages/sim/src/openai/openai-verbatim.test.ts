// The OpenAI prompt caches tell an element written with a value JavaScript cannot keep (`1.0`,
// integer-like keys after others) from the same element as JavaScript writes it, as the provider does:
// it renders tools as the client sent them. Bodies go over real HTTP as text: one as Python's
// json.dumps writes it (the `openai` Python SDK sends `"default": 1.0` so), and the same body read
// and written again by JavaScript, as a fork child's would be without the parent's exact text.
//
// Arithmetic: the simulator's prompt is the body's items as JSON.stringify writes them, one a line, 4
// characters a token; hits come in 128-token (512-character) steps. An element written otherwise is
// keyed from the step where it begins, so the other writing reads the steps that end before it.
import { keptByJavaScript, parseJsonText, valuesJsonCannotKeep } from "@forkd/protocol/internal";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../clock.js";
import { WHOLE_PARSE_BYTES } from "../json-bytes.js";
import { type Sim, startSim } from "../server.js";
import { javaScriptJson, ordered, post, pythonJson, tokensOf, written } from "../test-support.js";
import { OPENAI_CACHE_STEP_TOKENS } from "./openai-cache.js";
import { openAiBreakpointUnits, renderOpenAiPrompt, renderOpenAiPromptMarked } from "./openai-route.js";
import { openAiVerbatimOf, promptFieldOf } from "./openai-verbatim.js";

const STEP_CHARS = OPENAI_CACHE_STEP_TOKENS * 4;
/** Hits in whole steps of the prompt's characters before `chars`. */
const stepsBefore = (chars: number) => Math.floor(chars / STEP_CHARS) * OPENAI_CACHE_STEP_TOKENS;

let sim: Sim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

interface Cached {
  prompt: number;
  cached: number;
}

/** Sends a body's text; its prompt and cached tokens, as either API reports them. */
async function send(path: "/v1/chat/completions" | "/v1/responses", body: string): Promise<Cached> {
  const r = await post<Record<string, Record<string, unknown>>>(sim!, body, { path });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const usage = r.body.usage as Record<string, unknown>;
  const details = (usage.prompt_tokens_details ?? usage.input_tokens_details) as { cached_tokens: number };
  return { prompt: Number(usage.prompt_tokens ?? usage.input_tokens), cached: details.cached_tokens };
}

/** A Chat Completions function tool whose `min_score` property has `value` as its default. */
function chatTool(name: string, tokens: number, value?: unknown) {
  return {
    type: "function",
    function: {
      name,
      description: tokensOf(tokens, name),
      parameters: {
        type: "object",
        properties: value === undefined ? {} : { min_score: { type: "number", default: value } },
      },
    },
  };
}

/** Tools T1 (`t1Tokens`) and T2 (holding `value`; first when `first`), a system and a user message. */
function chatRequest(value: unknown, first = false, t1Tokens = 1500) {
  const tools = [chatTool("T1", t1Tokens), chatTool("T2", 200, value)];
  return {
    model: "gpt-5",
    prompt_cache_key: "parent",
    tools: first ? tools.reverse() : tools,
    messages: [
      { role: "system", content: tokensOf(1000, "system") },
      { role: "user", content: tokensOf(500, "user") },
    ],
  };
}

/** Where the tool at `index` begins in the simulator's prompt of a chat request. */
function chatToolStart(request: { tools: unknown[] }, index: number): number {
  return 1 + request.tools.slice(0, index).reduce<number>((at, t) => at + JSON.stringify(t).length + 1, 0);
}

const CHAT = "/v1/chat/completions";

describe("the OpenAI prefix cache and values JavaScript cannot keep (gpt-5)", () => {
  // 20,000 tokens: a body the parse cuts into pieces (json-bytes.ts), each tested on its own.
  it.each([1500, 20_000])(
    "`1.0` in tools[1] after %i tokens, against `1`: read up to the step where tools[1] begins; the same text, or other spacing, in full",
    async (t1Tokens) => {
      sim = await startSim({ clock: new ManualClock(0) });
      const request = chatRequest(written("1.0"), false, t1Tokens);
      const python = pythonJson(request);
      const javaScript = javaScriptJson(request);
      expect(python).toContain('"default": 1.0}');
      expect(javaScript).toContain('"default":1}');
      expect(Buffer.byteLength(python) > WHOLE_PARSE_BYTES).toBe(t1Tokens > 10_000);
      const prompt = renderOpenAiPrompt("chat", JSON.parse(javaScript));
      const full = stepsBefore(prompt.length - 4);
      const shared = stepsBefore(chatToolStart(JSON.parse(javaScript), 1));
      expect(shared).toBeGreaterThanOrEqual(1024);
      expect(shared).toBeLessThan(full);

      const first = await send(CHAT, javaScript);
      expect(first).toEqual({ prompt: Math.ceil(prompt.length / 4), cached: 0 });
      expect(await send(CHAT, javaScript)).toEqual({ prompt: first.prompt, cached: full });
      // The Python writing: the same JavaScript reading, same token count, but tools[1] differs.
      expect(await send(CHAT, python)).toEqual({ prompt: first.prompt, cached: shared });
      // Its own text again reads it all; so does other spacing, and string escapes, which do not reach the prompt.
      expect(await send(CHAT, python)).toEqual({ prompt: first.prompt, cached: full });
      for (const spaced of [
        pythonJson(request, { indent: 2 }),
        pythonJson(request, { ensureAscii: false }).replace('"default": 1.0}', '"default"  :\n1.0 }'),
        JSON.stringify(JSON.parse(python)).replace('"default":1}', '"default":1.0}'),
      ]) {
        expect(spaced).not.toBe(python);
        expect(await send(CHAT, spaced)).toEqual({ prompt: first.prompt, cached: full });
      }
      // The JavaScript writing keeps its own entries; `1` written by Python is the same prompt.
      expect(await send(CHAT, javaScript)).toEqual({ prompt: first.prompt, cached: full });
      expect(await send(CHAT, pythonJson(chatRequest(1, false, t1Tokens), { indent: 4 }))).toEqual({
        prompt: first.prompt,
        cached: full,
      });
    },
  );

  it("`1.0` in tools[0]: nothing is read", async () => {
    sim = await startSim({ clock: new ManualClock(0) });
    const request = chatRequest(written("1.0"), true);
    await send(CHAT, javaScriptJson(request));
    expect((await send(CHAT, javaScriptJson(request))).cached).toBeGreaterThan(0);
    expect((await send(CHAT, pythonJson(request))).cached).toBe(0);
    expect((await send(CHAT, pythonJson(request))).cached).toBeGreaterThan(0);
  });

  it("integer-like keys after another in a tool's parameters: read up to the step where that tool begins", async () => {
    sim = await startSim({ clock: new ManualClock(0) });
    const request = chatRequest(undefined);
    const properties = ordered(["query", { type: "string" }], ["2", { type: "integer", default: 2 }]);
    (request.tools[1]!.function.parameters as { properties: unknown }).properties = properties;
    const python = pythonJson(request);
    const javaScript = javaScriptJson(request);
    expect(python).toContain('{"query": {"type": "string"}, "2": {');
    expect(javaScript).toContain('{"2":{"type":"integer","default":2},"query":');
    const prompt = renderOpenAiPrompt("chat", JSON.parse(javaScript));
    const full = stepsBefore(prompt.length - 4);
    const shared = stepsBefore(chatToolStart(JSON.parse(javaScript), 1));

    await send(CHAT, javaScript);
    expect((await send(CHAT, python)).cached).toBe(shared);
    expect((await send(CHAT, python)).cached).toBe(full);
    expect((await send(CHAT, pythonJson(request, { indent: 2 }))).cached).toBe(full);
    expect((await send(CHAT, javaScript)).cached).toBe(full);
  });

  it("a body JavaScript wrote, or one whose only such value does not reach the prompt, reads as before", async () => {
    sim = await startSim({ clock: new ManualClock(0) });
    const request = chatRequest(1);
    const javaScript = JSON.stringify(request);
    const prompt = renderOpenAiPrompt("chat", request);
    const full = stepsBefore(prompt.length - 4);
    expect(renderOpenAiPromptMarked("chat", request, undefined)).toEqual({ prompt, marks: [] });
    expect(await send(CHAT, javaScript)).toEqual({ prompt: Math.ceil(prompt.length / 4), cached: 0 });
    expect((await send(CHAT, javaScript)).cached).toBe(full);
    // `temperature: 1.0` is not rendered: the prompt is the same.
    const python = pythonJson({ ...request, temperature: written("1.0") });
    expect(python).toContain('"temperature": 1.0');
    expect(keptByJavaScript(python)).toBe(false);
    expect(valuesJsonCannotKeep(python, promptFieldOf("chat"))).toEqual([]);
    expect((await send(CHAT, python)).cached).toBe(full);
  });
});

/** A Responses request: long instructions, tools T1 and T2 (holding `value`), one user message. */
function responsesRequest(value: unknown, model = "gpt-5") {
  const fn = (name: string, tokens: number, v?: unknown) => ({
    type: "function",
    name,
    description: tokensOf(tokens, name),
    parameters: {
      type: "object",
      properties: v === undefined ? {} : { min_score: { type: "number", default: v } },
    },
  });
  return {
    model,
    prompt_cache_key: "parent",
    store: false,
    instructions: tokensOf(1200, "instructions"),
    tools: [fn("T1", 300), fn("T2", 200, value)],
    input: [
      {
        type: "message",
        role: "user",
        content: [
          { type: "input_text", text: tokensOf(600, "user") },
          ...(model === "gpt-5" ? [] : [{ type: "input_text", text: tokensOf(50, "tail") }]),
        ],
      },
    ],
  };
}

const RESPONSES = "/v1/responses";

describe("the OpenAI caches and values JavaScript cannot keep: Responses", () => {
  it("`1.0` in tools[1] (gpt-5): read up to the step where tools[1] begins, then in full", async () => {
    sim = await startSim({ clock: new ManualClock(0) });
    const request = responsesRequest(written("1.0"));
    const python = pythonJson(request);
    const javaScript = javaScriptJson(request);
    const parsed = JSON.parse(javaScript) as ReturnType<typeof responsesRequest>;
    const prompt = renderOpenAiPrompt("responses", parsed);
    const toolsAt = JSON.stringify(parsed.instructions).length + 1;
    const shared = stepsBefore(toolsAt + 1 + JSON.stringify(parsed.tools[0]).length + 1);
    const full = stepsBefore(prompt.length - 4);
    expect(shared).toBeGreaterThanOrEqual(1024);

    await send(RESPONSES, javaScript);
    expect((await send(RESPONSES, python)).cached).toBe(shared);
    expect((await send(RESPONSES, python)).cached).toBe(full);
    expect((await send(RESPONSES, pythonJson(request, { indent: 2 }))).cached).toBe(full);
    expect((await send(RESPONSES, javaScript)).cached).toBe(full);
  });

  it("`1.0` in tools[1] (gpt-5.6-terra, breakpoints): the parent's breakpoint is read only by its own text", async () => {
    sim = await startSim({ clock: new ManualClock(0) });
    const request = responsesRequest(written("1.0"), "gpt-5.6-terra");
    // A breakpoint on the user's first block: past the tools, before the end.
    const content = request.input[0]!.content as Record<string, unknown>[];
    content[0] = { ...content[0], prompt_cache_breakpoint: { mode: "explicit" } };
    const python = pythonJson(request);
    const javaScript = javaScriptJson(request);
    const units = openAiBreakpointUnits("responses", JSON.parse(javaScript));
    const atBreakpoint = Math.ceil(
      units
        .slice(0, 4)
        .map((u) => u.text)
        .join("\n").length / 4,
    );
    // Instructions, tools, the message's other fields, its first block (the breakpoint), its second.
    expect(units.map((u) => u.breakpoint)).toEqual([false, false, false, true, false]);

    await send(RESPONSES, javaScript);
    expect((await send(RESPONSES, javaScript)).cached).toBe(atBreakpoint);
    expect((await send(RESPONSES, python)).cached).toBe(0);
    expect((await send(RESPONSES, python)).cached).toBe(atBreakpoint);
    expect((await send(RESPONSES, pythonJson(request, { indent: 2 }))).cached).toBe(atBreakpoint);
  });
});

describe("openAiVerbatimOf and the layouts", () => {
  /** The verbatim elements of a body's text, as the route finds them. */
  const verbatimOf = (api: "chat" | "responses", text: string) =>
    openAiVerbatimOf(api, valuesJsonCannotKeep(text, promptFieldOf(api)));

  it("places a value in the element the layout keys: a tool, an item, or a block of the breakpoint layout", () => {
    const body = (n: string, m: string) =>
      `{"model":"gpt-5.6-terra","instructions":"i","temperature":1.0,"tools":[{"type":"function","name":"a"},{"type":"function","name":"b","parameters":{"default":${n}}}],` +
      `"input":[{"role":"user","content":"u"},{"role":"user","content":[{"type":"input_text","text":"x"},{"type":"input_text","text":"y","prompt_cache_breakpoint":{"mode":"explicit"},"n":${m}}]}]}`;
    const plain = verbatimOf("responses", body("1.0", "2"));
    expect([...plain!.tools.keys()]).toEqual([1]);
    expect(plain!.items.size).toBe(0);
    const part = verbatimOf("responses", body("1", "2.0"));
    expect(part!.tools.size).toBe(0);
    expect([...part!.items.keys()]).toEqual([1]);
    expect(verbatimOf("responses", body("1", "2"))).toBeUndefined();
    expect(verbatimOf("chat", body("1", "2.0"))).toBeUndefined(); // `input` is not a chat field

    // Breakpoint units: instructions, tools, item 0, item 1's other fields, its two blocks.
    const units = (text: string) =>
      openAiBreakpointUnits(
        "responses",
        parseJsonText(text) as Record<string, unknown>,
        verbatimOf("responses", text),
      );
    const identities = (text: string) => units(text).map((u) => u.identity);
    expect(units(body("1", "2")).map((u) => u.text)).toEqual(
      openAiBreakpointUnits("responses", parseJsonText(body("1", "2")) as Record<string, unknown>).map(
        (u) => u.text,
      ),
    );
    expect(identities(body("1.0", "2")).map((id) => id !== undefined)).toEqual([
      false,
      true,
      false,
      false,
      false,
      false,
    ]);
    expect(identities(body("1", "2.0")).map((id) => id !== undefined)).toEqual([
      false,
      false,
      false,
      false,
      false,
      true,
    ]);
    // The part's breakpoint marker is not part of its text; its value is.
    expect(identities(body("1", "2.0"))[5]).toBe(
      identities(body("1", "2.0").replace(',"prompt_cache_breakpoint":{"mode":"explicit"}', ""))[5],
    );
    expect(identities(body("1", "2.0"))[5]).not.toBe(identities(body("1", "2.00"))[5]);
    // A value in the item's other fields: the unit of those.
    const own = body("1", "2").replace('{"role":"user","content":[', '{"role":"user","n":3.0,"content":[');
    expect(identities(own).map((id) => id !== undefined)).toEqual([false, false, false, true, false, false]);
  });

  it("marks a tool where it begins in the plain prompt, and an item (its parts too) where it begins", () => {
    const text =
      '{"model":"gpt-5","tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b","parameters":{"default":1.0}}}],' +
      '"messages":[{"role":"user","content":"u"},{"role":"user","content":[{"type":"text","text":"x","n":2.0}]}]}';
    const body = parseJsonText(text) as Record<string, unknown>;
    const { prompt, marks } = renderOpenAiPromptMarked("chat", body, verbatimOf("chat", text));
    expect(prompt).toBe(renderOpenAiPrompt("chat", body));
    expect(marks.map((m) => prompt.slice(m.at, m.at + 20))).toEqual([
      '{"type":"function","',
      '{"role":"user","cont',
    ]);
    expect(prompt.slice(marks[0]!.at)).toMatch(/^\{"type":"function","function":\{"name":"b"/);
    expect(prompt.slice(marks[1]!.at)).toMatch(/^\{"role":"user","content":\[/);
  });
});
