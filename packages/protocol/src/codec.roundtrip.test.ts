// Property-based round trips: every valid message survives encode → decode unchanged (after defaults),
// and the inherited prefix survives byte for byte, key order and unknown fields included.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  abortRequestArb,
  daemonInfoArb,
  eventArbs,
  forkEventArb,
  forkPrefixArb,
  forkSpecArb,
  inlineForkSpecArb,
  permissionRequestArb,
  permissionResponseArb,
  retentionLeaseArb,
  runStateArb,
  toolHostRequestArb,
  toolHostResponseArb,
} from "./arbitraries.js";
import {
  abortRequestCodec,
  type Codec,
  daemonInfoCodec,
  forkEventCodec,
  forkPrefixCodec,
  forkSpecCodec,
  permissionRequestCodec,
  permissionResponseCodec,
  retentionLeaseCodec,
  runStateCodec,
  toolHostRequestCodec,
  toolHostResponseCodec,
} from "./codec.js";
import { type ForkPrefix, ForkPrefixSchema, type ForkSpec } from "./spec.js";

// toEqual, not toStrictEqual: the latter compares `constructor` properties, and `constructor` is a valid
// data key here (the arbitraries generate it on purpose).
const runs = { numRuns: 200 };

const textOf = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

// biome-ignore lint/suspicious/noExplicitAny: a heterogeneous table of codecs and their arbitraries
type Case = [string, Codec<any, any>, fc.Arbitrary<unknown>];

const cases: Case[] = [
  ["fork spec", forkSpecCodec, forkSpecArb],
  ["fork prefix", forkPrefixCodec, forkPrefixArb],
  ["fork event", forkEventCodec, forkEventArb],
  ...Object.entries(eventArbs).map(([type, arb]): Case => [`${type} event`, forkEventCodec, arb]),
  ["abort request", abortRequestCodec, abortRequestArb],
  ["permission request", permissionRequestCodec, permissionRequestArb],
  ["permission response", permissionResponseCodec, permissionResponseArb],
  ["tool host request", toolHostRequestCodec, toolHostRequestArb],
  ["tool host response", toolHostResponseCodec, toolHostResponseArb],
  ["run state", runStateCodec, runStateArb],
  ["daemon info", daemonInfoCodec, daemonInfoArb],
  ["retention lease", retentionLeaseCodec, retentionLeaseArb],
];

describe("round trip: decode(encode(x)) deep-equals x", () => {
  it.each(cases)("%s", (_name, codec, arb) => {
    fc.assert(
      fc.property(arb, (value) => {
        const bytes = codec.encode(value);
        expect(bytes.byteLength).toBeLessThanOrEqual(codec.maxBytes);
        expect(codec.decode(bytes)).toEqual(value);
        // A string decodes like its UTF-8 bytes.
        expect(codec.decode(textOf(bytes))).toEqual(value);
      }),
      runs,
    );
  });

  // Found by the property above on Node 24: V8 12.8+ can read an escaped key as `\\` once an earlier
  // parse left a matching map transition (https://github.com/nodejs/node/issues/63785).
  it("a prefix's escaped keys survive a process whose native JSON parser was poisoned", () => {
    JSON.parse('{"":null,"toString":null,"\\\\":null}');
    const prefix: ForkPrefix = {
      params: { model: "m", messages: [{ role: "user", content: [] }] },
      reply: {
        role: "assistant",
        content: [
          { type: "tool_use", id: "t", name: "n", input: { "": { "": null, toString: null, '"': null } } },
        ],
      },
    };
    expect(forkPrefixCodec.decode(forkPrefixCodec.encode(prefix))).toEqual(prefix);
  });

  it("encoding is deterministic and re-encoding a decoded message is stable", () => {
    fc.assert(
      fc.property(forkSpecArb, (spec) => {
        const once = forkSpecCodec.encode(spec);
        expect(forkSpecCodec.encode(spec)).toEqual(once);
        const decoded = forkSpecCodec.decode(once);
        expect(forkSpecCodec.decode(forkSpecCodec.encode(decoded))).toEqual(decoded);
      }),
      runs,
    );
  });
});

