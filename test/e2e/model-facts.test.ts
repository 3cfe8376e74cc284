// Core's cache-break detector and the simulator's cache must agree on the smallest prompt each
// model caches: below it the simulator writes nothing, and core must not call that a cache break.
import { detectCacheBreak } from "@forkd/core";
import { minCacheableTokens as simMinimum } from "@forkd/sim";
import { describe, expect, it } from "vitest";

const MODELS = [
  "claude-opus-5-5",
  "claude-opus-5",
  "claude-fable-5-2",
  "claude-mythos-preview",
  "claude-opus-4-8",
  "claude-opus-4-7",
  "claude-opus-4-6",
  "claude-opus-4-5-20251101",
  "claude-sonnet-5-5",
  "claude-sonnet-4-6",
  "claude-haiku-4-5",
  "claude-3-5-haiku-latest",
  "some-unknown-model",
];

const layers = { model: "m", tools: "t", system: "s", messages: "x" };
/** A first turn that read nothing from the cache, with a prompt of `tokens`. */
const missed = (model: string, tokens: number) =>
  detectCacheBreak(
    1,
    model,
    { input_tokens: tokens, output_tokens: 1, cache_read_input_tokens: 0 },
    {
      prefixLayers: layers,
    },
  );

describe("the minimum cacheable prompt", () => {
  it.each(MODELS)("of %s is the same in core's detector and the simulator's cache", (model) => {
    const minimum = simMinimum(model);
    expect(missed(model, minimum - 1)).toBeNull();
    expect(missed(model, minimum)).toMatchObject({ type: "cache.break", prompt_tokens: minimum });
  });
});
