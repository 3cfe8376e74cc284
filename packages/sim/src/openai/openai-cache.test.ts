// OpenAI's caching rules as the simulator applies them: nothing below 1,024 tokens, hits in 128-token
// steps of the longest cached prefix, readable only once the writing response began, one machine per
// scope + prompt start + prompt_cache_key, spill past 15 requests a minute, 5 minutes idle at most
// (in-memory retention) or 24 hours (extended), the retention each model gets.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../clock.js";
import {
  OPENAI_BREAKPOINT_TTL_MS,
  OPENAI_EXTENDED_TTL_MS,
  OPENAI_IDLE_TTL_MS,
  OPENAI_MAX_TTL_MS,
  OpenAiPromptCache,
  type OpenAiPromptUnit,
  openAiRetentionOf,
} from "./openai-cache.js";

/** A prompt of `tokens` tokens (4 characters each) that starts like every other one here. */
const prompt = (tokens: number, tail = "") => `${"x".repeat(tokens * 4 - tail.length)}${tail}`;

function warm(cache: OpenAiPromptCache, text: string, key?: string, scope = "org") {
  const plan = cache.plan(scope, text, key);
  cache.commit(plan);
  return plan;
}

describe("OpenAiPromptCache", () => {
  it("caches nothing below 1,024 tokens", () => {
    const cache = new OpenAiPromptCache(new ManualClock());
    warm(cache, prompt(1000));
    expect(cache.plan("org", prompt(1000), undefined).cachedTokens).toBe(0);
    warm(cache, prompt(1100));
    expect(cache.plan("org", prompt(1100), undefined).cachedTokens).toBe(1024);
  });

  it("counts a hit in whole 128-token steps of the shared prefix, never the last token", () => {
    const cache = new OpenAiPromptCache(new ManualClock());
    const parent = prompt(3000);
    warm(cache, parent);
    // 3000 tokens: the last one is computed, so 2944 (23 steps) are readable.
    expect(cache.plan("org", parent, undefined).cachedTokens).toBe(2944);
    expect(cache.plan("org", `${parent}${"y".repeat(4000)}`, undefined).cachedTokens).toBe(2944);
    // A prompt that differs from token 2000 on reads up to the step before it.
    expect(cache.plan("org", `${parent.slice(0, 8000)}${"z".repeat(4000)}`, undefined).cachedTokens).toBe(
      1920,
    );
  });

  it("serves nothing before the writing response began", () => {
    const cache = new OpenAiPromptCache(new ManualClock());
    const plan = cache.plan("org", prompt(2000), undefined);
    expect(cache.plan("org", prompt(2000), undefined).cachedTokens).toBe(0);
    cache.commit(plan);
    expect(cache.plan("org", prompt(2000), undefined).cachedTokens).toBeGreaterThan(0);
  });

  it("routes by organisation and prompt_cache_key: another key or another organisation misses", () => {
    const cache = new OpenAiPromptCache(new ManualClock());
    warm(cache, prompt(2000), "parent-key");
    expect(cache.plan("org", prompt(2000), "parent-key").cachedTokens).toBe(1920);
    expect(cache.plan("org", prompt(2000), "sibling-key").cachedTokens).toBe(0);
    expect(cache.plan("org", prompt(2000), undefined).cachedTokens).toBe(0);
    expect(cache.plan("other-org", prompt(2000), "parent-key").cachedTokens).toBe(0);
  });

  it("spills the 16th request of a minute for one prefix and key to a cold machine, and returns after the minute", () => {
    const clock = new ManualClock();
    const cache = new OpenAiPromptCache(clock);
    warm(cache, prompt(2000), "k");
    for (let i = 2; i <= 15; i++)
      expect(cache.plan("org", prompt(2000), "k").cachedTokens, `request ${i}`).toBe(1920);
    expect(cache.plan("org", prompt(2000), "k").cachedTokens).toBe(0);
    clock.advance(60_000);
    expect(cache.plan("org", prompt(2000), "k").cachedTokens).toBe(1920);
  });

  it("forgets an entry unused for 5 minutes; a read keeps it", () => {
    const clock = new ManualClock();
    const cache = new OpenAiPromptCache(clock);
    warm(cache, prompt(2000));
    clock.advance(OPENAI_IDLE_TTL_MS - 1);
    expect(warm(cache, prompt(2000)).cachedTokens).toBe(1920);
    clock.advance(OPENAI_IDLE_TTL_MS - 1);
    expect(cache.plan("org", prompt(2000), undefined).cachedTokens).toBe(1920);
    clock.advance(OPENAI_IDLE_TTL_MS);
    expect(cache.plan("org", prompt(2000), undefined).cachedTokens).toBe(0);
  });

  it("keeps an entry written under 24h retention past the idle and in-memory limits, until 24 hours", () => {
    const clock = new ManualClock();
    const cache = new OpenAiPromptCache(clock);
    cache.commit(cache.plan("org", prompt(2000), undefined, "24h"));
    clock.advance(OPENAI_MAX_TTL_MS + OPENAI_IDLE_TTL_MS);
    expect(cache.plan("org", prompt(2000), undefined).cachedTokens).toBeGreaterThan(1024);
    clock.set(OPENAI_EXTENDED_TTL_MS - 1);
    expect(cache.plan("org", prompt(2000), undefined).cachedTokens).toBeGreaterThan(1024);
    clock.set(OPENAI_EXTENDED_TTL_MS);
    expect(cache.plan("org", prompt(2000), undefined).cachedTokens).toBe(0);
  });

  it("extends an in-memory entry that a 24h request reads, from that read", () => {
    const clock = new ManualClock();
    const cache = new OpenAiPromptCache(clock);
    warm(cache, prompt(2000));
    clock.advance(OPENAI_IDLE_TTL_MS - 1);
    cache.commit(cache.plan("org", prompt(2000), undefined, "24h"));
    clock.advance(OPENAI_EXTENDED_TTL_MS - 1);
    expect(cache.plan("org", prompt(2000), undefined).cachedTokens).toBeGreaterThan(1024);
    clock.advance(1);
    expect(cache.plan("org", prompt(2000), undefined).cachedTokens).toBe(0);
  });

  it("gives each model the retention its SDK documents: only 24h from gpt-5.5 on, else the one asked, else in-memory", () => {
    expect(openAiRetentionOf("gpt-5", undefined)).toBe("in_memory");
    expect(openAiRetentionOf("gpt-5", "24h")).toBe("24h");
    expect(openAiRetentionOf("gpt-5.1-codex", "in_memory")).toBe("in_memory");
    expect(openAiRetentionOf("gpt-4.1", "24h")).toBe("24h");
    expect(openAiRetentionOf("gpt-5.4", null)).toBe("in_memory");
    expect(openAiRetentionOf("gpt-5.5", undefined)).toBe("24h");
    expect(openAiRetentionOf("gpt-5.5-pro", "in_memory")).toBe("24h");
    expect(openAiRetentionOf("gpt-5.6", undefined)).toBe("24h");
    expect(openAiRetentionOf("gpt-6", undefined)).toBe("24h");
  });
});

