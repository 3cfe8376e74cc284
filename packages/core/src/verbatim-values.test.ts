// A parent in another language sends values JavaScript writes differently; the prefix keeps their
// text, the daemon ties it to the values it stands for (never to anything else), and the writer sends
// it, through the child's own copies too.
import type { ForkPrefix } from "@forkd/protocol";
import { parseJsonText } from "@forkd/protocol/internal";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createForkPrefix } from "./cache-safe-params.js";
import { InvalidPrefixError } from "./errors.js";
import { isSealedValue, sealSharedPrefix } from "./shared-prefix.js";
import { stringifyWithVerbatim, tieVerbatimTexts, verbatimValuesOf } from "./verbatim-values.js";

// A Messages request as the Anthropic Python SDK writes one: compact, `1.0`, all of a big integer's digits.
const PYTHON_TEXT =
  '{"max_tokens":64,"messages":[{"role":"user","content":"hi"},' +
  '{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"t1","name":"search","input":{"query":"q","min_score":2.0}}]},' +
  '{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"3"}]}],' +
  '"model":"claude-sonnet-4-6","temperature":1.0,' +
  '"tools":[{"name":"search","input_schema":{"properties":{"min_score":{"default":1.0,"type":"number"},' +
  '"since":{"default":12345678901234567890,"type":"integer"}},"type":"object","nullable":null}}]}';

function pythonPrefix(): ForkPrefix {
  return createForkPrefix(parseJsonText(PYTHON_TEXT), undefined, { requestText: PYTHON_TEXT });
}

describe("verbatimValuesOf and createForkPrefix's requestText", () => {
  it("keeps the innermost objects of tools, system and messages holding what JavaScript writes differently", () => {
    expect(pythonPrefix().verbatim).toEqual([
      { at: ["messages", 1, "content", 1, "input"], text: '{"query":"q","min_score":2.0}' },
      {
        at: ["tools", 0, "input_schema", "properties", "min_score"],
        text: '{"default":1.0,"type":"number"}',
      },
      {
        at: ["tools", 0, "input_schema", "properties", "since"],
        text: '{"default":12345678901234567890,"type":"integer"}',
      },
    ]);
  });

  it("keeps nothing for a body JavaScript wrote, or when no text is given", () => {
    const request = parseJsonText(PYTHON_TEXT);
    expect(createForkPrefix(request, undefined, { requestText: JSON.stringify(request) })).not.toHaveProperty(
      "verbatim",
    );
    expect(createForkPrefix(request)).not.toHaveProperty("verbatim");
    // Whitespace is not something JavaScript loses that the provider sees.
    const indented = JSON.stringify(request, null, 2);
    expect(createForkPrefix(request, undefined, { requestText: indented })).not.toHaveProperty("verbatim");
  });

  it("leaves out a text that does not read as the value at its place in the request", () => {
    const request = parseJsonText(PYTHON_TEXT) as {
      tools: { input_schema: { properties: Record<string, unknown> } }[];
    };
    request.tools[0]!.input_schema.properties.min_score = { default: 3, type: "number" };
    const kept = verbatimValuesOf(request as never, PYTHON_TEXT).map(({ at }) => at.join("."));
    expect(kept).toEqual(["messages.1.content.1.input", "tools.0.input_schema.properties.since"]);
    // A place the request does not have at all.
    (request as { messages?: unknown }).messages = [];
    expect(verbatimValuesOf(request as never, PYTHON_TEXT).map(({ at }) => at.join("."))).toEqual([
      "tools.0.input_schema.properties.since",
    ]);
  });
});

