// The values a JavaScript reading of JSON cannot write back as sent, found at their exact boundaries,
// and nothing reported for text JSON.stringify wrote.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { memberTextOf, valuesJsonCannotKeep } from "./json-fidelity.js";

// Text as another language's serialiser writes it: keys in any order, numbers in other forms.
const numberText = fc.constantFrom("1", "1.0", "2.5", "1e3", "-0", "0", "12", "9007199254740993", "1e400");
const keyText = fc.constantFrom("a", "b", "0", "1", "2", "10", "01", "4294967295");
const foreignJson = fc.letrec<{ node: string }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    numberText,
    fc.constantFrom('"s"', "true", "null"),
    fc.array(tie("node"), { maxLength: 3 }).map((items) => `[${items.join(",")}]`),
    fc
      .uniqueArray(fc.tuple(keyText, tie("node")), { maxLength: 4, selector: ([key]) => key })
      .map((members) => `{${members.map(([key, value]) => `"${key}":${value}`).join(",")}}`),
  ),
})).node;

/** The holders `valuesJsonCannotKeep` finds in `text`, by their paths. */
const holdersIn = (text: string, inScope?: (field: string) => boolean) =>
  valuesJsonCannotKeep(text, inScope).map(({ at }) => at);

describe("the walk: which values a JavaScript reading writes differently", () => {
  it.each(["1.0", "1e3", "1E2", "-0", "-0.0", "0.10", "1e16", "1e-05", "9007199254740993", "1e400"])(
    "%s is not kept",
    (sent) => {
      expect(valuesJsonCannotKeep(`{"a":[${sent}]}`)).toEqual([{ at: ["a"], text: `[${sent}]` }]);
    },
  );

  it.each(["0", "1", "-1", "0.5", "1e+21", "1e-7", "9007199254740992", "123456789"])(
    "%s is kept",
    (number) => {
      expect(valuesJsonCannotKeep(`{"a":[${number}]}`)).toEqual([]);
    },
  );

  it("finds an object whose integer-like keys do not come first, in ascending order", () => {
    expect(valuesJsonCannotKeep('{"input": [{"b": 1, "2": 0}]}')).toEqual([
      { at: ["input", 0], text: '{"b": 1, "2": 0}' },
    ]);
    expect(holdersIn('{"input": [{"10": 1, "9": 0}]}')).toEqual([["input", 0]]);
    expect(holdersIn('{"input": [{"1": 1, "2": 0, "b": 3}]}')).toEqual([]);
  });

  it("counts as integer-like exactly JavaScript's array indexes: 0 to 2^32 − 2", () => {
    // 4294967294 is an index and moves first; 4294967295 is an ordinary key and stays in place.
    expect(holdersIn('{"o": {"b": 1, "4294967294": 0}}')).toEqual([["o"]]);
    expect(holdersIn('{"o": {"b": 1, "4294967295": 0}}')).toEqual([]);
    for (const key of ["01", "-1", "1.5", "1e3", " 1"]) {
      expect(holdersIn(`{"o": {"b": 1, ${JSON.stringify(key)}: 0}}`), key).toEqual([]);
    }
    // An escaped key is read as its value.
    expect(holdersIn('{"o": {"b": 1, "\\u0031": 0}}')).toEqual([["o"]]);
  });

  it("keeps a repeated key at its first place, as JSON.parse does", () => {
    expect(holdersIn('{"o": {"1": 0, "b": 1, "1": 2}}')).toEqual([]);
  });

  it("reads strings with quotes, escapes and numbers inside them as strings", () => {
    expect(holdersIn('{"a": ["1.0 \\" 2.0", "\\\\", "{\\"b\\": 1, \\"2\\": 0}"]}')).toEqual([]);
  });

  it("walks every kind of value and whitespace to the right place", () => {
    const text = '{"a": [true,\tfalse,\rnull,\n"x", {"k": 2}, [], {}, [1.0]]}';
    expect(valuesJsonCannotKeep(text)).toEqual([{ at: ["a", 7], text: "[1.0]" }]);
    expect(holdersIn('{\n\t"a"\r:\n{"b"\t:\r1 ,\n"2" : 0}}')).toEqual([["a"]]);
  });

  it("finds nothing in text that is not JSON or is nested deeper than the stack", () => {
    expect(holdersIn('{"a": ["unterminated')).toEqual([]);
    expect(holdersIn(`{"a":${"[".repeat(200_000)}1.0${"]".repeat(200_000)}}`)).toEqual([]);
  });
});

