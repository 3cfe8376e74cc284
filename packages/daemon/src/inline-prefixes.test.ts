import { createHash } from "node:crypto";
import { createForkPrefix } from "@forkd/core";
import {
  type ForkPrefix,
  type ForkSpecInput,
  forkPrefixCodec,
  forkSpecCodec,
  MAX_SPEC_BYTES,
  PROTOCOL_VERSION,
  ProtocolError,
} from "@forkd/protocol";
import { spliceInlineSpec } from "@forkd/protocol/internal";
import { loadFixture } from "@forkd/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { InlinePrefixCache, type InlinePrefixDecode, MIN_CACHED_SPEC_BYTES } from "./inline-prefixes.js";

let prefix: ForkPrefix;

beforeAll(async () => {
  const fixture = await loadFixture("4k");
  prefix = createForkPrefix(fixture.request, fixture.response);
});

const RUN_A = "01JABCDEFGHJKMNPQRSTVWXYZ0";
const RUN_B = "01JABCDEFGHJKMNPQRSTVWXYZ1";

function specOf(runId: string, inline: unknown, directive = "Summarise the codec module."): ForkSpecInput {
  return {
    v: PROTOCOL_VERSION,
    run_id: runId,
    parent: { agent_id: "parent-1", lineage: [] },
    directive,
    prefix: { kind: "inline", prefix: inline as ForkPrefix },
    created_at: 1_700_000_000_000,
  };
}

/** The spec's bytes as any sender may write them (no validation on the way: hostile ones too). */
const bytesOf = (spec: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(spec));

/** The same prefix with one character of its first message changed. */
function oneCharacterOff(original: ForkPrefix): ForkPrefix {
  const copy = JSON.parse(JSON.stringify(original)) as ForkPrefix;
  const text = JSON.stringify(copy.params.messages[0]);
  copy.params.messages[0] = JSON.parse(text.replace("a", "b"));
  expect(JSON.stringify(copy)).not.toBe(JSON.stringify(original));
  return copy;
}

function inlinePrefixOf(spec: { prefix: { kind: string; prefix?: ForkPrefix } }): ForkPrefix {
  if (spec.prefix.kind !== "inline" || spec.prefix.prefix === undefined) throw new Error("not inline");
  return spec.prefix.prefix;
}