describe("tieVerbatimTexts and stringifyWithVerbatim", () => {
  it("writes the prefix's values as the parent sent them, and everything else as JSON.stringify does", () => {
    const prefix = tieVerbatimTexts(pythonPrefix());
    const { params } = prefix;
    const written = stringifyWithVerbatim({ ...params, temperature: undefined });
    const expected = PYTHON_TEXT.replace(',"temperature":1.0', "");
    expect(written).toBe(expected);
    expect(stringifyWithVerbatim(params.messages[0])).toBe('{"role":"user","content":"hi"}');
  });

  it("finds the texts through the child's own copies around them (a block copied to move a breakpoint)", () => {
    const { params } = tieVerbatimTexts(pythonPrefix());
    const message = params.messages[1]!;
    const blocks = message.content as Record<string, unknown>[];
    const copy = { ...message, content: [blocks[0], { ...blocks[1], cache_control: { type: "ephemeral" } }] };
    expect(stringifyWithVerbatim(copy)).toBe(
      '{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"t1","name":"search","input":{"query":"q","min_score":2.0},"cache_control":{"type":"ephemeral"}}]}',
    );
    // What JSON.stringify leaves out, an array writes as null.
    expect(stringifyWithVerbatim([blocks[1], undefined, () => 1])).toBe(
      `[${'{"type":"tool_use","id":"t1","name":"search","input":{"query":"q","min_score":2.0}}'},null,null]`,
    );
    expect(stringifyWithVerbatim({ a: blocks[1], b: undefined, c: () => 1, d: Symbol("s") })).toBe(
      '{"a":{"type":"tool_use","id":"t1","name":"search","input":{"query":"q","min_score":2.0}}}',
    );
  });

  it("is JSON.stringify for values tied to no text", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(stringifyWithVerbatim(value)).toBe(JSON.stringify(value));
        const sealed = sealSharedPrefix({
          params: { model: "m", messages: [{ role: "user", content: [value] }] },
        } as never);
        expect(stringifyWithVerbatim(sealed.params)).toBe(JSON.stringify(sealed.params));
      }),
    );
  });

  // A prefix comes from another parent: its texts must say what its params say, nothing else.
  const hostile: [string, ForkPrefix["verbatim"]][] = [
    [
      "another number",
      [
        {
          at: ["tools", 0, "input_schema", "properties", "min_score"],
          text: '{"default":2.0,"type":"number"}',
        },
      ],
    ],
    [
      "another key",
      [{ at: ["messages", 1, "content", 1, "input"], text: '{"query":"q","min_score":2.0,"x":1}' }],
    ],
    [
      "the same keys in another order",
      [{ at: ["messages", 1, "content", 1, "input"], text: '{"min_score":2.0,"query":"q"}' }],
    ],
    [
      "text that is not JSON",
      [{ at: ["messages", 1, "content", 1, "input"], text: '{"query":"q","min_score":2.0' }],
    ],
    [
      "two values",
      [{ at: ["messages", 1, "content", 1, "input"], text: '{"query":"q","min_score":2.0} {}' }],
    ],
    ["a place that does not exist", [{ at: ["messages", 7], text: "{}" }]],
    [
      "a key on an array",
      [
        {
          at: ["messages", "1"],
          text: '{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"t1","name":"search","input":{"query":"q","min_score":2.0}}]}',
        },
      ],
    ],
    ["an index on an object", [{ at: ["tools", 0, "input_schema", 0], text: "{}" }]],
    ["an inherited property", [{ at: ["tools", 0, "constructor"], text: "{}" }]],
    ["the prototype", [{ at: ["tools", 0, "__proto__"], text: "{}" }]],
    ["null", [{ at: ["tools", 0, "input_schema", "nullable"], text: "null" }]],
    ["a place below null", [{ at: ["tools", 0, "input_schema", "nullable", "x"], text: "{}" }]],
    ["a string, not an object", [{ at: ["messages", 0, "content"], text: '"hi"' }]],
    ["a number", [{ at: ["max_tokens"], text: "64.0" }]],
  ];

  it.each(hostile)(
    "refuses a text standing for %s, as an InvalidPrefixError naming its place",
    (_, verbatim) => {
      const prefix = { ...pythonPrefix(), verbatim };
      const error = (() => {
        try {
          tieVerbatimTexts(prefix);
        } catch (thrown) {
          return thrown;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(InvalidPrefixError);
      expect((error as InvalidPrefixError).path).toEqual(["verbatim", ...verbatim![0]!.at]);
      expect((error as InvalidPrefixError).message).toBe(
        `the verbatim text for params.${verbatim![0]!.at.join(".")} is not the value there: it must read as the same JSON`,
      );
    },
  );

  it("accepts a text that differs only in what JSON reading ignores: whitespace, escapes, number forms", () => {
    const at = ["messages", 1, "content", 1, "input"];
    const text = '{ "query" : "\\u0071" ,\n "min_score" : 2.00 }';
    const prefix = tieVerbatimTexts({ ...pythonPrefix(), verbatim: [{ at, text }] });
    expect(stringifyWithVerbatim(prefix.params.messages[1])).toContain(`"input":${text}}`);
  });

  it("seals the prefix it ties, returns one without texts as it is, and checks a prefix once", () => {
    const prefix = pythonPrefix();
    expect(tieVerbatimTexts(prefix)).toBe(prefix);
    expect(isSealedValue(prefix.params.tools)).toBe(true);
    const plain = createForkPrefix(parseJsonText(PYTHON_TEXT));
    expect(tieVerbatimTexts(plain)).toBe(plain);
    expect(isSealedValue(plain)).toBe(false);
    const empty = { ...createForkPrefix(parseJsonText(PYTHON_TEXT)), verbatim: [] };
    expect(tieVerbatimTexts(empty)).toBe(empty);
    expect(isSealedValue(empty)).toBe(false);
    expect(tieVerbatimTexts(prefix)).toBe(prefix);
  });

  it("ties none of a prefix's texts when one is refused", () => {
    const good = pythonPrefix().verbatim![0]!;
    const prefix = { ...pythonPrefix(), verbatim: [good, { at: ["messages", 9], text: "{}" }] };
    expect(() => tieVerbatimTexts(prefix)).toThrow(InvalidPrefixError);
    expect(stringifyWithVerbatim(prefix.params.messages[1])).toContain('"min_score":2}');
    expect(isSealedValue(prefix)).toBe(false);
  });

  it("ties a native OpenAI prefix's texts in its request, and refuses one that is not its value there", () => {
    const sent =
      '{"model":"gpt-5","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"w":{"default":1.0}}}}}]}';
    const request = parseJsonText(sent) as Record<string, unknown>;
    const verbatim = verbatimValuesOf(request, sent, "openai-chat");
    expect(verbatim).toEqual([
      { at: ["tools", 0, "function", "parameters", "properties", "w"], text: '{"default":1.0}' },
    ]);
    // The Messages API's fields are not the Chat Completions API's: a "system" there reaches no prompt.
    expect(verbatimValuesOf({ system: [{ n: 1 }] }, '{"system":[{"n":1.0}]}', "openai-chat")).toEqual([]);
    expect(verbatimValuesOf({ input: [{ n: 1 }] }, '{"input":[{"n":1.0}]}', "openai-responses")).toHaveLength(
      1,
    );
    const native = { api: "openai-chat" as const, request, reply: [], verbatim };
    const prefix = tieVerbatimTexts({ params: { model: "gpt-5", messages: [] }, native } as never);
    expect(stringifyWithVerbatim(prefix.native!.request)).toBe(sent);

    const lying = {
      ...native,
      request: parseJsonText(sent) as Record<string, unknown>,
      verbatim: [{ ...verbatim[0]!, text: '{"default":2.0}' }],
    };
    const error = (() => {
      try {
        tieVerbatimTexts({ params: { model: "gpt-5", messages: [] }, native: lying } as never);
      } catch (thrown) {
        return thrown as InvalidPrefixError;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(InvalidPrefixError);
    expect(error?.path).toEqual(["native", "verbatim", ...verbatim[0]!.at]);
    expect(error?.message).toMatch(/^the verbatim text for native\.request\.tools\.0\.function/);
  });
});