/** A unit of `tokens` tokens less the newline that joins it to the one before (4 characters a token). */
const unit = (
  tokens: number,
  fill: string,
  options: { breakpoint?: boolean; userOrTool?: boolean } = {},
) => ({
  text: fill.repeat(tokens * 4 - 1),
  breakpoint: options.breakpoint === true,
  userOrTool: options.userOrTool === true,
});

/** A breakpoint-model prompt: a shared prefix ending at a breakpoint after `prefixTokens`, then `tail`. */
const marked = (prefixTokens: number, tail: string, mark = true) => [
  // One character of the prefix's tokens is the newline after the first unit: the prefix ends exactly
  // at `prefixTokens` tokens.
  { text: "p".repeat(prefixTokens * 4 - 4 - 1), breakpoint: false, userOrTool: false },
  { text: "q".repeat(3), breakpoint: mark, userOrTool: false },
  unit(200, tail, { userOrTool: true }),
];

function warmBreakpoints(cache: OpenAiPromptCache, units: ReturnType<typeof marked>, mode?: "explicit") {
  const plan = cache.planBreakpoints("org", units, "key", mode);
  cache.commit(plan);
  return plan;
}

describe("OpenAiPromptCache, GPT-5.6 on: breakpoints", () => {
  it("writes and reads a breakpoint's prefix from 1,024 tokens, none at 1,023", () => {
    const cache = new OpenAiPromptCache(new ManualClock());
    const at = warmBreakpoints(cache, marked(1024, "a"), "explicit");
    expect(at.writtenTokens).toBe(1024);
    const read = cache.planBreakpoints("org", marked(1024, "b"), "key", "explicit");
    expect(read.cachedTokens).toBe(1024);
    expect(read.writtenTokens).toBe(0);
    const below = warmBreakpoints(cache, marked(1023, "c"), "explicit");
    expect(below.writtenTokens).toBe(0);
    expect(cache.planBreakpoints("org", marked(1023, "d"), "key", "explicit").cachedTokens).toBe(0);
  });

  it("reads exactly at the breakpoint, not rounded to 128-token steps, and only where one was written", () => {
    const cache = new OpenAiPromptCache(new ManualClock());
    warmBreakpoints(cache, marked(1500, "a"), "explicit");
    expect(cache.planBreakpoints("org", marked(1500, "b"), "key", "explicit").cachedTokens).toBe(1500);
    // The same bytes with no breakpoint of its own: nothing is read, nothing written (explicit mode).
    const unmarked = cache.planBreakpoints("org", marked(1500, "b", false), "key", "explicit");
    expect(unmarked).toMatchObject({ cachedTokens: 0, writtenTokens: 0, writes: [] });
    // Another key routes elsewhere: a miss.
    expect(cache.planBreakpoints("org", marked(1500, "b"), "other", "explicit").cachedTokens).toBe(0);
  });

  it("places the implicit breakpoint at the latest user or tool message, and bills the write past what was read", () => {
    const cache = new OpenAiPromptCache(new ManualClock());
    const parent = marked(2000, "a", false);
    const first = warmBreakpoints(cache, parent);
    // Implicit: the whole prompt (its last unit is the user message) is written, nothing read.
    expect(first.writtenTokens).toBe(first.promptTokens);
    // A child that adds a message: its implicit breakpoint is at its own end; the parent's entry is not
    // among its breakpoints, so it misses, unless it marks the parent's last message.
    const child = (mark: boolean) => [
      ...parent.slice(0, 2),
      { ...parent[2]!, breakpoint: mark },
      unit(100, "z", { userOrTool: true }),
    ];
    const miss = cache.planBreakpoints("org", child(false), "key");
    expect(miss.cachedTokens).toBe(0);
    const hit = cache.planBreakpoints("org", child(true), "key");
    expect(hit.cachedTokens).toBe(first.promptTokens);
    expect(hit.writtenTokens).toBe(hit.promptTokens - first.promptTokens);
  });

  it("writes the latest four explicit breakpoints (three beside the implicit one)", () => {
    const cache = new OpenAiPromptCache(new ManualClock());
    const units = [0, 1, 2, 3, 4].map((i) => unit(1100, String(i), { breakpoint: true }));
    units.push(unit(10, "u", { userOrTool: true }));
    const implicit = cache.planBreakpoints("org", units, "key");
    expect(implicit.writes).toHaveLength(4);
    const explicit = cache.planBreakpoints("org", units, "key", "explicit");
    expect(explicit.writes).toHaveLength(4);
    cache.commit(explicit);
    // The first breakpoint was not written: a prompt that shares only it misses.
    const first = [units[0]!, unit(10, "v", { userOrTool: true })];
    expect(cache.planBreakpoints("org", first, "key", "explicit").cachedTokens).toBe(0);
    const second = [units[0]!, units[1]!, unit(10, "v", { userOrTool: true })];
    expect(cache.planBreakpoints("org", second, "key", "explicit").cachedTokens).toBe(2200);
  });

  it("keeps an entry 30 minutes from its write; a read does not extend it", () => {
    const clock = new ManualClock();
    const cache = new OpenAiPromptCache(clock);
    warmBreakpoints(cache, marked(1500, "a"), "explicit");
    clock.advance(OPENAI_BREAKPOINT_TTL_MS - 1);
    cache.commit(cache.planBreakpoints("org", marked(1500, "b"), "key", "explicit"));
    expect(cache.planBreakpoints("org", marked(1500, "c"), "key", "explicit").cachedTokens).toBe(1500);
    clock.advance(1);
    expect(cache.planBreakpoints("org", marked(1500, "d"), "key", "explicit").cachedTokens).toBe(0);
  });
});

