// The prompt cache tells an element written with a value JavaScript cannot keep (`1.0`, an integer
// past 2^53, integer-like keys after others) from the same element as JavaScript writes it, as the
// provider does: it renders tools and tool inputs as the client sent them. Bodies are sent over real
// HTTP as text: one as Python's json.dumps writes it, and the same body read and written again by
// JavaScript, as a fork child's would be without the parent's exact text.
//
// Token arithmetic (the documented tokenizer): counts come from the JavaScript reading of a body, so
// both writings of one request have the same counts; the tests take them from countTokens.
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { WHOLE_PARSE_BYTES } from "./json-bytes.js";
import { countTokens } from "./prompt.js";
import { type Sim, startSim } from "./server.js";
import {
  EPHEMERAL,
  type ExpectedUsage,
  forkChild,
  javaScriptJson,
  loadFixture,
  ordered,
  post,
  pythonJson,
  text,
  tokensOf,
  tool,
  usageOf,
  written,
} from "./test-support.js";
import type { CacheControl, MessageResponse, MessagesRequest } from "./types.js";

const MODEL = "claude-sonnet-4-6"; // minimum cacheable prompt: 1024 tokens
const SYSTEM = tokensOf(2000, "system");

const usage = (input: number, read: number, write5m: number): ExpectedUsage => ({
  input,
  read,
  write5m,
  write1h: 0,
});

let sim: Sim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function send(body: string): Promise<MessageResponse> {
  const r = await post(sim!, body);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}
const usageAfter = async (body: string): Promise<ExpectedUsage> => usageOf((await send(body)).usage);

/** A tool whose schema holds `value` as a property's `default`. */
function schemaTool(name: string, value: unknown, cacheControl?: CacheControl) {
  return {
    name,
    description: `${tokensOf(600, name)} café`,
    input_schema: { type: "object", properties: { t: { type: "number", default: value } } },
    ...(cacheControl === undefined ? {} : { cache_control: cacheControl }),
  };
}

/** Tools T1 (breakpoint) and T2 (holding `value`), a system block (breakpoint), one user message. */
function toolsRequest(value: unknown, t2CacheControl?: CacheControl) {
  return {
    model: MODEL,
    max_tokens: 64,
    tools: [tool("T1", 1100, EPHEMERAL), schemaTool("T2", value, t2CacheControl)],
    system: [text(SYSTEM, EPHEMERAL)],
    messages: [{ role: "user", content: tokensOf(500, "user") }],
  };
}

/** A user turn, an assistant turn ending in a tool call with `input`, and its result. Four breakpoints. */
function toolCallRequest(input: unknown) {
  return {
    model: MODEL,
    max_tokens: 64,
    system: [text(SYSTEM, EPHEMERAL)],
    messages: [
      { role: "user", content: [text(tokensOf(500, "user"), EPHEMERAL)] },
      {
        role: "assistant",
        content: [
          text(tokensOf(100, "assistant"), EPHEMERAL),
          { type: "tool_use", id: "toolu_01", name: "Set", input },
        ],
      },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_01",
            content: tokensOf(100, "result"),
            cache_control: EPHEMERAL,
          },
        ],
      },
    ],
  };
}

/** Tokens through block `i` of the request, in all, and outside every block. */
function tokensOfRequest(request: unknown): {
  through: (i: number) => number;
  total: number;
  overhead: number;
} {
  const count = countTokens(JSON.parse(pythonJson(request)));
  return {
    through: (i) => (i < 0 ? 0 : count.blocks[i]!.cumulative),
    total: count.total,
    overhead: count.overhead,
  };
}

