import { createHash } from "node:crypto";
import type { CacheSafeParams, MessageParam } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import {
  DIAGNOSIS_LAYERS,
  diagnosisLayersOf,
  firstDifferingLayer,
  inheritedMessages,
} from "./cache-diagnosis.js";
import { CACHE_KEY_VERSION, computeCacheKey } from "./cache-key.js";
import { snapshotCacheSafeParams } from "./cache-safe-params.js";
import { prepareForkRun } from "./fork-run-plan.js";
import { loadFixture } from "./test-support/fixtures.js";

function parent(): CacheSafeParams {
  return {
    model: "claude-sonnet-4-6",
    max_tokens: 1000,
    tools: [{ name: "read", description: "reads", input_schema: { type: "object" } }],
    system: [{ type: "text", text: "You are careful." }],
    messages: [
      { role: "user", content: "first" },
      { role: "assistant", content: [{ type: "text", text: "ok" }] },
      { role: "user", content: [{ type: "text", text: "second" }] },
    ],
  };
}

describe("diagnosisLayersOf", () => {
  it("hashes every layer as 64 hex digits, the same for the same request", () => {
    const layers = diagnosisLayersOf(parent(), ["b1"]);
    expect(Object.keys(layers)).toEqual([...DIAGNOSIS_LAYERS]);
    for (const layer of DIAGNOSIS_LAYERS) expect(layers[layer]).toMatch(/^[0-9a-f]{64}$/);
    expect(diagnosisLayersOf(parent(), ["b1"])).toEqual(layers);
    // Five different values: no two layers hash alike.
    expect(new Set(Object.values(layers)).size).toBe(5);
  });

  it("hashes each layer's name with the hashes of its canonical values, after the versioned tag", () => {
    const sha = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
    const layer = (name: string, ...values: string[]) =>
      sha(`${CACHE_KEY_VERSION}/diagnosis\n${name}\n${values.map(sha).join("\n")}`);
    const layers = diagnosisLayersOf({ model: "m", messages: [{ role: "user", content: "hi" }] }, ["b1"]);
    expect(layers.betas).toBe(layer("betas", '["b1"]'));
    expect(layers.model).toBe(layer("model", '"m"'));
    expect(layers.tools).toBe(layer("tools", "null"));
    expect(layers.system).toBe(layer("system", "null"));
    expect(layers.messages).toBe(
      layer(
        "messages",
        '{"thinking":null,"tool_choice":null}',
        '{"content":[{"text":"hi","type":"text"}],"role":"user"}',
      ),
    );
  });

  it("gives a message the same hash the first time and the next (it is remembered), and a cut last message its cut hash", () => {
    const p = parent();
    const first = diagnosisLayersOf(p);
    expect(diagnosisLayersOf(p)).toEqual(first);
    const grown: MessageParam = {
      role: "user",
      content: [
        { type: "text", text: "second" },
        { type: "text", text: "directive" },
      ],
    };
    const child = { ...p, messages: [p.messages[0]!, p.messages[1]!, grown] };
    expect(diagnosisLayersOf(child, [], p.messages)).toEqual(first);
    // The grown message whole is another value: a later hash of it is not the cut one.
    expect(diagnosisLayersOf(child).messages).not.toBe(first.messages);
  });

  it("sees one thinking configuration change into another", () => {
    const a = diagnosisLayersOf({ ...parent(), thinking: { type: "enabled", budget_tokens: 2000 } });
    const b = diagnosisLayersOf({ ...parent(), thinking: { type: "enabled", budget_tokens: 4000 } });
    expect(firstDifferingLayer(a, b)).toBe("messages");
  });

  it("differs from the cache key's hashes (its own version tag)", () => {
    const key = computeCacheKey(parent()).layers;
    expect(diagnosisLayersOf(parent()).tools).not.toBe(key.tools);
  });

  it("changes only the layer that changed, each at its boundary", () => {
    const base = diagnosisLayersOf(parent(), ["b1"]);
    const changes: [string, CacheSafeParams, string[]][] = [
      ["model", { ...parent(), model: "claude-opus-4-6" }, ["b1"]],
      ["betas", parent(), ["b1", "b2"]],
      [
        "tools",
        { ...parent(), tools: [{ name: "read", description: "reads!", input_schema: { type: "object" } }] },
        ["b1"],
      ],
      ["system", { ...parent(), system: [{ type: "text", text: "You are careful!" }] }, ["b1"]],
      ["messages", { ...parent(), tool_choice: { type: "any" } }, ["b1"]],
      ["messages", { ...parent(), thinking: { type: "enabled", budget_tokens: 2000 } }, ["b1"]],
    ];
    for (const [layer, params, betas] of changes) {
      const changed = diagnosisLayersOf(params, betas);
      const differing = DIAGNOSIS_LAYERS.filter((l) => changed[l] !== base[l]);
      expect(differing, layer).toEqual([layer]);
      expect(firstDifferingLayer(base, changed)).toBe(layer);
    }
  });

  it("treats absent betas as an empty list, and absent tools and system as none", () => {
    expect(diagnosisLayersOf(parent())).toEqual(diagnosisLayersOf(parent(), []));
    const bare = diagnosisLayersOf({ model: "m", messages: [] });
    expect(bare.tools).toBe(diagnosisLayersOf({ model: "m", messages: [], tools: null as never }).tools);
    expect(bare.tools).not.toBe(diagnosisLayersOf({ model: "m", messages: [], tools: [] as never }).tools);
  });

  it("ignores cache_control markers and the message a child appended after the parent's", () => {
    const p = parent();
    const child: CacheSafeParams = {
      ...p,
      messages: [
        p.messages[0]!,
        p.messages[1]!,
        {
          role: "user",
          content: [
            { type: "text", text: "second", cache_control: { type: "ephemeral" } },
            { type: "text", text: "the child's directive" },
          ],
        },
        { role: "assistant", content: "more" },
      ],
    };
    expect(diagnosisLayersOf(child, [], p.messages)).toEqual(diagnosisLayersOf(p));
    // Without the parent's shape the whole conversation counts.
    expect(diagnosisLayersOf(child).messages).not.toBe(diagnosisLayersOf(p).messages);
  });

  it("sees a change in an inherited message, the first one and the last block included", () => {
    const p = parent();
    const base = diagnosisLayersOf(p);
    const edits: MessageParam[][] = [
      [{ role: "user", content: "first!" }, p.messages[1]!, p.messages[2]!],
      [p.messages[0]!, p.messages[1]!, { role: "user", content: [{ type: "text", text: "second!" }] }],
      [p.messages[0]!, { role: "user", content: [{ type: "text", text: "ok" }] }, p.messages[2]!],
    ];
    for (const messages of edits) {
      const child = diagnosisLayersOf(
        { ...p, messages: [...messages, { role: "assistant", content: "x" }] },
        [],
        p.messages,
      );
      expect(firstDifferingLayer(base, child)).toBe("messages");
    }
  });
});

