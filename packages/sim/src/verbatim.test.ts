import { describe, expect, it } from "vitest";
import { promptTextOfElement, verbatimIdentities } from "./verbatim.js";

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
  it("names each element by its place in the layout, and gives equal prompt texts one identity", () => {
    const identities = verbatimIdentities([
      { at: ["tools", 1], text: '{"name":"t","x":1.0}' },
      { at: ["system", 0], text: '{"type":"text","text":"s","n":1.0}' },
      { at: ["messages", 3], text: '{"role":"user","content":"x"}' },
      { at: ["messages", 2, "content", 4], text: '{ "name": "t", "x": 1.0 }' },
    ]);
    expect([...identities.keys()]).toEqual(["t1", "s0", "m3", "m2.4"]);
    expect(identities.get("m2.4")).toBe(identities.get("t1"));
    expect(identities.get("s0")).not.toBe(identities.get("t1"));
  });
});