describe("OpenAiPromptCache: elements keyed on their text (values JavaScript cannot keep)", () => {
  const mark = (at: number, identity: string) => [{ at, identity }];

  it("keys every step that ends past a marked element's start on its identity, and no earlier one", () => {
    const cache = new OpenAiPromptCache(new ManualClock());
    warm(cache, prompt(2000));
    // 4,608 characters: 9 steps end at or before it.
    expect(cache.plan("org", prompt(2000), undefined, "in_memory", mark(4608, "a")).cachedTokens).toBe(1152);
    expect(cache.plan("org", prompt(2000), undefined, "in_memory", mark(4607, "a")).cachedTokens).toBe(1024);
    cache.commit(cache.plan("org", prompt(2000), undefined, "in_memory", mark(4608, "a")));
    expect(cache.plan("org", prompt(2000), undefined, "in_memory", mark(4608, "a")).cachedTokens).toBe(1920);
    expect(cache.plan("org", prompt(2000), undefined, "in_memory", mark(4608, "b")).cachedTokens).toBe(1152);
    expect(cache.plan("org", prompt(2000), undefined).cachedTokens).toBe(1920);
  });

  it("routes by the identities of the elements that begin within the first 256 tokens", () => {
    const cache = new OpenAiPromptCache(new ManualClock());
    const machine = (marks: { at: number; identity: string }[]) =>
      cache.plan("org", prompt(2000), "k", "in_memory", marks).machine;
    const bare = machine([]);
    expect(machine(mark(1024, "a"))).toBe(bare);
    expect(machine(mark(1023, "a"))).not.toBe(bare);
    expect(machine(mark(0, "a"))).toBe(machine(mark(1023, "a")));
    expect(machine(mark(0, "b"))).not.toBe(machine(mark(0, "a")));
  });

  it("keys a breakpoint on the identities of the units up to it", () => {
    const cache = new OpenAiPromptCache(new ManualClock());
    warmBreakpoints(cache, marked(1500, "a"), "explicit");
    const [head, bp, tail] = marked(1500, "b");
    const read = (units: OpenAiPromptUnit[]) =>
      cache.planBreakpoints("org", units, "key", "explicit").cachedTokens;
    // After the breakpoint: its prefix still reads.
    expect(read([head!, bp!, { ...tail!, identity: "x" }])).toBe(1500);
    // At or before it: not the parent's prefix.
    expect(read([head!, { ...bp!, identity: "x" }, tail!])).toBe(0);
    cache.commit(cache.planBreakpoints("org", [{ ...head!, identity: "x" }, bp!, tail!], "key", "explicit"));
    expect(read([{ ...head!, identity: "x" }, bp!, tail!])).toBe(1500);
    expect(read([{ ...head!, identity: "y" }, bp!, tail!])).toBe(0);
  });
});