describe("inheritedMessages", () => {
  it("reads a string content as one text block, and an empty string as none", () => {
    expect(inheritedMessages([{ role: "user", content: "hi" }])).toEqual([
      { role: "user", content: [{ type: "text", text: "hi" }] },
    ]);
    expect(inheritedMessages([{ role: "user", content: "" }])).toEqual([{ role: "user", content: [] }]);
  });

  it("cuts to the parent's count and the parent's last message's blocks", () => {
    const messages: MessageParam[] = [
      { role: "user", content: "a" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "b" },
          { type: "text", text: "c" },
        ],
      },
      { role: "user", content: "d" },
    ];
    const shape: MessageParam[] = [
      { role: "user", content: "a" },
      { role: "assistant", content: [{ type: "text", text: "b" }] },
    ];
    expect(inheritedMessages(messages, shape)).toEqual([
      { role: "user", content: [{ type: "text", text: "a" }] },
      { role: "assistant", content: [{ type: "text", text: "b" }] },
    ]);
    // A child shorter than its parent keeps what it has.
    expect(inheritedMessages(messages.slice(0, 1), shape)).toEqual([
      { role: "user", content: [{ type: "text", text: "a" }] },
    ]);
    expect(inheritedMessages([], shape)).toEqual([]);
  });
});

describe("firstDifferingLayer", () => {
  const a = { model: "m", betas: "b", tools: "t", system: "s", messages: "x" };
  it("names the outermost differing layer, in model, betas, tools, system, messages order", () => {
    expect(firstDifferingLayer(a, { ...a })).toBe("none");
    expect(firstDifferingLayer(a, { ...a, messages: "y", system: "z" })).toBe("system");
    expect(firstDifferingLayer(a, { ...a, messages: "y", tools: "z" })).toBe("tools");
    expect(firstDifferingLayer(a, { ...a, tools: "z", betas: "c" })).toBe("betas");
    expect(firstDifferingLayer(a, { ...a, betas: "c", model: "n" })).toBe("model");
    expect(firstDifferingLayer(a, { ...a, messages: "y" })).toBe("messages");
  });

  it("compares a cache key's layers, which have no betas", () => {
    const { betas: _, ...key } = a;
    expect(firstDifferingLayer(key, { ...key })).toBe("none");
    expect(firstDifferingLayer(key, { ...key, system: "z" })).toBe("system");
  });
});

