import { createHash } from "node:crypto";
import { createForkPrefix } from "@forkd/core";
import {
  type ForkPrefix,
  type ForkSpecInput,
  forkSpecCodec,
  PROTOCOL_VERSION,
  ProtocolError,
} from "@forkd/protocol";
import { loadFixture } from "@forkd/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { InlinePrefixCache, MIN_CACHED_SPEC_BYTES } from "./inline-prefixes.js";

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
    const size = JSON.stringify(prefix).length;
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
});