describe("defaults: a sender may omit every defaulted field", () => {
  // Written out here, independently of the schemas, so a changed default fails a test.
  const SPEC_DEFAULTS = {
    query_source: "agent",
    tool_filter: { kind: "all" },
    overrides: {},
    limits: { max_turns: 200 },
    isolation: { worktree: false },
    permissions: { mode: "allow", timeout_ms: 60_000 },
  } as const;
  const NESTED_DEFAULTS = [
    ["limits", "max_turns", 200],
    ["isolation", "worktree", false],
    ["permissions", "mode", "allow"],
    ["permissions", "timeout_ms", 60_000],
    ["parent", "lineage", []],
  ] as const;
  const topKeys = Object.keys(SPEC_DEFAULTS) as (keyof typeof SPEC_DEFAULTS)[];

  it("fork spec: omitted fields come back with their defaults", () => {
    fc.assert(
      fc.property(
        forkSpecArb,
        fc.subarray(topKeys),
        fc.subarray(NESTED_DEFAULTS.map((_, i) => i)),
        (spec, dropTop, dropNested) => {
          const sent: Record<string, unknown> = structuredClone(spec);
          const expected: Record<string, unknown> = structuredClone(spec);
          for (const i of dropNested) {
            const [outer, inner, value] = NESTED_DEFAULTS[i]!;
            delete (sent[outer] as Record<string, unknown>)[inner];
            (expected[outer] as Record<string, unknown>)[inner] = value;
          }
          for (const key of dropTop) {
            delete sent[key];
            expected[key] = structuredClone(SPEC_DEFAULTS[key]);
          }
          const decoded = forkSpecCodec.decode(forkSpecCodec.encode(sent as ForkSpec));
          expect(decoded).toEqual(expected);
        },
      ),
      runs,
    );
  });

  it("abort request: reason defaults to 'aborted by parent'", () => {
    fc.assert(
      fc.property(abortRequestArb, (abort) => {
        const { reason: _, ...sent } = abort;
        expect(abortRequestCodec.decode(abortRequestCodec.encode(sent))).toEqual({
          ...abort,
          reason: "aborted by parent",
        });
      }),
    );
  });

  it("tool host response: is_error defaults to false", () => {
    fc.assert(
      fc.property(toolHostResponseArb, (response) => {
        const { is_error: _, ...sent } = response;
        expect(toolHostResponseCodec.decode(toolHostResponseCodec.encode(sent))).toEqual({
          ...response,
          is_error: false,
        });
      }),
    );
  });
});

describe("the inherited prefix survives byte for byte", () => {
  it("inline prefix in a spec: params and reply re-serialise to the same bytes", () => {
    fc.assert(
      fc.property(inlineForkSpecArb, (spec) => {
        if (spec.prefix.kind !== "inline") throw new Error("unreachable");
        const sent = spec.prefix.prefix;
        const decoded = forkSpecCodec.decode(forkSpecCodec.encode(spec));
        if (decoded.prefix.kind !== "inline") throw new Error("prefix kind changed");
        expect(JSON.stringify(decoded.prefix.prefix.params)).toBe(JSON.stringify(sent.params));
        expect(JSON.stringify(decoded.prefix.prefix.reply)).toBe(JSON.stringify(sent.reply));
      }),
      runs,
    );
  });

  it("stored prefix (object store): same", () => {
    fc.assert(
      fc.property(forkPrefixArb, (prefix) => {
        const bytes = forkPrefixCodec.encode(prefix);
        expect(textOf(bytes)).toBe(JSON.stringify(prefix));
        const decoded = forkPrefixCodec.decode(bytes);
        expect(JSON.stringify(decoded)).toBe(JSON.stringify(prefix));
      }),
      runs,
    );
  });

  it("zod alone would not: it rebuilds objects with known keys first (why the codec keeps the raw JSON)", () => {
    const raw = {
      params: {
        tools: [{ input_schema: { type: "object" }, name: "Read" }],
        messages: [
          { content: [{ text: "hi", cache_control: { type: "ephemeral" }, type: "text" }], role: "user" },
        ],
        model: "claude-x",
        future_param: { b: 1, a: 2 },
      },
    };
    const text = JSON.stringify(raw);
    expect(JSON.stringify(ForkPrefixSchema.parse(raw))).not.toBe(text);
    expect(JSON.stringify(forkPrefixCodec.decode(text))).toBe(text);
  });

  const fixtures = ["parent-turn-4k", "parent-turn-48k", "parent-turn-300k"];
  it.each(fixtures)("recorded parent turn %s: inline spec and stored prefix keep every byte", (name) => {
    const url = new URL(`../../fixtures/turns/${name}.json`, import.meta.url);
    const fixture = JSON.parse(readFileSync(url, "utf8")) as { request: object; response: object };
    const prefix = { params: fixture.request, reply: fixture.response };
    const stored = forkPrefixCodec.decode(forkPrefixCodec.encode(prefix as never));
    expect(JSON.stringify(stored)).toBe(JSON.stringify(prefix));
    const spec = {
      v: 1,
      run_id: `fixture-${name}`,
      parent: { agent_id: "parent" },
      directive: "Summarise the open issues.",
      prefix: { kind: "inline", prefix },
      created_at: 1_700_000_000_000,
    };
    const decoded = forkSpecCodec.decode(forkSpecCodec.encode(spec as never));
    if (decoded.prefix.kind !== "inline") throw new Error("prefix kind changed");
    expect(JSON.stringify(decoded.prefix.prefix)).toBe(JSON.stringify(prefix));
  });
});