const inPrompt = (field: string) => ["tools", "system", "messages"].includes(field);

describe("valuesJsonCannotKeep", () => {
  it("gives the innermost object or array holding a number, with its exact text", () => {
    const text =
      '{"tools": [{"name": "t", "input_schema": {"properties": {"x": {"default": 1.0 , "k": 2}}}}]}';
    expect(valuesJsonCannotKeep(text)).toEqual([
      { at: ["tools", 0, "input_schema", "properties", "x"], text: '{"default": 1.0 , "k": 2}' },
    ]);
    expect(valuesJsonCannotKeep('{"a": [1, [2, 1e2]]}')).toEqual([{ at: ["a", 1], text: "[2, 1e2]" }]);
  });

  it("gives an object whose keys JavaScript reorders as that object, and each holder once", () => {
    const text = '{"messages": [{"input": {"b": {"c": 1.0}, "2": 0}}]}';
    expect(valuesJsonCannotKeep(text)).toEqual([
      { at: ["messages", 0, "input", "b"], text: '{"c": 1.0}' },
      { at: ["messages", 0, "input"], text: '{"b": {"c": 1.0}, "2": 0}' },
    ]);
  });

  it("keeps to the top-level keys in scope, and a number right under one has no holder to give", () => {
    const text = '{"temperature": 1.0, "tools": [1.0], "x": {"y": 1.0}}';
    expect(valuesJsonCannotKeep(text, inPrompt)).toEqual([{ at: ["tools"], text: "[1.0]" }]);
    expect(valuesJsonCannotKeep('{"tools": 1.0}', inPrompt)).toEqual([]);
    expect(valuesJsonCannotKeep("[[1.0]]")).toEqual([]);
  });

  it("gives nothing for text JSON.stringify wrote, or that is not JSON", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(valuesJsonCannotKeep(JSON.stringify({ v: value }))).toEqual([]);
      }),
    );
    expect(valuesJsonCannotKeep('{"a": [1.0')).toEqual([]);
  });

  it("gives something exactly when JavaScript would not write the text back, each a JSON value", () => {
    fc.assert(
      fc.property(foreignJson, (node) => {
        // In an array, so that every value has a holder to give.
        const text = `{"v":[${node}]}`;
        const found = valuesJsonCannotKeep(text);
        for (const { text: part } of found) expect(() => JSON.parse(part)).not.toThrow();
        expect(found.length === 0).toBe(JSON.stringify(JSON.parse(text)) === text);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("memberTextOf", () => {
  it("gives a top-level member's exact text, the last when repeated, never a nested one's", () => {
    const text = '{"response": {"request": 1}, "request" :\n {"a": 1.0,\n "b": [ ]} , "request": {"c": 2.0}}';
    expect(memberTextOf(text, "request")).toBe('{"c": 2.0}');
    expect(memberTextOf('{"x": {"request": 1}, "request": "s"}', "request")).toBe('"s"');
    expect(memberTextOf('{"request": "s", "x": {"request": 1}}', "request")).toBe('"s"');
    expect(memberTextOf('{"request" :\n {"a": 1.0,\n "b": [ ]} }', "request")).toBe('{"a": 1.0,\n "b": [ ]}');
  });

  it("gives undefined without such a member, for a top-level array, and for text that is not JSON", () => {
    expect(memberTextOf('{"x": {"request": 1}}', "request")).toBeUndefined();
    expect(memberTextOf('[{"request": 1}]', "request")).toBeUndefined();
    expect(memberTextOf('{"request": {"a": 1', "request")).toBeUndefined();
  });
});