describe("the prompt cache and values JavaScript cannot keep", () => {
  it("`1.0` in tools[1] against `1`: entries are shared up to tools[0] only; the same text hits in full", async () => {
    sim = await startSim({ clock: new ManualClock(0) });
    const python = pythonJson(toolsRequest(written("1.0")));
    const javaScript = javaScriptJson(toolsRequest(written("1.0")));
    expect(javaScript).toContain('"default":1}');
    const { through, total } = tokensOfRequest(toolsRequest(1)); // blocks: T1, T2, system, user
    const cached = through(2);

    expect(await usageAfter(javaScript)).toEqual(usage(total - cached, 0, cached));
    // The Python writing reads T1's entry, and writes again from T2, the element that differs.
    expect(await usageAfter(python)).toEqual(usage(total - cached, through(0), cached - through(0)));
    expect(await usageAfter(python)).toEqual(usage(total - cached, cached, 0));
    // Whitespace is not part of the prompt: other spacing, indented, or none at all, reads it all.
    for (const spaced of [
      pythonJson(toolsRequest(written("1.0")), { indent: 2 }),
      python.replace('"default": 1.0}', '"default"  :\n1.0 }'),
      JSON.stringify(JSON.parse(python)).replace('"default":1}', '"default":1.0}'),
    ]) {
      expect(spaced).not.toBe(python);
      expect(await usageAfter(spaced)).toEqual(usage(total - cached, cached, 0));
    }
    // The JavaScript writing still reads its own entries, as does `1` written by Python.
    expect(await usageAfter(javaScript)).toEqual(usage(total - cached, cached, 0));
    expect(await usageAfter(pythonJson(toolsRequest(1), { indent: 4 }))).toEqual(
      usage(total - cached, cached, 0),
    );
  });

  it("integer-like keys after another in a tool call's input: entries are shared up to the block before it", async () => {
    sim = await startSim({ clock: new ManualClock(0) });
    const request = toolCallRequest(ordered(["b", 1], ["2", 0]));
    const python = pythonJson(request);
    const javaScript = javaScriptJson(request);
    expect(python).toContain('{"b": 1, "2": 0}');
    expect(javaScript).toContain('"input":{"2":0,"b":1}');
    // blocks: system, user, assistant text, tool_use, tool_result
    const { through, total } = tokensOfRequest(request);
    const cached = through(4);

    expect(await usageAfter(javaScript)).toEqual(usage(total - cached, 0, cached));
    expect(await usageAfter(python)).toEqual(usage(total - cached, through(2), cached - through(2)));
    expect(await usageAfter(python)).toEqual(usage(total - cached, cached, 0));
    expect(await usageAfter(pythonJson(request, { indent: 1 }))).toEqual(usage(total - cached, cached, 0));
    expect(await usageAfter(javaScript)).toEqual(usage(total - cached, cached, 0));
    // Keys JavaScript lists in the order they were written in are the same prompt either way.
    const inOrder = toolCallRequest(ordered(["2", 0], ["b", 1]));
    expect(await usageAfter(pythonJson(inOrder))).toEqual(usage(total - cached, cached, 0));
  });

  it("an integer past 2^53 in tools[0]: the JavaScript writing shares nothing with the exact one", async () => {
    sim = await startSim({ clock: new ManualClock(0) });
    const request = {
      ...toolsRequest(written("12345678901234567890")),
      tools: [schemaTool("T0", written("12345678901234567890"), EPHEMERAL)],
    };
    const python = pythonJson(request);
    const javaScript = javaScriptJson(request);
    expect(javaScript).toContain('"default":12345678901234567000}');
    const { through, total } = tokensOfRequest(request); // blocks: T0, system, user
    const cached = through(1);

    expect(await usageAfter(javaScript)).toEqual(usage(total - cached, 0, cached));
    expect(await usageAfter(python)).toEqual(usage(total - cached, 0, cached));
    expect(await usageAfter(python)).toEqual(usage(total - cached, cached, 0));
    expect(await usageAfter(javaScript)).toEqual(usage(total - cached, cached, 0));
  });

  it("neither the element's own cache_control nor how its strings are escaped is part of it", async () => {
    sim = await startSim({ clock: new ManualClock(0) });
    // T2 (holding `1.0`) carries a breakpoint here, with "café" escaped as json.dumps does by default.
    const first = pythonJson(toolsRequest(written("1.0"), EPHEMERAL));
    expect(first).toContain("caf\\u00e9");
    const { through, total } = tokensOfRequest(toolsRequest(1)); // blocks: T1, T2, system, user
    const cached = through(2);
    expect(await usageAfter(first)).toEqual(usage(total - cached, 0, cached));
    // Breakpoint moved off T2, "café" unescaped: the same prompt.
    const moved = pythonJson(toolsRequest(written("1.0")), { ensureAscii: false });
    expect(moved).toContain("café");
    expect(await usageAfter(moved)).toEqual(usage(total - cached, cached, 0));
  });

  it("cache diagnostics name the layer where the writing of an element left the previous request", async () => {
    sim = await startSim({ clock: new ManualClock(0) });
    const withDiagnostics = (request: object, previous: string | null) => ({
      ...request,
      diagnostics: { previous_message_id: previous },
    });
    const tools = toolsRequest(written("1.0"));
    const one = await send(javaScriptJson(withDiagnostics(tools, null)));
    const { total } = tokensOfRequest(tools);
    const two = await send(pythonJson(withDiagnostics(tools, one.id)));
    expect(two.diagnostics).toEqual({
      cache_miss_reason: { type: "tools_changed", cache_missed_input_tokens: total },
    });
    const same = await send(pythonJson(withDiagnostics(tools, two.id), { indent: 2 }));
    expect(same.diagnostics).toBeNull();

    const call = toolCallRequest(ordered(["b", 1], ["2", 0]));
    const three = await send(javaScriptJson(withDiagnostics(call, null)));
    const four = await send(pythonJson(withDiagnostics(call, three.id)));
    // From messages[1], the assistant turn holding the tool call: its tokens and all after it.
    const { through, total: callTotal, overhead } = tokensOfRequest(call);
    expect(four.diagnostics).toEqual({
      cache_miss_reason: {
        type: "messages_changed",
        cache_missed_input_tokens: callTotal - overhead - through(1),
      },
    });
  });

  it("a Python parent's fork: written by JavaScript it misses the parent's prefix, sent as the parent wrote it, it reads it (48k, cut bodies)", async () => {
    sim = await startSim({ clock: new ManualClock(0) });
    const fixture = loadFixture("parent-turn-48k");
    const tools = fixture.request.tools!.map((t) => {
      if (t.name !== "Bash") return t;
      const schema = t.input_schema as { properties: Record<string, object> };
      const timeout = { ...schema.properties.timeout, default: written("30.0") };
      return { ...t, input_schema: { ...schema, properties: { ...schema.properties, timeout } } };
    });
    const parent = { ...fixture.request, stream: false, tools } as MessagesRequest;
    const child = forkChild(parent, fixture.response, "Child 1: summarise the tests.");
    const parentText = pythonJson(parent);
    expect(parentText.length).toBeGreaterThan(WHOLE_PARSE_BYTES);
    expect(parentText).toContain('"default": 30.0}');
    const parentCount = tokensOfRequest(parent);
    const parentPrefix = parentCount.total - parentCount.overhead; // the last block is a breakpoint
    const childCount = countTokens(JSON.parse(pythonJson(child)));
    const childPrefix = childCount.blocks.findLast((b) => b.type === "tool_result")!.cumulative;

    expect(await usageAfter(parentText)).toEqual(usage(parentCount.overhead, 0, parentPrefix));
    const childInput = childCount.total - childPrefix;
    // Bash's schema, tools[5], comes before every breakpoint of the parent's.
    expect(await usageAfter(javaScriptJson(child))).toEqual(usage(childInput, 0, childPrefix));
    expect(await usageAfter(pythonJson(child))).toEqual(
      usage(childInput, parentPrefix, childPrefix - parentPrefix),
    );
  });
});
