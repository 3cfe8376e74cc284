import { createForkPrefix } from "@forkd/core";
import {
  type ForkPrefix,
  type ForkSpecInput,
  forkPrefixCodec,
  forkSpecCodec,
  MAX_JSON_DEPTH,
  MAX_PREFIX_BYTES,
  MAX_SPEC_BYTES,
  PROTOCOL_VERSION,
} from "@forkd/protocol";
import { spliceInlineSpec } from "@forkd/protocol/internal";
import { loadFixture } from "@forkd/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { SpecWriter } from "./spec-writer.js";

let prefix: ForkPrefix;

beforeAll(async () => {
  const fixture = await loadFixture("4k");
  prefix = createForkPrefix(fixture.request, fixture.response);
});

function specOf(directive: string): Omit<ForkSpecInput, "prefix"> {
  return {
    v: PROTOCOL_VERSION,
    run_id: "01JABCDEFGHJKMNPQRSTVWXYZ0",
    parent: { agent_id: "parent-1", lineage: [] },
    directive,
    label: 'a "quoted" label }',
    created_at: 1_700_000_000_000,
  };
}

/** A prefix whose last message holds a tool input nested `depth` levels deep. */
function nestedPrefix(depth: number): ForkPrefix {
  let input: unknown = {};
  for (let i = 0; i < depth; i++) input = { a: input };
  const messages = [
    ...prefix.params.messages,
    { role: "user", content: [{ type: "text", text: "go" }] },
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_deep", name: "Read", input }] },
  ];
  return { ...prefix, params: { ...prefix.params, messages } } as ForkPrefix;
}

describe("inline specs from checked bytes", () => {
  it("splices to the spec the codec writes for the whole", () => {
    const spec = specOf("Summarise the codec module.");
    const bytes = spliceInlineSpec(spec, forkPrefixCodec.encode(prefix));
    const whole = forkSpecCodec.encode({ ...spec, prefix: { kind: "inline", prefix } });
    expect(forkSpecCodec.decode(bytes)).toEqual(forkSpecCodec.decode(whole));
    expect(bytes.byteLength).toBe(whole.byteLength);
  });

  it("refuses a prefix that passes alone but is too deep inside a spec, as the codec does", () => {
    // Alone the prefix is within the depth limit; inside a spec it sits two levels deeper.
    let depth = MAX_JSON_DEPTH - 12;
    while (depth < MAX_JSON_DEPTH) {
      try {
        forkPrefixCodec.encode(nestedPrefix(depth + 1));
        depth++;
      } catch {
        break;
      }
    }
    const deep = nestedPrefix(depth);
    const prefixBytes = forkPrefixCodec.encode(deep);
    const spec = specOf("Deep.");
    expect(() => forkSpecCodec.encode({ ...spec, prefix: { kind: "inline", prefix: deep } })).toThrow(
      expect.objectContaining({ code: "too_deep" }),
    );
    const writer = new SpecWriter();
    expect(() => writer.inline(spec, prefixBytes)).toThrow(expect.objectContaining({ code: "too_deep" }));
    expect(() => writer.inline(specOf("Deep, again."), prefixBytes)).toThrow(
      expect.objectContaining({ code: "too_deep" }),
    );
  });

  it("refuses a later spec of a checked prefix once it is over the size limit", () => {
    const big = {
      ...prefix,
      params: { ...prefix.params, system: "x".repeat(MAX_SPEC_BYTES - 200 * 1024) },
    } as ForkPrefix;
    const prefixBytes = forkPrefixCodec.encode(big);
    const writer = new SpecWriter();
    expect(forkSpecCodec.decode(writer.inline(specOf("Short."), prefixBytes)).directive).toBe("Short.");
    const long = specOf("y".repeat(250 * 1024));
    expect(() => writer.inline(long, prefixBytes)).toThrow(
      expect.objectContaining({ code: "payload_too_large" }),
    );
  });
});

describe("specs naming a stored prefix", () => {
  const ref = { hash: "a".repeat(64), size: 48_000 };
  const whole = (spec: Omit<ForkSpecInput, "prefix">, named = ref) =>
    forkSpecCodec.encode({ ...spec, prefix: { kind: "ref", hash: named.hash, size: named.size } });

  it("writes the bytes the codec writes for the whole spec, for the first spec of a prefix and the next", () => {
    const writer = new SpecWriter();
    for (const directive of ["First child.", "Second child.", 'A "quoted" } child.']) {
      const spec = { ...specOf(directive), prefix: { kind: "none" as const } };
      expect(Buffer.from(writer.byReference(spec, ref)).equals(Buffer.from(whole(spec)))).toBe(true);
    }
  });

  it("refuses a reference the spec's schema refuses, for every spec that names it", () => {
    const writer = new SpecWriter();
    for (const bad of [
      { hash: "not-a-sha256", size: 10 },
      { hash: "b".repeat(64), size: MAX_PREFIX_BYTES + 1 },
    ]) {
      for (const directive of ["One.", "Two."]) {
        expect(() => writer.byReference(specOf(directive), bad)).toThrow(
          expect.objectContaining({ code: "invalid_spec" }),
        );
      }
    }
  });

  it("checks a reference by the object it was given, not by a hash it names", () => {
    const writer = new SpecWriter();
    writer.byReference(specOf("Checks the reference."), ref);
    const sameHashTooBig = { hash: ref.hash, size: MAX_PREFIX_BYTES + 1 };
    expect(() => writer.byReference(specOf("Reuses its hash."), sameHashTooBig)).toThrow(
      expect.objectContaining({ code: "invalid_spec" }),
    );
  });

  it("refuses a later spec of a checked reference once it is over the size limit", () => {
    const writer = new SpecWriter();
    expect(forkSpecCodec.decode(writer.byReference(specOf("Short."), ref)).directive).toBe("Short.");
    const long = specOf("y".repeat(MAX_SPEC_BYTES));
    expect(() => writer.byReference(long, ref)).toThrow(
      expect.objectContaining({ code: "payload_too_large" }),
    );
  });
});