describe("a fork run's cache check", () => {
  const turn = loadFixture("48k");
  const prefix = {
    params: snapshotCacheSafeParams(turn.request),
    reply: turn.response,
  };

  it("finds every layer of a child equal to its parent's, and only the model of a model override", () => {
    const same = prepareForkRun({ runId: "r1", prefix, cacheShared: true, directive: "go" });
    expect(firstDifferingLayer(same.cacheCheck!.parentLayers!, same.cacheCheck!.prefixLayers)).toBe("none");
    // Hashed once, on first reading.
    expect(same.cacheCheck!.parentLayers).toBe(same.cacheCheck!.parentLayers);
    expect(same.cacheCheck!.prefixLayers).toBe(same.cacheCheck!.prefixLayers);
    const other = prepareForkRun({
      runId: "r2",
      prefix,
      cacheShared: true,
      directive: "go",
      overrides: { model: "claude-opus-4-6" },
    });
    expect(firstDifferingLayer(other.cacheCheck!.parentLayers!, other.cacheCheck!.prefixLayers)).toBe(
      "model",
    );
  });

  it("takes the parent's cached tokens from a reply that carries the provider's usage", () => {
    expect(
      prepareForkRun({ runId: "r0", prefix, cacheShared: true, directive: "go" }).cacheCheck,
    ).not.toHaveProperty("parentCachedTokens");
    const reply = {
      ...turn.response,
      id: "msg_parent",
      usage: {
        input_tokens: 3,
        cache_read_input_tokens: 40_000,
        cache_creation_input_tokens: 8_000,
        output_tokens: 9,
      },
    };
    const plan = prepareForkRun({
      runId: "r1",
      prefix: { ...prefix, reply },
      cacheShared: true,
      directive: "go",
    });
    expect(plan.cacheCheck?.parentCachedTokens).toBe(48_000);
    const written = {
      ...reply,
      usage: { input_tokens: 3, cache_creation_input_tokens: 8_000, output_tokens: 9 },
    };
    expect(
      prepareForkRun({
        runId: "r2",
        prefix: { ...prefix, reply: written },
        cacheShared: true,
        directive: "go",
      }).cacheCheck?.parentCachedTokens,
    ).toBe(8_000);
    const read = { ...reply, usage: { input_tokens: 3, cache_read_input_tokens: 40_000, output_tokens: 9 } };
    expect(
      prepareForkRun({ runId: "r4", prefix: { ...prefix, reply: read }, cacheShared: true, directive: "go" })
        .cacheCheck?.parentCachedTokens,
    ).toBe(40_000);
    for (const other of [{ ...prefix, reply: { ...reply, usage: null } }, { params: prefix.params }]) {
      const plan = prepareForkRun({ runId: "r5", prefix: other, cacheShared: true, directive: "go" });
      expect(plan.cacheCheck).not.toHaveProperty("parentCachedTokens");
    }
    const nothing = { ...reply, usage: { input_tokens: 3, output_tokens: 9 } };
    expect(
      prepareForkRun({
        runId: "r3",
        prefix: { ...prefix, reply: nothing },
        cacheShared: true,
        directive: "go",
      }).cacheCheck,
    ).not.toHaveProperty("parentCachedTokens");
  });

  it("asks the provider to compare with the parent's reply only when the parent opted in", () => {
    const reply = { ...turn.response, id: "msg_parent" };
    const plain = prepareForkRun({
      runId: "r1",
      prefix: { ...prefix, reply },
      cacheShared: true,
      directive: "go",
    });
    expect(plain.request).not.toHaveProperty("diagnostics");
    const params = { ...prefix.params, diagnostics: { previous_message_id: "msg_older" } } as CacheSafeParams;
    const opted = prepareForkRun({
      runId: "r2",
      prefix: { ...prefix, params, reply },
      cacheShared: true,
      directive: "go",
    });
    expect((opted.request as { diagnostics?: unknown }).diagnostics).toEqual({
      previous_message_id: "msg_parent",
    });
    // No reply id: opted in, with nothing to compare.
    const anonymous = prepareForkRun({
      runId: "r3",
      prefix: { ...prefix, params },
      cacheShared: true,
      directive: "go",
    });
    expect((anonymous.request as { diagnostics?: unknown }).diagnostics).toEqual({
      previous_message_id: null,
    });
    // A fork taken after a user turn has no reply at all.
    const afterUser = prepareForkRun({ runId: "r4", prefix: { params }, cacheShared: true, directive: "go" });
    expect((afterUser.request as { diagnostics?: unknown }).diagnostics).toEqual({
      previous_message_id: null,
    });
    // The parent's own object is not touched.
    expect(params).toMatchObject({ diagnostics: { previous_message_id: "msg_older" } });
  });
});
