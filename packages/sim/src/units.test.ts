// Unit tests of the pure parts: tokenizer, model table, script, scripted model, faults, cache model.

import { minCacheableTokens } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { type Breakpoint, PromptCache, resolveBreakpoints } from "./cache.js";
import { ManualClock } from "./clock.js";
import { SimApiError } from "./errors.js";
import { FaultInjector, parseFault } from "./faults.js";
import { fillerText, runScriptedModel } from "./model.js";
import { countTokens, layoutPrompt } from "./prompt.js";
import { parseScript } from "./script.js";
import { EPHEMERAL, loadFixture, tokensOf } from "./test-support.js";
import { countTextTokens } from "./tokenizer.js";
import type { MessagesRequest } from "./types.js";
import { validateRequest } from "./validate.js";

const MODEL = "claude-sonnet-4-6";

describe("tokenizer", () => {
  it("counts 4 characters a token, rounded up", () => {
    expect(countTextTokens("")).toBe(0);
    expect(countTextTokens("abc")).toBe(1);
    expect(countTextTokens("abcd")).toBe(1);
    expect(countTextTokens("abcde")).toBe(2);
  });

  it("adds block, message and request overheads; string and block forms count the same", () => {
    const asString = countTokens({
      model: MODEL,
      system: "abcd",
      messages: [{ role: "user", content: "abcdefgh" }],
    });
    const asBlocks = countTokens({
      model: MODEL,
      system: [{ type: "text", text: "abcd" }],
      messages: [{ role: "user", content: [{ type: "text", text: "abcdefgh" }] }],
    });
    // system 1 + 3; message 2 + 3 + 4; request 3
    expect(asString.total).toBe(16);
    expect(asBlocks).toEqual(asString);
    expect(asString.blocks.map((b) => b.tokens)).toEqual([4, 9]);
    expect(asString.blocks.map((b) => b.cumulative)).toEqual([4, 13]);
  });

  it("counts tools by their JSON without cache_control, tool_use by name + JSON input", () => {
    const tool = { name: "Read", input_schema: { type: "object" } };
    const n = countTokens({
      model: MODEL,
      tools: [{ ...tool, cache_control: EPHEMERAL }],
      messages: [
        { role: "user", content: "go" },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "t1", name: "Read", input: { file_path: "a" } }],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: "12345678" }] },
          ],
        },
      ],
    });
    expect(n.tools).toBe(Math.ceil(JSON.stringify(tool).length / 4) + 3);
    expect(n.blocks[2]!.tokens).toBe(Math.ceil('Read{"file_path":"a"}'.length / 4) + 3 + 4);
    expect(n.blocks[3]!.tokens).toBe(2 + 3 + 4);
  });

  it("is deterministic and near the fixture's own estimate", () => {
    const f = loadFixture("parent-turn-48k");
    const a = countTokens(f.request);
    expect(countTokens(structuredClone(f.request))).toEqual(a);
    // The fixture estimates ~47k as chars/4 of its JSON; rendered content is a little less.
    expect(a.total).toBeGreaterThan(40_000);
    expect(a.total).toBeLessThan(50_000);
  });
});

describe("minimum cacheable tokens", () => {
  it.each([
    ["claude-sonnet-4-6", 1024],
    ["claude-sonnet-4-5-20250929", 1024],
    ["claude-opus-4-5-20251101", 4096],
    ["claude-opus-4-6", 4096],
    ["claude-opus-4-7", 2048],
    ["claude-opus-4-8", 1024],
    ["claude-haiku-4-5", 4096],
    ["claude-3-5-haiku-latest", 2048],
    ["claude-3-haiku-20240307", 2048],
    ["claude-opus-5", 512],
    ["some-other-model", 1024],
  ])("%s → %i", (model, tokens) => {
    expect(minCacheableTokens(model)).toBe(tokens);
  });

  it("takes overrides by the longest matching prefix", () => {
    expect(minCacheableTokens("claude-opus-4-6", { claude: 10, "claude-opus": 20 })).toBe(20);
    expect(minCacheableTokens("sim-tiny", { "sim-": 0 })).toBe(0);
  });
});

