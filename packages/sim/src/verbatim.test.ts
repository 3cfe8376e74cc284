import { describe, expect, it } from "vitest";
import { inMessagesPrompt, promptTextOfElement, verbatimIdentities } from "./verbatim.js";

describe("promptTextOfElement", () => {
  it("keeps numbers and key order as written, and drops whitespace outside strings", () => {
    expect(
      promptTextOfElement(
        '{ "name" : "t",\n  "input_schema": {"properties": {"t": {"default": 1.0, "2": [1, 2.50, "a b"], "b": 12345678901234567890}}} }',
      ),
    ).toBe(
      '{"name":"t","input_schema":{"properties":{"t":{"default":1.0,"2":[1,2.50,"a b"],"b":12345678901234567890}}}}',
    );
  });

  it("writes strings as JSON.stringify does, as the provider parses them", () => {
    expect(promptTextOfElement('{"a":"\\u00e9\\/\\n \\"q\\"","b\\u0031":true,"c":null,"d":-1.5e+10}')).toBe(
      '{"a":"é/\\n \\"q\\"","b1":true,"c":null,"d":-1.5e+10}',
    );
    expect(promptTextOfElement('{"a":"é","n":1.0}')).toBe(promptTextOfElement('{"a":"\\u00e9","n":1.0}'));
  });

  it("leaves out the element's own cache_control, wherever it is, and no other", () => {
    const bare = '{"name":"t","input_schema":{"properties":{"cache_control":{"default":1.0}}}}';
    expect(promptTextOfElement(bare)).toBe(bare);
    for (const text of [
      '{"cache_control":{"type":"ephemeral"},"name":"t","input_schema":{"properties":{"cache_control":{"default":1.0}}}}',
      '{"name":"t", "cache_control": {"type":"ephemeral","ttl":"1h"}, "input_schema":{"properties":{"cache_control":{"default":1.0}}}}',
      '{"name":"t","input_schema":{"properties":{"cache_control":{"default":1.0}}},"cache_control":{"type":"ephemeral"}}',
      '{"name":"t","input_schema":{"properties":{"cache_control":{"default":1.0}}},"cache\\u005fcontrol":{"type":"ephemeral"}}',
    ]) {
      expect(promptTextOfElement(text)).toBe(bare);
    }
    expect(promptTextOfElement('{"cache_control":{"type":"ephemeral"}}')).toBe("{}");
    expect(promptTextOfElement("{ }")).toBe("{}");
  });

  it("leaves out the member it is told to, or none", () => {
    const part =
      '{"type":"input_text","cache_control":1,"prompt_cache_breakpoint":{"mode":"explicit"},"n":2.0}';
    expect(promptTextOfElement(part, "prompt_cache_breakpoint")).toBe(
      '{"type":"input_text","cache_control":1,"n":2.0}',
    );
    expect(promptTextOfElement(part, null)).toBe(part);
  });

  it("reads an element that is not an object as a value", () => {
    expect(promptTextOfElement('[ 1.0, {"a" : 2, "cache_control": 1} ]')).toBe(
      '[1.0,{"a":2,"cache_control":1}]',
    );
  });
});

describe("verbatimIdentities", () => {
  it("names each element by its place in the layout, and gives equal holders one identity", () => {
    const identities = verbatimIdentities([
      { at: ["tools", 1, "input_schema"], text: '{"x":1.0}' },
      { at: ["system", 0], text: '{"type":"text","text":"s","n":1.0}' },
      { at: ["messages", 3, "meta"], text: "[1.0]" },
      { at: ["messages", 2, "content", 4, "input"], text: '{ "x": 1.0 }' },
      { at: ["messages", 2, "content", 5, "input"], text: '{ "x": 1.0 }' },
    ]);
    expect([...identities.keys()]).toEqual(["t1", "s0", "m3", "m2.4", "m2.5"]);
    // The same text at another place is another holder: the path is part of it.
    expect(identities.get("m2.4")).not.toBe(identities.get("m2.5"));
    const again = verbatimIdentities([{ at: ["messages", 2, "content", 4, "input"], text: '{"x": 1.0}' }]);
    expect(again.get("m2.4")).toBe(identities.get("m2.4"));
  });

  it("takes every holder of an element into its identity, in order", () => {
    const one = { at: ["tools", 0, "a"], text: "[1.0]" };
    const two = { at: ["tools", 0, "b"], text: "[2.0]" };
    const both = verbatimIdentities([one, two]).get("t0");
    expect(both).not.toBe(verbatimIdentities([one]).get("t0"));
    expect(both).not.toBe(verbatimIdentities([two, one]).get("t0"));
  });

  it("leaves out the element's own cache_control, not a member of that name deeper in it", () => {
    const block = (cacheControl: string) => [
      { at: ["messages", 0, "content", 1], text: `{"type":"text","text":"x","n":1.0${cacheControl}}` },
    ];
    const marked = ',"cache_control":{"type":"ephemeral"}';
    expect(verbatimIdentities(block(marked)).get("m0.1")).toBe(verbatimIdentities(block("")).get("m0.1"));
    const input = (cacheControl: string) => [
      { at: ["messages", 0, "content", 1, "input"], text: `{"n":1.0${cacheControl}}` },
    ];
    expect(verbatimIdentities(input(marked)).get("m0.1")).not.toBe(verbatimIdentities(input("")).get("m0.1"));
  });

  it("places a holder by its first steps: a content block of a message, else its element", () => {
    const placed = (at: (string | number)[]) => [...verbatimIdentities([{ at, text: "[1.0]" }]).keys()];
    expect(placed(["tools", 0, "content", 0])).toEqual(["t0"]);
    expect(placed(["system", 1, "content", 0])).toEqual(["s1"]);
    expect(placed(["messages", 0, "content", "x"])).toEqual(["m0"]);
    expect(placed(["messages", 0, "meta", 0])).toEqual(["m0"]);
    expect(placed(["messages", 0, "content", 2, "input", 0])).toEqual(["m0.2"]);
    expect(placed(["messages", 3, "content", 1])).toEqual(["m3.1"]);
  });

  it("passes over a holder that is not in an array of prompt elements (a request the API refuses)", () => {
    expect(verbatimIdentities([{ at: ["tools", "x"], text: "[1.0]" }]).size).toBe(0);
    expect(verbatimIdentities([{ at: ["other", 0], text: "[1.0]" }]).size).toBe(0);
    expect(verbatimIdentities([{ at: ["constructor", 0], text: "[1.0]" }]).size).toBe(0);
  });

  it("says which top-level fields the prompt renders as sent", () => {
    expect(["tools", "system", "messages", "temperature", "toString"].map(inMessagesPrompt)).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });
});
