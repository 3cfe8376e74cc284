import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { CacheSafeParams } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { CACHE_LAYERS, canonicalCacheJson, computeCacheKey, firstChangedLayer } from "./cache-key.js";
import { snapshotCacheSafeParams } from "./cache-safe-params.js";
import { InvalidPrefixError } from "./errors.js";
import { FIXTURE_NAMES, loadFixture } from "./test-support/fixtures.js";

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const printScript = fileURLToPath(new URL("./test-support/print-cache-key.ts", import.meta.url));

function params48k(): CacheSafeParams {
  return snapshotCacheSafeParams(loadFixture("48k").request);
}

describe("computeCacheKey", () => {
  it("is a SHA-256 over the layers, the same for the same params", () => {
    const key = computeCacheKey(params48k());
    expect(key.hash).toMatch(/^[0-9a-f]{64}$/);
    for (const layer of CACHE_LAYERS) expect(key.layers[layer]).toMatch(/^[0-9a-f]{64}$/);
    expect(computeCacheKey(params48k())).toEqual(key);
  });

  it("is the same in two other Node processes", async () => {
    const expected = computeCacheKey(params48k());
    const args = ["--conditions=@forkd/source", "--import", "tsx", printScript, "48k"];
    const [first, second] = await Promise.all([
      run("node", args, { cwd: repoRoot }),
      run("node", args, { cwd: repoRoot }),
    ]);
    expect(JSON.parse(first.stdout)).toEqual(expected);
    expect(JSON.parse(second.stdout)).toEqual(expected);
  }, 30_000);

  it("ignores sampling and transport parameters", () => {
    const base = params48k();
    const hash = computeCacheKey(base).hash;
    for (const change of [
      { temperature: 0.2 },
      { temperature: 1 },
      { max_tokens: 5 },
      { top_p: 0.5 },
      { top_k: 3 },
      { stop_sequences: ["x"] },
      { metadata: { user_id: "u" } },
      { stream: true },
    ]) {
      expect(computeCacheKey({ ...base, ...change } as CacheSafeParams).hash).toBe(hash);
    }
  });

  it("ignores cache_control markers wherever they move", () => {
    const base = params48k();
    const moved = structuredClone(base);
    for (const tool of moved.tools ?? []) delete (tool as Record<string, unknown>).cache_control;
    const lastMessage = moved.messages.at(-1)!;
    for (const block of lastMessage.content as Record<string, unknown>[]) delete block.cache_control;
    (moved.messages[3]!.content as Record<string, unknown>[])[0]!.cache_control = {
      type: "ephemeral",
      ttl: "1h",
    };
    expect(computeCacheKey(moved)).toEqual(computeCacheKey(base));
  });

  it("names the layer each change touches", () => {
    const base = params48k();
    const key = computeCacheKey(base);
    const changed = (params: CacheSafeParams) =>
      firstChangedLayer(key.layers, computeCacheKey(params).layers);
    expect(changed({ ...base })).toBe("none");
    expect(changed({ ...base, model: "claude-opus-4-5" })).toBe("model");
    expect(changed({ ...base, tools: [...(base.tools ?? [])].reverse() })).toBe("tools");
    expect(changed({ ...base, system: "another system prompt" })).toBe("system");
    expect(changed({ ...base, messages: base.messages.slice(0, -2) })).toBe("messages");
    expect(changed({ ...base, tool_choice: { type: "any" } })).toBe("messages");
    expect(changed({ ...base, thinking: { type: "enabled", budget_tokens: 2048 } })).toBe("messages");
  });

  it("sorts envelope keys but keeps the key order of tool inputs and schemas", () => {
    const block = (input: Record<string, unknown>, blockFirst: boolean) =>
      blockFirst
        ? { type: "tool_use", id: "t1", name: "Read", input }
        : { input, name: "Read", id: "t1", type: "tool_use" };
    const request = (content: unknown[]): CacheSafeParams => ({
      model: "m",
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: content as CacheSafeParams["messages"][number]["content"] },
      ],
    });
    const ab = { a: 1, b: 2 };
    const ba = { b: 2, a: 1 };
    expect(computeCacheKey(request([block(ab, true)])).hash).toBe(
      computeCacheKey(request([block(ab, false)])).hash,
    );
    expect(computeCacheKey(request([block(ab, true)])).hash).not.toBe(
      computeCacheKey(request([block(ba, true)])).hash,
    );
    const tool = (schema: Record<string, unknown>) => ({
      model: "m",
      messages: [],
      tools: [{ name: "T", input_schema: schema }],
    });
    expect(computeCacheKey(tool({ type: "object", properties: {} })).layers.tools).not.toBe(
      computeCacheKey(tool({ properties: {}, type: "object" })).layers.tools,
    );
  });

  it("keeps cache_control that is part of a tool's input", () => {
    const withInput = (input: unknown) =>
      computeCacheKey({
        model: "m",
        messages: [{ role: "assistant", content: [{ type: "tool_use", id: "t", name: "X", input }] }],
      }).hash;
    expect(withInput({ cache_control: 1 })).not.toBe(withInput({}));
  });

  it("hashes every fixture", () => {
    const hashes = FIXTURE_NAMES.map(
      (name) => computeCacheKey(snapshotCacheSafeParams(loadFixture(name).request)).hash,
    );
    expect(new Set(hashes).size).toBe(3);
  });
});

