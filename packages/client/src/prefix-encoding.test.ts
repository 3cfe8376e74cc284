// A prefix is stored under the SHA-256 of its exact bytes, and comes back byte for byte: the
// provider's cache is keyed on exact bytes, so key order and every unknown field must survive.
import { createHash } from "node:crypto";
import { createForkPrefix } from "@forkd/core";
import { forkPrefixCodec } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { ClientError } from "./errors.js";
import { encodeStoredPrefix, StoredPrefixReader } from "./prefix-encoding.js";

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

describe("StoredPrefixReader", () => {
  const { bytes, ref } = encodeStoredPrefix(createForkPrefix(request, reply));
  const invalid = (run: () => unknown, message: string) => {
    let thrown: unknown;
    try {
      run();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ClientError);
    expect((thrown as ClientError).code).toBe("prefix_invalid");
    expect((thrown as ClientError).message).toBe(message);
  };
  const read = (chunks: Uint8Array[], maxBytes?: number) => {
    const reader = new StoredPrefixReader(ref, maxBytes);
    reader.checkStoredSize(ref.size);
    for (const chunk of chunks) reader.push(chunk);
    return reader.finish();
  };

  it("reads the prefix back from its chunks, however they are cut", () => {
    const prefix = createForkPrefix(request, reply);
    for (const cut of [0, 1, 100, bytes.byteLength - 1]) {
      const decoded = read([bytes.subarray(0, cut), bytes.subarray(cut)]);
      expect(JSON.stringify(decoded)).toBe(JSON.stringify(prefix));
    }
    // A reference of exactly the largest size accepted is read.
    expect(JSON.stringify(read([bytes], ref.size))).toBe(JSON.stringify(prefix));
  });

  it("refuses a reference larger than it may read, before reading", () => {
    invalid(
      () => new StoredPrefixReader(ref, ref.size - 1),
      `prefix ${ref.hash} announces ${ref.size} bytes; at most ${ref.size - 1} are read`,
    );
    invalid(
      () => new StoredPrefixReader({ hash: "h", size: 64 * 1024 * 1024 + 1 }),
      `prefix h announces ${64 * 1024 * 1024 + 1} bytes; at most ${64 * 1024 * 1024} are read`,
    );
  });

  it("refuses an object stored with another size than its reference announces", () => {
    const reader = new StoredPrefixReader(ref);
    invalid(
      () => reader.checkStoredSize(ref.size + 1),
      `prefix ${ref.hash} is stored with ${ref.size + 1} bytes, not the ${ref.size} its reference announces`,
    );
    invalid(
      () => reader.checkStoredSize(ref.size - 1),
      `prefix ${ref.hash} is stored with ${ref.size - 1} bytes, not the ${ref.size} its reference announces`,
    );
  });

  it("stops at the first chunk that brings more bytes than announced", () => {
    const reader = new StoredPrefixReader(ref);
    reader.push(bytes);
    invalid(
      () => reader.push(new Uint8Array(1)),
      `prefix ${ref.hash} holds more than the ${ref.size} bytes announced`,
    );
  });

  it("refuses bytes of another hash, or fewer bytes than announced", () => {
    const altered = Uint8Array.from(bytes);
    altered.set([(altered.at(-2) ?? 0) ^ 1], altered.length - 2);
    const otherHash = createHash("sha256").update(altered).digest("hex");
    invalid(() => read([altered]), `prefix ${ref.hash} is corrupt (got ${otherHash}, ${ref.size} bytes)`);
    const short = bytes.subarray(0, bytes.byteLength - 1);
    const shortHash = createHash("sha256").update(short).digest("hex");
    invalid(() => read([short]), `prefix ${ref.hash} is corrupt (got ${shortHash}, ${ref.size - 1} bytes)`);
    // The right bytes under a reference announcing one byte more: the size alone is wrong.
    const longer = { hash: ref.hash, size: ref.size + 1 };
    const reader = new StoredPrefixReader(longer);
    reader.push(bytes);
    invalid(() => reader.finish(), `prefix ${ref.hash} is corrupt (got ${ref.hash}, ${ref.size} bytes)`);
  });
});
