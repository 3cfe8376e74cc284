// A prefix is stored under the SHA-256 of its exact bytes, and comes back byte for byte: the
// provider's cache is keyed on exact bytes, so key order and every unknown field must survive.
import { createHash } from "node:crypto";
import { createForkPrefix } from "@forkd/core";
import { forkPrefixCodec } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { encodeStoredPrefix } from "./prefix-store.js";

const request = {
  model: "claude-sonnet-4-6",
  max_tokens: 1024,
  zeta_field_from_next_month: { b: 1, a: 2 },
  system: [{ type: "text", text: "You are a coding agent." }],
  messages: [{ role: "user", content: "Look at the tests." }],
};
const reply = { role: "assistant", content: [{ type: "text", text: "On it." }] };

describe("encodeStoredPrefix", () => {
  it("names the bytes by their SHA-256 and size", () => {
    const { bytes, ref } = encodeStoredPrefix(createForkPrefix(request, reply));
    expect(ref.hash).toBe(createHash("sha256").update(bytes).digest("hex"));
    expect(ref.size).toBe(bytes.byteLength);
  });

  it("gives one parent turn one name, and another turn another", () => {
    const first = encodeStoredPrefix(createForkPrefix(request, reply)).ref;
    expect(encodeStoredPrefix(createForkPrefix(structuredClone(request), reply)).ref).toEqual(first);
    const next = { ...request, messages: [...request.messages, { role: "user", content: "And the docs." }] };
    expect(encodeStoredPrefix(createForkPrefix(next, reply)).ref.hash).not.toBe(first.hash);
  });

  it("round-trips the parent's request byte for byte, key order and unknown fields included", () => {
    const prefix = createForkPrefix(request, reply);
    const { bytes } = encodeStoredPrefix(prefix);
    const decoded = forkPrefixCodec.decode(bytes);
    expect(JSON.stringify(decoded.params)).toBe(JSON.stringify(prefix.params));
    expect(Object.keys(decoded.params)).toEqual(Object.keys(request));
    expect(encodeStoredPrefix(decoded).bytes).toEqual(bytes);
  });
});