describe("InlinePrefixCache", () => {
  it("decodes every spec as the codec does, siblings sharing one sealed copy of their prefix", () => {
    const cache = new InlinePrefixCache();
    const first = bytesOf(specOf(RUN_A, prefix));
    const second = bytesOf(specOf(RUN_B, prefix, "Another directive."));
    expect(first.byteLength).toBeGreaterThan(MIN_CACHED_SPEC_BYTES);
    const a = cache.decodeSpec(first);
    const b = cache.decodeSpec(second);
    expect(a).toEqual(forkSpecCodec.decode(first));
    expect(b).toEqual(forkSpecCodec.decode(second));
    expect(inlinePrefixOf(b)).toBe(inlinePrefixOf(a));
    expect(cache.size).toBe(1);
    // Sealed: no run can change what its siblings send.
    expect(Object.isFrozen(inlinePrefixOf(a).params.messages[0])).toBe(true);
    expect(() => {
      (inlinePrefixOf(a).params as { model: string }).model = "another-model";
    }).toThrow(TypeError);
  });

  it("gives a spec whose prefix differs by one character its own prefix, whatever hash it names", () => {
    const cache = new InlinePrefixCache();
    cache.decodeSpec(bytesOf(specOf(RUN_A, prefix)));
    const keptHash = createHash("sha256").update(JSON.stringify(prefix)).digest("hex");
    const altered = oneCharacterOff(prefix);
    // A hostile spec names the kept prefix's hash beside different bytes: the cache computes its own.
    const hostile = specOf(RUN_B, altered);
    const bytes = bytesOf({ ...hostile, prefix: { ...hostile.prefix, hash: keptHash } });
    const decoded = cache.decodeSpec(bytes);
    expect(inlinePrefixOf(decoded)).toEqual(altered);
    expect(decoded).toEqual(forkSpecCodec.decode(bytes));
    expect(cache.size).toBe(2);
    // And the first prefix's siblings still get the first prefix.
    expect(inlinePrefixOf(cache.decodeSpec(bytesOf(specOf(RUN_B, prefix))))).toEqual(prefix);
  });

  it("keeps nothing from a spec that fails validation, and refuses it as the codec does", () => {
    const cache = new InlinePrefixCache();
    const invalid = JSON.parse(JSON.stringify(prefix)) as { params: { messages: unknown } };
    invalid.params.messages = "not a list";
    const bytes = bytesOf(specOf(RUN_A, invalid));
    expect(() => forkSpecCodec.decode(bytes)).toThrow(ProtocolError);
    expect(() => cache.decodeSpec(bytes)).toThrow(
      expect.objectContaining({ code: "invalid_spec", path: ["prefix", "prefix", "params", "messages"] }),
    );
    expect(cache.size).toBe(0);
  });

  it("checks the rest of a spec whose prefix it kept, with the codec's errors", () => {
    const cache = new InlinePrefixCache();
    cache.decodeSpec(bytesOf(specOf(RUN_A, prefix)));
    for (const spec of [
      { ...specOf(RUN_B, prefix), directive: "" },
      { ...specOf(RUN_B, prefix), v: PROTOCOL_VERSION + 1 },
      { ...specOf(RUN_B, prefix), run_id: "not a run id" },
    ]) {
      const bytes = bytesOf(spec);
      let expected: unknown;
      try {
        forkSpecCodec.decode(bytes);
      } catch (error) {
        expected = error;
      }
      expect(expected).toBeInstanceOf(ProtocolError);
      const { code, path } = expected as ProtocolError;
      expect(() => cache.decodeSpec(bytes)).toThrow(expect.objectContaining({ code, path }));
    }
  });

  it("drops the least recently used prefix beyond its bound", () => {
    const json = JSON.stringify(prefix);
    const size = json.length + Buffer.byteLength(json); // the JSON and its bytes
    const cache = new InlinePrefixCache(size * 2 + 10);
    const altered = oneCharacterOff(prefix);
    const third = oneCharacterOff(altered);
    cache.decodeSpec(bytesOf(specOf(RUN_A, prefix)));
    cache.decodeSpec(bytesOf(specOf(RUN_A, altered)));
    const kept = inlinePrefixOf(cache.decodeSpec(bytesOf(specOf(RUN_A, prefix)))); // now the most recent
    cache.decodeSpec(bytesOf(specOf(RUN_A, third))); // the altered one goes
    expect(cache.size).toBe(2);
    expect(inlinePrefixOf(cache.decodeSpec(bytesOf(specOf(RUN_B, prefix))))).toBe(kept);
    const again = inlinePrefixOf(cache.decodeSpec(bytesOf(specOf(RUN_B, altered))));
    expect(again).toEqual(altered);
    expect(cache.size).toBe(2);
  });

  it("leaves small specs and specs without an inline prefix to the codec", () => {
    const cache = new InlinePrefixCache();
    const none = bytesOf({ ...specOf(RUN_A, prefix), prefix: { kind: "none" } });
    expect(cache.decodeSpec(none)).toEqual(forkSpecCodec.decode(none));
    expect(cache.size).toBe(0);
  });

  describe("specs that end with a kept prefix's bytes (the client's spliced layout)", () => {
    const utf8 = new TextEncoder();
    const OPENING = ',"prefix":{"kind":"inline","prefix":';
    let prefixBytes: Uint8Array;
    beforeAll(() => {
      prefixBytes = forkPrefixCodec.encode(prefix);
    });

    /** A spec as forkd's client writes it: its own fields, then the prefix's bytes. */
    function splicedSpec(runId: string, directive = "Summarise the codec module."): Uint8Array {
      const { prefix: _inline, ...own } = specOf(runId, prefix, directive);
      return spliceInlineSpec(own, prefixBytes);
    }

    /** Any bytes before the kept prefix's: `head` + the inline prefix's opening + the prefix + `}}`. */
    function withKeptTail(head: string, closing = "}}"): Uint8Array {
      const start = utf8.encode(head + OPENING);
      const end = utf8.encode(closing);
      const bytes = new Uint8Array(start.byteLength + prefixBytes.byteLength + end.byteLength);
      bytes.set(start);
      bytes.set(prefixBytes, start.byteLength);
      bytes.set(end, start.byteLength + prefixBytes.byteLength);
      return bytes;
    }

    /** The codec's outcome for the whole bytes: the spec, or its error's code and path. */
    function codecOutcome(bytes: Uint8Array): unknown {
      try {
        return { spec: forkSpecCodec.decode(bytes) };
      } catch (error) {
        const { code, path, message } = error as ProtocolError;
        return { code, path, message };
      }
    }

    function cacheOutcome(cache: InlinePrefixCache, bytes: Uint8Array): unknown {
      try {
        return { spec: cache.decodeSpec(bytes) };
      } catch (error) {
        const { code, path, message } = error as ProtocolError;
        return { code, path, message };
      }
    }

    /** A cache that counts how it decoded each spec, as the daemon's metric does. */
    function countedCache(maxBytes?: number): {
      cache: InlinePrefixCache;
      counts: Record<InlinePrefixDecode, number>;
    } {
      const counts = { tail: 0, hash: 0, whole: 0 };
      return { cache: new InlinePrefixCache(maxBytes, (how) => counts[how]++), counts };
    }

    function cacheWithKeptTail(): ReturnType<typeof countedCache> {
      const counted = countedCache();
      counted.cache.decodeSpec(splicedSpec(RUN_A));
      expect(counted.counts).toEqual({ tail: 0, hash: 0, whole: 1 });
      return counted;
    }

    it("recognises a sibling's spec by its last bytes and decodes only its own fields", () => {
      const { cache, counts } = cacheWithKeptTail();
      const first = inlinePrefixOf(cache.decodeSpec(splicedSpec(RUN_A)));
      const bytes = splicedSpec(RUN_B, "Another directive, with “quotes” and } braces.");
      const decoded = cache.decodeSpec(bytes);
      expect(counts).toEqual({ tail: 2, hash: 0, whole: 1 });
      expect(decoded).toEqual(forkSpecCodec.decode(bytes));
      expect(inlinePrefixOf(decoded)).toBe(first);
    });

    it("recognises the tail of a prefix first kept from a spec in another layout", () => {
      const { cache, counts } = countedCache();
      cache.decodeSpec(bytesOf(specOf(RUN_A, prefix))); // the prefix in the middle of its spec
      cache.decodeSpec(bytesOf(specOf(RUN_B, prefix))); // found by its hash
      cache.decodeSpec(splicedSpec(RUN_B));
      expect(counts).toEqual({ tail: 1, hash: 1, whole: 1 });
    });

    it("decodes a prefix one byte off in full, as another prefix", () => {
      const { cache, counts } = cacheWithKeptTail();
      const altered = oneCharacterOff(prefix);
      const { prefix: _inline, ...own } = specOf(RUN_B, prefix);
      const bytes = spliceInlineSpec(own, forkPrefixCodec.encode(altered));
      expect(bytes.byteLength).toBe(splicedSpec(RUN_B).byteLength); // same length: the bytes decide
      const decoded = cache.decodeSpec(bytes);
      expect(counts.tail).toBe(0);
      expect(inlinePrefixOf(decoded)).toEqual(altered);
      expect(decoded).toEqual(forkSpecCodec.decode(bytes));
    });

    it("gives any bytes ending with a kept prefix exactly the codec's outcome for the whole", () => {
      const { cache, counts } = cacheWithKeptTail();
      const own = `"v":${PROTOCOL_VERSION},"run_id":"${RUN_B}","parent":{"agent_id":"parent-1","lineage":[]},"created_at":1700000000000`;
      const heads = [
        `{${own},"directive":"fine"`, // a well-formed sibling
        `{${own},"directive":"fine"  \n`, // whitespace before the cut
        `{${own},"directive":"inside a string`, // the cut inside a string
        `{${own},"directive":"x","label":{"nested":1`, // the cut inside a nested object
        `{${own},"directive":"x","tool_filter":{"allow":["Read"`, // the cut inside an array
        `{${own},"directive":"x"}`, // a complete object before the cut
        "{", // no member before the cut
        `{${own},"directive":"x","prefix":{"kind":"ref","hash":"${"a".repeat(64)}","size":5}`, // a prefix of its own: the last one wins
        `{${own},"directive":"x","__proto__":{"polluted":true}`, // a forbidden key in the fields
        `{${own},"directive":"x","parent":{"agent_id":"other","lineage":[]}`, // a duplicate key: the last wins
        `{${own},"directive":""`, // a field the schema refuses
        `{"v":${PROTOCOL_VERSION + 1},"run_id":"${RUN_B}","directive":"x"`, // a newer protocol version
        `{${own},"directive":"${"[".repeat(200)}"`, // brackets inside a string: not nesting
        `{${own},"directive":"x","overrides":${"[".repeat(80)}${"]".repeat(80)}`, // too deep in the fields
      ];
      for (const head of heads) {
        const bytes = withKeptTail(head);
        expect(cacheOutcome(cache, bytes), head).toEqual(codecOutcome(bytes));
      }
      // Other endings after the kept prefix's bytes: only "}}" closes the spec as the layout does.
      for (const closing of ["]]", "}]", "} ", " }", "}}}", "}} "]) {
        const bytes = withKeptTail(`{${own},"directive":"fine"`, closing);
        expect(cacheOutcome(cache, bytes), closing).toEqual(codecOutcome(bytes));
      }
      // Bytes that are not UTF-8 before the cut.
      const bad = withKeptTail(`{${own},"directive":"xx"`);
      bad[bad.indexOf(0x78)] = 0xff;
      expect(cacheOutcome(cache, bad)).toEqual(codecOutcome(bad));
      // Valid, and decoded from their own fields: the sibling, the whitespace, the prefix and the parent
      // given twice, the brackets in a string. Every other one was refused with the codec's error.
      expect(counts.tail).toBe(5);
    });

    it("refuses a spec one byte over the size limit, and takes one at it", () => {
      // A prefix close to the limit, so that the directive (at most 256 KiB) can reach it.
      const big = {
        ...prefix,
        params: { ...prefix.params, system: "x".repeat(MAX_SPEC_BYTES - 200 * 1024) },
      } as ForkPrefix;
      const bigBytes = forkPrefixCodec.encode(big);
      const { prefix: _inline, ...own } = specOf(RUN_A, prefix, "");
      const spliced = (directive: string) => spliceInlineSpec({ ...own, directive }, bigBytes);
      const { cache, counts } = countedCache();
      cache.decodeSpec(spliced("First."));
      const room = MAX_SPEC_BYTES - spliced("").byteLength;
      const atLimit = spliced("d".repeat(room));
      expect(atLimit.byteLength).toBe(MAX_SPEC_BYTES);
      expect(cache.decodeSpec(atLimit).directive).toHaveLength(room);
      expect(counts.tail).toBe(1);
      const overLimit = spliced("d".repeat(room + 1));
      expect(() => cache.decodeSpec(overLimit)).toThrow(
        expect.objectContaining({ code: "payload_too_large" }),
      );
      expect(counts.tail).toBe(1);
    });

    it("forgets the tail of a dropped prefix", () => {
      const json = JSON.stringify(prefix);
      const { cache, counts } = countedCache(json.length + Buffer.byteLength(json) + 10);
      cache.decodeSpec(splicedSpec(RUN_A));
      const { prefix: _inline, ...own } = specOf(RUN_B, prefix);
      cache.decodeSpec(spliceInlineSpec(own, forkPrefixCodec.encode(oneCharacterOff(prefix)))); // drops the first
      expect(cache.size).toBe(1);
      const bytes = splicedSpec(RUN_B);
      expect(cache.decodeSpec(bytes)).toEqual(forkSpecCodec.decode(bytes));
      expect(counts).toEqual({ tail: 0, hash: 0, whole: 3 });
    });
  });
});