describe("script", () => {
  it("parses tools, turns, sizes, latency, faults and stop reasons", () => {
    const s = parseScript(
      [
        "Do the thing in src/a.ts",
        '@sim tool Read {"file_path":"a"}',
        "@sim tool Bash {}",
        "@sim ttft 50",
        "@sim text 12",
        "@sim turn",
        "@sim tps 99",
        "@sim fault-once 429 retry-after=2",
        "@sim think 7",
        "@sim turn",
        "@sim stop max_tokens",
        "@sim say hello",
        "@sim say world",
        "then report",
      ].join("\r\n"),
    );
    expect(s.problems).toEqual([]);
    expect(s.text).toBe("Do the thing in src/a.ts\nthen report");
    expect(s.turns).toEqual([
      {
        tools: [
          { name: "Read", input: { file_path: "a" } },
          { name: "Bash", input: {} },
        ],
        ttftMs: 50,
        textTokens: 12,
      },
      {
        tools: [],
        ttftMs: 50,
        tokensPerSecond: 99,
        thinkTokens: 7,
        fault: {
          once: true,
          spec: { kind: "status", status: 429, errorType: "rate_limit_error", retryAfterSeconds: 2 },
        },
      },
      { tools: [], ttftMs: 50, tokensPerSecond: 99, stop: "max_tokens", say: "hello\nworld" },
    ]);
  });

  it("lists what it cannot understand and keeps going", () => {
    const s = parseScript("x\n@sim tool Read {bad json\n@sim frobnicate\n@sim text many\n@sim tool Read []");
    expect(s.problems).toHaveLength(4);
    expect(s.problems[1]).toContain('unknown command "frobnicate"');
    expect(s.turns).toEqual([{ tools: [] }]);
  });

  it("parses faults", () => {
    expect(parseFault("529")).toEqual({ kind: "status", status: 529, errorType: "overloaded_error" });
    expect(parseFault("500")).toEqual({ kind: "status", status: 500, errorType: "api_error" });
    expect(parseFault("cut-after=12")).toEqual({ kind: "cut", afterTokens: 12 });
    expect(parseFault("error-after=3")).toEqual({
      kind: "stream-error",
      afterTokens: 3,
      errorType: "overloaded_error",
    });
    expect(() => parseFault("banana")).toThrow(/unknown fault/);
    expect(() => parseFault("cut-after=-1")).toThrow(/whole number/);
  });

  it("draws the same rate faults for the same seed", () => {
    const draw = (seed: number) => {
      const f = new FaultInjector({ rate: 0.3, seed });
      return Array.from({ length: 50 }, () => f.draw()?.kind ?? null);
    };
    expect(draw(3)).toEqual(draw(3));
    expect(draw(3)).not.toEqual(draw(4));
    expect(new FaultInjector().draw()).toBeNull();
  });
});

