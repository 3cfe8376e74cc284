// Core's cache-break detector and the simulator's cache must agree on the smallest prompt each
// model caches: below it the simulator writes nothing, and core must not call that a cache break.
// Measured on a running simulator, at each model's exact boundary.
import { detectCacheBreak } from "@forkd/core";
import { minCacheableTokens } from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** One model of each minimum the facts table knows, and one it does not know. */
const MODELS = [
  "claude-opus-5-5",
  "claude-sonnet-4-6",
  "claude-opus-4-7",
  "claude-opus-4-6",
  "some-unknown-model",
];

let sim: Sim;
beforeAll(async () => {
  sim = await startSim();
});
afterAll(() => sim.close());

async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${sim.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "facts" },
    body: JSON.stringify(body),
  });
  return (await response.json()) as Record<string, unknown>;
}

const request = (model: string, characters: number, tag: string) => ({
  model,
  max_tokens: 10,
  messages: [
    {
      role: "user",
      content: [
        { type: "text", text: `${tag}${"x".repeat(characters)}`, cache_control: { type: "ephemeral" } },
      ],
    },
  ],
});

/** What the simulator writes to its cache for a prefix (everything up to the breakpoint) of `tokens`. */
async function cacheWriteAt(model: string, tokens: number): Promise<number> {
  // The simulator's count of a one-block prompt of four characters (one token), minus that token and
  // the request's never-cached closing tokens, is the framing the prefix carries besides the text.
  const probe = (await post("/v1/messages/count_tokens", request(model, 0, "abcd"))).input_tokens as number;
  const closing = 3;
  const framing = probe - 1 - closing;
  const tag = `${model}-${tokens}-`.padEnd(64, "-");
  const text = (tokens - framing - tag.length / 4) * 4;
  const reply = await post("/v1/messages", request(model, text, tag));
  const usage = reply.usage as { cache_creation_input_tokens: number; input_tokens: number };
  expect(usage.input_tokens + usage.cache_creation_input_tokens).toBe(tokens + closing);
  return usage.cache_creation_input_tokens;
}

const layers = { model: "m", tools: "t", system: "s", messages: "x" };
/** Core's verdict on a first turn that read nothing from the cache, with a prompt of `tokens`. */
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
  it.each(MODELS)(
    "of %s is where the simulator starts caching and core starts reporting misses",
    async (model) => {
      const minimum = minCacheableTokens(model);
      expect(await cacheWriteAt(model, minimum - 1)).toBe(0);
      expect(await cacheWriteAt(model, minimum)).toBe(minimum);
      expect(missed(model, minimum - 1)).toBeNull();
      expect(missed(model, minimum)).toMatchObject({ type: "cache.break", prompt_tokens: minimum });
    },
  );
});
