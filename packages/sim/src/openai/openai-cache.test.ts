// OpenAI's caching rules as the simulator applies them: nothing below 1,024 tokens, hits in 128-token
// steps of the longest cached prefix, readable only once the writing response began, one machine per
// scope + prompt start + prompt_cache_key, spill past 15 requests a minute, 5 minutes idle at most
// (in-memory retention) or 24 hours (extended), the retention each model gets.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../clock.js";
import {
  OPENAI_EXTENDED_TTL_MS,
  OPENAI_IDLE_TTL_MS,
  OPENAI_MAX_TTL_MS,
  OpenAiPromptCache,
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