describe("scripted model", () => {
  const tools = [
    { name: "Read", input_schema: { type: "object" } },
    { name: "Write", input_schema: { type: "object" } },
  ];
  const run = (req: Partial<MessagesRequest>) =>
    runScriptedModel(validateRequest({ model: MODEL, max_tokens: 4096, tools, ...req }, "messages"));

  it("answers the directive in the report format, deterministically", () => {
    const req = {
      messages: [{ role: "user" as const, content: "Audit packages/sim/src/cache.ts for races" }],
    };
    const a = run(req);
    expect(a.stopReason).toBe("end_turn");
    const text = a.content[0]!.type === "text" ? a.content[0]!.text : "";
    expect(text.split("\n").map((l) => l.split(":")[0])).toEqual([
      "Scope",
      "Result",
      "Key files",
      "Files changed",
      "Issues",
    ]);
    expect(text).toContain("Scope: Audit packages/sim/src/cache.ts for races");
    expect(text).toContain("Key files: packages/sim/src/cache.ts");
    expect(text).toContain("Issues: none");
    expect(run(req)).toEqual(a);
    expect(a.outputTokens).toBe(countTextTokens(text));
  });

  it("tracks the scripted turn from the conversation and reports the tool results", () => {
    const directive =
      '@sim tool Read {"file_path":"a.md"}\n@sim turn\n@sim tool Write {"file_path":"b.md","content":"x"}\nFix it';
    const t0 = run({ messages: [{ role: "user", content: directive }] });
    expect(t0.turn).toBe(0);
    expect(t0.content).toMatchObject([{ type: "tool_use", name: "Read", input: { file_path: "a.md" } }]);
    const id0 = (t0.content[0] as { id: string }).id;
    const t1 = run({
      messages: [
        { role: "user", content: directive },
        { role: "assistant", content: t0.content as never },
        { role: "user", content: [{ type: "tool_result", tool_use_id: id0, content: "alpha\nbeta" }] },
      ],
    });
    expect(t1.turn).toBe(1);
    expect(t1.content).toMatchObject([{ type: "tool_use", name: "Write" }]);
    const id1 = (t1.content[0] as { id: string }).id;
    expect(id1).not.toBe(id0);
    const t2 = run({
      messages: [
        { role: "user", content: directive },
        { role: "assistant", content: t0.content as never },
        { role: "user", content: [{ type: "tool_result", tool_use_id: id0, content: "alpha\nbeta" }] },
        { role: "assistant", content: t1.content as never },
        { role: "user", content: [{ type: "tool_result", tool_use_id: id1, content: "written" }] },
      ],
    });
    expect(t2.turn).toBe(2);
    const text = t2.content[0]!.type === "text" ? t2.content[0]!.text : "";
    expect(text).toContain('Read → "alpha"');
    expect(text).toContain('Write → "written"');
    expect(text).toContain("Files changed: b.md");
    expect(text).toContain("Scope: Fix it");
  });

  it("reads past a tool search's answer: its text is the harness's note, not a new directive", () => {
    const script = '@sim tool ToolSearch {"query":"select:Fork"}\n@sim turn\n@sim say loaded';
    const request = (toolName: string): Partial<MessagesRequest> => ({
      tools: [
        ...tools,
        { name: "ToolSearch", input_schema: { type: "object" } },
        {
          name: "Fork",
          input_schema: { type: "object" },
          defer_loading: true,
        } as NonNullable<MessagesRequest["tools"]>[number],
      ],
      messages: [
        { role: "user", content: script },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "ToolSearch", input: {} }] },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "t1",
              content: [{ type: "tool_reference", tool_name: toolName }],
            },
            { type: "text", text: "Tool loaded." },
          ],
        },
      ],
    });
    const r = run(request("Fork"));
    expect(r.turn).toBe(1);
    expect(r.content[0]).toMatchObject({ type: "text", text: "loaded" });
    // A reference loads a tool of the request, as the API requires.
    expect(() => run(request("Missing"))).toThrow(/Tool reference 'Missing' not found/);
  });

  it("finds the directive after a fork's placeholder tool results", () => {
    const r = run({
      messages: [
        { role: "user", content: "parent task" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Read", input: {} }] },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "t1", content: "Fork started" },
            { type: "text", text: "Child 3: check the log" },
          ],
        },
      ],
    });
    expect(r.turn).toBe(0);
    expect(r.content[0]).toMatchObject({
      type: "text",
      text: expect.stringContaining("Scope: Child 3: check the log"),
    });
  });

  it("takes a forked child's scope from its directive, not from the fork boilerplate before it", () => {
    const boilerplate =
      '<fork-boilerplate v="1" run="r1" sig="0123456789abcdef">\nRules.\n</fork-boilerplate>';
    const r = run({
      messages: [
        { role: "user", content: `${boilerplate}\n\nYour directive:\nAudit the length checks.\nThen stop.` },
      ],
    });
    expect(r.content[0]).toMatchObject({
      type: "text",
      text: expect.stringMatching(/^Scope: Audit the length checks\.\n/),
    });
  });

  it("refuses tools the request does not offer, and honours tool_choice none", () => {
    const unknown = run({ messages: [{ role: "user", content: "@sim tool Delete {}" }] });
    expect(unknown.stopReason).toBe("end_turn");
    expect(unknown.content[0]).toMatchObject({
      text: expect.stringContaining('tool "Delete" not in the request\'s tools (available: Read, Write)'),
    });
    const none = run({
      tool_choice: { type: "none" },
      messages: [{ role: "user", content: "@sim tool Read {}" }],
    });
    expect(none.content.map((b) => b.type)).toEqual(["text"]);
  });

  it("sizes text exactly, cuts at max_tokens and stop sequences, forces stop reasons", () => {
    const sized = run({ messages: [{ role: "user", content: "x\n@sim text 333" }] });
    expect(sized.outputTokens).toBe(333);
    const tiny = run({ messages: [{ role: "user", content: "x\n@sim text 3" }] });
    expect(tiny.content[0]).toMatchObject({ text: "Scope: x\nRes" }); // 12 characters
    const capped = run({ max_tokens: 10, messages: [{ role: "user", content: "x\n@sim text 50" }] });
    expect(capped.outputTokens).toBe(10);
    expect(capped.stopReason).toBe("max_tokens");
    const stopped = run({ stop_sequences: ["Result"], messages: [{ role: "user", content: "x" }] });
    expect(stopped).toMatchObject({
      stopReason: "stop_sequence",
      stopSequence: "Result",
      content: [{ text: "Scope: x\n" }],
    });
    const forced = run({ messages: [{ role: "user", content: "x\n@sim stop refusal\n@sim say no" }] });
    expect(forced).toMatchObject({ stopReason: "refusal", content: [{ text: "no" }] });
  });

  it("thinks only when thinking is enabled, within the budget", () => {
    const off = run({ messages: [{ role: "user", content: "x\n@sim think 10" }] });
    expect(off.content.map((b) => b.type)).toEqual(["text"]);
    const on = run({
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages: [{ role: "user", content: "x\n@sim think 2000" }],
    });
    expect(on.content[0]).toMatchObject({ type: "thinking" });
    expect(on.blockTokens[0]).toBe(1024);
  });

  it("starts every turn with thinking when it is enabled, as the API's model does; adaptive may skip it", () => {
    const tools = [{ name: "Read", input_schema: { type: "object" as const } }];
    const ask = {
      tools,
      messages: [{ role: "user" as const, content: 'x\n@sim tool Read {"file_path":"a"}' }],
    };
    const enabled = run({ ...ask, thinking: { type: "enabled", budget_tokens: 1024 } });
    expect(enabled.content.map((b) => b.type)).toEqual(["thinking", "tool_use"]);
    expect(enabled.blockTokens[0]).toBe(1);
    expect(run({ ...ask, thinking: { type: "adaptive" } }).content.map((b) => b.type)).toEqual(["tool_use"]);
  });

  it("makes filler of an exact length that does not end in whitespace", () => {
    for (const n of [1, 2, 5, 40, 401]) {
      const t = fillerText(n, "abcdef12");
      expect(t).toHaveLength(n);
      expect(t).not.toMatch(/\s$/);
    }
  });
});