describe("canonicalCacheJson", () => {
  it("writes JSON that parses back to the same data, without markers", () => {
    const value = { z: [1, "two", null, true], a: { cache_control: { type: "ephemeral" }, text: "é\u2028" } };
    expect(JSON.parse(canonicalCacheJson(value))).toEqual({
      a: { text: "é\u2028" },
      z: [1, "two", null, true],
    });
    expect(canonicalCacheJson({ b: 1, a: undefined, c: [undefined] })).toBe('{"b":1,"c":[null]}');
  });

  it("refuses what JSON cannot carry", () => {
    expect(() => canonicalCacheJson({ n: Number.NaN })).toThrow(InvalidPrefixError);
    expect(() => canonicalCacheJson({ f: () => 1 })).toThrow(InvalidPrefixError);
    expect(() => canonicalCacheJson({ b: 1n })).toThrow(InvalidPrefixError);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => canonicalCacheJson(cycle)).toThrow(/cycle/);
  });

  it("accepts the same object twice when it is not a cycle", () => {
    const shared = { type: "text", text: "x" };
    expect(canonicalCacheJson([shared, shared])).toBe(
      '[{"text":"x","type":"text"},{"text":"x","type":"text"}]',
    );
  });

  it("says what JSON cannot carry, and where", () => {
    const refusal = (value: unknown) => {
      try {
        canonicalCacheJson(value);
      } catch (error) {
        if (error instanceof InvalidPrefixError) return { message: error.message, path: error.path };
        throw error;
      }
      throw new Error("nothing was thrown");
    };
    expect(refusal({ messages: [{ n: 1 }, { n: Number.POSITIVE_INFINITY }] })).toEqual({
      message: "Infinity is not a JSON number",
      path: ["messages", 1, "n"],
    });
    expect(refusal({ tools: [() => 1] })).toEqual({
      message: "a function cannot be part of a request",
      path: ["tools", 0],
    });
    const cycle: Record<string, unknown> = {};
    cycle.inner = { back: cycle };
    expect(refusal({ system: cycle })).toEqual({
      message: "the request contains a cycle",
      path: ["system", "inner", "back"],
    });
  });

  it("sorts many keys in code-unit order, whatever order they come in", () => {
    const keys = Array.from({ length: 40 }, (_, i) => `k${String((i * 17) % 40).padStart(2, "0")}`);
    const shuffled = Object.fromEntries([...keys, "B", "a", "_"].map((key) => [key, 0]));
    const sorted = [...keys, "B", "a", "_"].sort();
    expect(Object.keys(JSON.parse(canonicalCacheJson(shuffled)))).toEqual(sorted);
    expect(canonicalCacheJson({ a: 1, c: 3, b: 2 })).toBe('{"a":1,"b":2,"c":3}');
    expect(canonicalCacheJson({ on: true, off: false, none: null })).toBe(
      '{"none":null,"off":false,"on":true}',
    );
  });
});

describe("computeCacheKey with betas", () => {
  it("keeps the model in its layer beside the betas", () => {
    const betas = ["context-management-2025-06-27"];
    const sonnet = computeCacheKey({ ...params48k(), model: "claude-sonnet-4-5" }, betas);
    const opus = computeCacheKey({ ...params48k(), model: "claude-opus-4-5" }, betas);
    expect(firstChangedLayer(sonnet.layers, opus.layers)).toBe("model");
  });
});
