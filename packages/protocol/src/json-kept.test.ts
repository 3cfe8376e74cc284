import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { valuesJsonCannotKeep } from "./json-fidelity.js";
import { keptByJavaScript } from "./json-kept.js";

type Body = Record<string, unknown>;

function loadFixture(name: string): { request: Body; response: Body } {
  const url = new URL(`../../fixtures/turns/${name}.json`, import.meta.url);
  return JSON.parse(readFileSync(url, "utf8")) as { request: Body; response: Body };
}

/** A fork child of the parent: its messages, its reply, then a user turn with the directive. */
function forkChild(request: Body, reply: Body, directive: string): Body {
  const messages = [...(request.messages as unknown[]), { role: "assistant", content: reply.content }];
  return {
    ...request,
    messages: [...messages, { role: "user", content: [{ type: "text", text: directive }] }],
  };
}

// Number texts as clients in other languages write them: most are not JavaScript's shortest form.
const NUMBER_TEXTS = [
  "0",
  "7",
  "-3",
  "0.5",
  "-0.25",
  "1.0",
  "2.50",
  "-0",
  "-0.0",
  "1e5",
  "1E5",
  "1e+21",
  "1e21",
  "1e-7",
  "1.5e-7",
  "0.0000001",
  "123456789012345",
  "1234567890123456",
  "12345678901234567890",
  "12345678901234567000",
  "1e400",
];
// Keys: array indexes (which JavaScript lists first), near misses, and keys written with escapes.
const KEY_TEXTS = [
  '"a"',
  '"b"',
  '"type"',
  '"0"',
  '"2"',
  '"10"',
  '"01"',
  '"2x"',
  '"-1"',
  '"4294967295"',
  '"\\u0031"',
  '"\\u0062"',
  '"a\\nb"',
  '"\\"q\\":"',
];
// Strings that look like the structure the scanner reads between strings.
const STRING_TEXTS = [
  '""',
  '"x"',
  '"1.0"',
  '"\\"2\\": 1.0"',
  '"a\\\\"',
  '"\\\\\\""',
  '"é 😀"',
  '"\\u00e9"',
  '"{\\"k\\":1e5}"',
  '": 1.0,"',
];
const SPACE = ["", "", "", " ", "\n  "];

/** JSON text a client in any language might write: numbers, keys and spacing as it likes. */
const jsonText = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom(...NUMBER_TEXTS),
    fc.constantFrom(...STRING_TEXTS),
    fc.constantFrom("true", "false", "null"),
    fc
      .array(fc.tuple(fc.constantFrom(...SPACE), tie("value"), fc.constantFrom(...SPACE)), { maxLength: 4 })
      .map((items) => `[${items.map(([a, v, b]) => a + v + b).join(",")}]`),
    // Keys once each, as JSON.stringify writes them (a repeated key is taken as one that may move).
    fc
      .uniqueArray(fc.tuple(fc.constantFrom(...KEY_TEXTS), fc.constantFrom(...SPACE), tie("value")), {
        maxLength: 4,
        selector: ([key]) => JSON.parse(key) as string,
      })
      .map((members) => `{${members.map(([k, s, v]) => `${k}${s}:${s}${v}`).join(",")}}`),
  ),
})).value;

describe("keptByJavaScript", () => {
  it("passes every body JSON.stringify wrote: the fixtures' parents and their forks", () => {
    for (const name of ["parent-turn-4k", "parent-turn-48k", "parent-turn-300k"] as const) {
      const fixture = loadFixture(name);
      expect(keptByJavaScript(JSON.stringify(fixture.request))).toBe(true);
      const child = forkChild(fixture.request, fixture.response, 'Quote "this" \\ and {that}: 1.0 é 😀');
      expect(keptByJavaScript(JSON.stringify(child))).toBe(true);
      expect(keptByJavaScript(JSON.stringify(child, null, 2))).toBe(true);
    }
  });

  it.each([
    ['{"a":1}', true],
    ['{"a": 0.5, "b": [1, -3, 1e-7, 1e+21]}', true],
    ['{"text":"1.0 and \\"2\\": 1e5"}', true],
    ['{"0":1,"2":{"1":0,"x":[{"7":1}]},"b":1,"2x":0}', true],
    ['{"\\u0031":0,"b\\n":1}', true],
    ['{"a":1.0}', false],
    ['{"a":-0}', false],
    ['{"a":1e5}', false],
    ['{"a":12345678901234567890}', false],
    ['{"b":1,"2":0}', false],
    ['{"10":0,"2":1}', false],
    ['{"4294967295":0,"2":1}', false],
    ['{"a":{"b":1},"c":{"x":0,"1":0}}', false],
    ['{"b":1,"\\u0031":0}', false],
    ['{"1":0,"1":1}', false],
    ["1.0", false],
    ['"x"', true],
    // At the exact edges: the largest array index, the digit 9, whitespace before a key's colon.
    ['{"b":1,"4294967294":0}', false],
    ['{"b":1,"4294967295":0}', true],
    ['{"b":1,"9":0}', false],
    ['{"a":9.0}', false],
    ['{"a":[9,19,99]}', true],
    ['{"b"\t:1,"2"\r:0}', false],
    ['{"b" :1,"2"\n:0}', false],
    // Numbers inside a string with escaped quotes stay inside it.
    ['{"a":"x\\" 1.0 \\"y"}', true],
    // Not JSON: cut short inside a string, a lone minus sign.
    ['{"a":"x', false],
    ["-", false],
  ])("%s: %s", (text, kept) => {
    expect(keptByJavaScript(text)).toBe(kept);
  });

  it("says kept exactly of text in which the protocol's walk finds nothing a JavaScript reading would change", () => {
    fc.assert(
      fc.property(jsonText, (value) => {
        // In an array under a key: the walk gives the holders below the top-level object's keys (this
        // looks everywhere, as it also reads pieces of a body, whose top is deep in it).
        const text = `{"top":[${value}]}`;
        JSON.parse(text); // the generator writes valid JSON
        expect(keptByJavaScript(text)).toBe(valuesJsonCannotKeep(text).length === 0);
      }),
      { numRuns: 3000 },
    );
  });

  it("passes JSON.stringify's writing of whatever those texts read as", () => {
    fc.assert(
      fc.property(jsonText, (text) => {
        expect(keptByJavaScript(JSON.stringify(JSON.parse(text)))).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});
