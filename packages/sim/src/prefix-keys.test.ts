import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { prefixKeys } from "./cache.js";
import { layoutPrompt } from "./prompt.js";
import type { MessagesRequest } from "./types.js";

// The key of every position, hashed block by block with one update per piece: what prefixKeys
// computed before it joined the pieces between two positions. Its digests must not change, or every
// prompt cached before an upgrade would miss after it.
function referenceKeys(request: MessagesRequest, scope: string, positions: ReadonlySet<number>) {
  const layout = layoutPrompt(request);
  const keys = new Map<number, string>();
  const h = createHash("sha256");
  h.update(`${scope}\u0000${layout.model}\u0000`);
  for (let i = 0; i <= Math.max(...positions); i++) {
    const b = layout.blocks[i]!;
    if (i === layout.firstMessageBlock) h.update(`\u0004${layout.messagesContext}`);
    h.update(`\u0001${b.segment}|${b.header}\u0002${b.content.length}\u0003`);
    h.update(b.content);
    if (positions.has(i)) keys.set(i, h.copy().digest("base64url"));
  }
  return keys;
}

// Texts whose UTF-8 would change if two pieces were joined where a surrogate pair could form, or
// whose multi-byte characters sit at a piece's edge.
const EDGY_TEXTS = [
  "\ud83d",
  "\ude00 tail",
  "é",
  "😀",
  "\ud800\ud800",
  "plain",
  "\u0000\u0001\u0003",
  "z\udfff",
];

function request(): MessagesRequest {
  return {
    model: "claude-sonnet-4-6",
    max_tokens: 64,
    tools: [{ name: "Read\ud83d", description: "\ude00", input_schema: { type: "object" } }],
    system: [{ type: "text", text: "system é\ud83d" }],
    tool_choice: { type: "auto" },
    messages: EDGY_TEXTS.map((text, i) => ({
      role: i % 2 === 0 ? ("user" as const) : ("assistant" as const),
      content: [
        { type: "text" as const, text },
        { type: "text" as const, text: `${text}${i}` },
      ],
    })),
  } as MessagesRequest;
}

describe("prefixKeys", () => {
  const layout = layoutPrompt(request());
  const all = new Set(layout.blocks.map((_, i) => i));

  it("gives every position the digest of hashing its blocks one piece at a time", () => {
    const keys = prefixKeys(layout, "scope-a", all);
    expect(keys.size).toBe(layout.blocks.length);
    expect(keys).toEqual(referenceKeys(request(), "scope-a", all));
  });

  it("gives the same digests when only some positions are asked for, sparse or adjacent", () => {
    const last = layout.blocks.length - 1;
    for (const positions of [
      new Set([last]),
      new Set([0, last]),
      new Set([2, 3, 4, last - 1]),
      new Set([5]),
    ]) {
      expect(prefixKeys(layout, "scope-a", positions)).toEqual(
        referenceKeys(request(), "scope-a", positions),
      );
    }
  });

  it("keys each position by everything before it: scope, model, tools, system and messages", () => {
    const keys = prefixKeys(layout, "scope-a", all);
    expect(new Set(keys.values()).size).toBe(layout.blocks.length);
    const otherScope = prefixKeys(layout, "scope-b", all);
    for (const [i, key] of keys) expect(otherScope.get(i)).not.toBe(key);
  });

  it("returns no key when no position is asked for", () => {
    expect(prefixKeys(layout, "scope-a", new Set()).size).toBe(0);
  });
});