describe("cache model", () => {
  const big = (label: string): MessagesRequest =>
    validateRequest(
      {
        model: MODEL,
        max_tokens: 10,
        system: [{ type: "text", text: tokensOf(1200, label), cache_control: EPHEMERAL }],
        messages: [{ role: "user", content: "q" }],
      },
      "messages",
    );
  const setup = () => {
    const clock = new ManualClock(0);
    const cache = new PromptCache({ clock, minCacheableTokens: () => 1024 });
    const layout = layoutPrompt(big("s"));
    const bps: Breakpoint[] = resolveBreakpoints(layout);
    return { clock, cache, layout, bps };
  };

  it("an entry is readable only after a writer commits; pending writers all write", () => {
    const { cache, layout, bps } = setup();
    const a = cache.plan(layout, bps, "k");
    const b = cache.plan(layout, bps, "k");
    expect(a.usage.cache_creation_input_tokens).toBe(1203);
    expect(b.usage.cache_creation_input_tokens).toBe(1203);
    cache.commit(b);
    const c = cache.plan(layout, bps, "k");
    expect(c.usage.cache_read_input_tokens).toBe(1203);
    cache.abandon(a); // a late failure of the other writer does not remove a readable entry
    expect(cache.plan(layout, bps, "k").usage.cache_read_input_tokens).toBe(1203);
  });

  it("abandoning the only writer leaves nothing behind", () => {
    const { cache, layout, bps } = setup();
    const a = cache.plan(layout, bps, "k");
    expect(cache.stats().entries).toBe(1);
    cache.abandon(a);
    expect(cache.stats().entries).toBe(0);
    cache.commit(a); // no effect once abandoned
    expect(cache.plan(layout, bps, "k").usage.cache_read_input_tokens).toBe(0);
  });

  it("scopes entries, and sweeps expired ones", () => {
    const { clock, cache, layout, bps } = setup();
    cache.commit(cache.plan(layout, bps, "k1"));
    expect(cache.plan(layout, bps, "k2").usage.cache_read_input_tokens).toBe(0);
    clock.advance(10 * 60_000);
    cache.sweep();
    expect(cache.stats().entries).toBe(1); // k2's pending write stays until it commits or abandons
  });

  it("rejects more than four breakpoints and 5m before 1h", () => {
    const many = layoutPrompt(
      validateRequest(
        {
          model: MODEL,
          max_tokens: 10,
          system: ["a", "b", "c", "d", "e"].map((t) => ({ type: "text", text: t, cache_control: EPHEMERAL })),
          messages: [{ role: "user", content: "q" }],
        },
        "messages",
      ),
    );
    expect(() => resolveBreakpoints(many)).toThrow(SimApiError);
    const mixed = layoutPrompt(
      validateRequest(
        {
          model: MODEL,
          max_tokens: 10,
          system: [{ type: "text", text: "a", cache_control: { type: "ephemeral", ttl: "5m" } }],
          messages: [
            {
              role: "user",
              content: [{ type: "text", text: "q", cache_control: { type: "ephemeral", ttl: "1h" } }],
            },
          ],
        },
        "messages",
      ),
    );
    expect(() => resolveBreakpoints(mixed)).toThrow(/ttl='1h'/);
  });

  it("puts the automatic breakpoint on the last block that is not thinking", () => {
    // A final `thinking` block is refused ("The final block in an assistant message cannot be
    // `thinking`"); a final `redacted_thinking` block is not, as far as is known. A prefill needs a
    // model that takes one (before 4.6).
    const layout = layoutPrompt(
      validateRequest(
        {
          model: "claude-sonnet-4-5",
          max_tokens: 4000,
          thinking: { type: "enabled", budget_tokens: 1024 },
          messages: [
            { role: "user", content: "q" },
            {
              role: "assistant",
              content: [
                { type: "text", text: "a" },
                { type: "redacted_thinking", data: "d" },
              ],
            },
          ],
        },
        "messages",
      ),
    );
    expect(resolveBreakpoints(layout, EPHEMERAL)).toEqual([{ block: 1, ttl: "5m", automatic: true }]);
  });
});
