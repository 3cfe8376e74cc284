// The codec's own rules, one at a time and exactly: what each refusal says, where it points, and
// which checks a codec runs. The corpus (codec.hostile.test.ts) and the round trips
// (codec.roundtrip.test.ts) cover the breadth; these pin the edges mutation testing found loose.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  abortRequestCodec,
  createForkSpecCodec,
  decodeEventLenient,
  decodeSpecOwnership,
  forkEventCodec,
  forkPrefixCodec,
  forkSpecCodec,
  geminiCacheEntryCodec,
  parseWireJson,
  permissionResponseCodec,
  runStateCodec,
} from "./codec.js";
import { ProtocolError } from "./errors.js";
import {
  MAX_CONTROL_BYTES,
  MAX_EVENT_BYTES,
  MAX_JSON_DEPTH,
  MAX_PREFIX_BYTES,
  MAX_SPEC_BYTES,
} from "./limits.js";
import { withNativeParseWatched } from "./test-support/native-json.js";
import { emptyUsageTotals } from "./usage.js";

/** The ProtocolError `fn` throws, as `{ code, message, path }`. */
function thrown(fn: () => unknown): { code: string; message: string; path: readonly (string | number)[] } {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  if (!(caught instanceof ProtocolError)) throw new Error(`expected a ProtocolError, got ${String(caught)}`);
  return { code: caught.code, message: caught.message, path: caught.path };
}

const utf8 = (text: string) => new TextEncoder().encode(text);
/** `depth` nested arrays. */
const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const zeros = (n: number) => Array<number>(n).fill(0);

/** The fields every event has. */
const envelope = { v: 1, run_id: "run-1", seq: 3, attempt: 1, ts: 1 };

const prefix = () => ({
  params: { model: "claude-x", messages: [{ role: "user", content: "Hi." }] },
});
const spec = (prefixField: unknown) => ({
  v: 1,
  run_id: "run-1",
  parent: { agent_id: "agent-1" },
  directive: "Find the flaky test.",
  prefix: prefixField,
  created_at: 1_700_000_000_000,
});

describe("parseWireJson", () => {
  it("accepts bytes up to the limit exactly and names both sizes when refusing", () => {
    expect(parseWireJson(utf8("[1]"), 3)).toEqual([1]);
    expect(thrown(() => parseWireJson(utf8("[1]"), 2))).toEqual({
      code: "payload_too_large",
      message: "payload of 3 bytes exceeds the limit of 2",
      path: [],
    });
    expect(thrown(() => parseWireJson("[1]", 2)).code).toBe("payload_too_large");
  });

  it("says what is wrong with bytes that are not UTF-8 or not JSON", () => {
    expect(thrown(() => parseWireJson(new Uint8Array([0x5b, 0xc3]), 10))).toEqual({
      code: "invalid_utf8",
      message: "payload is not valid UTF-8",
      path: [],
    });
    const notJson = thrown(() => parseWireJson("{x", 10));
    expect(notJson.code).toBe("invalid_json");
    expect(notJson.message).toMatch(/^payload is not JSON: ./);
  });

  it("returns scalars as they are", () => {
    expect(parseWireJson("null", 10)).toBeNull();
    expect(parseWireJson('"a"', 10)).toBe("a");
    expect(parseWireJson("7", 10)).toBe(7);
  });

  it("points a too-deep container's path through object keys after commas and array indexes", () => {
    const text = `{"k":"v","list":[0,"s",${nested(MAX_JSON_DEPTH)}]}`;
    expect(thrown(() => parseWireJson(text, 1 << 20))).toEqual({
      code: "too_deep",
      message: `JSON nesting exceeds ${MAX_JSON_DEPTH} levels`,
      path: ["list", 2, ...zeros(MAX_JSON_DEPTH - 2)],
    });
  });

  it("decodes an escaped key in the path, and keeps a key JSON cannot read as written", () => {
    const escaped = `{"a\\"b\\u0041":${nested(MAX_JSON_DEPTH)}}`;
    expect(thrown(() => parseWireJson(escaped, 1 << 20)).path).toEqual([
      'a"bA',
      ...zeros(MAX_JSON_DEPTH - 1),
    ]);
    const malformed = `{"a\\q":${nested(MAX_JSON_DEPTH)}}`;
    expect(thrown(() => parseWireJson(malformed, 1 << 20)).path).toEqual([
      "a\\q",
      ...zeros(MAX_JSON_DEPTH - 1),
    ]);
  });

  it("reads escaped keys without the native parser, which V8 12.8+ may misread, and the rest with it", () => {
    // The stand-in refuses an object text with any escape, so only the routing can make this pass.
    const escaped = withNativeParseWatched(() => parseWireJson('{"a":{"\\"":1},"b\\n":[]}', 100));
    expect(escaped.result).toEqual({ a: { '"': 1 }, "b\n": [] });
    expect(escaped.nativeTexts).toEqual(['"\\""', '"b\\n"']);
    const valueOnly = '{"a":"\\""}';
    const native = withNativeParseWatched(() => thrown(() => parseWireJson(valueOnly, 100)).code);
    expect(native).toEqual({ result: "invalid_json", nativeTexts: [valueOnly] });
  });

  it("counts a closed container out: siblings are not nested", () => {
    const siblings = `[${Array(10)
      .fill(nested(MAX_JSON_DEPTH - 1))
      .join(",")}]`;
    expect(parseWireJson(siblings, 1 << 20)).toHaveLength(10);
    const object = (depth: number): string => (depth === 0 ? "{}" : `{"a":${object(depth - 1)}}`);
    const objects = `[${Array(10)
      .fill(object(MAX_JSON_DEPTH - 2))
      .join(",")}]`;
    expect(parseWireJson(objects, 1 << 20)).toHaveLength(10);
  });

  it("leaves a comma outside any container to JSON.parse", () => {
    expect(thrown(() => parseWireJson("1,2", 10)).code).toBe("invalid_json");
  });

  it("keeps what went wrong underneath as the cause", () => {
    for (const [data, code] of [
      [new Uint8Array([0xff]), "invalid_utf8"],
      ["{x", "invalid_json"],
    ] as const) {
      let caught: unknown;
      try {
        parseWireJson(data, 10);
      } catch (error) {
        caught = error;
      }
      expect(caught).toMatchObject({ code, cause: expect.any(Error) });
    }
  });

  it("finds __proto__ below arrays and objects, with its path, past nulls", () => {
    const text = '{"a":[null,{"b":{"ok":null,"__proto__":1}}]}';
    expect(thrown(() => parseWireJson(text, 1 << 20))).toEqual({
      code: "forbidden_key",
      message: 'key "__proto__" is not accepted',
      path: ["a", 1, "b", "__proto__"],
    });
    expect(thrown(() => parseWireJson('[0,{"__proto__":{}}]', 100)).path).toEqual([1, "__proto__"]);
    // Scalars are not walked into (null has no keys): the walk is last in, first out, so the nulls
    // come last, to be met before the forbidden keys.
    const scalarsAfter = '{"o":{"__proto__":1},"l":[{"__proto__":2},"str",null],"s":"str","n":null}';
    expect(thrown(() => parseWireJson(scalarsAfter, 200)).code).toBe("forbidden_key");
  });
});

describe("createCodec", () => {
  it("reports where a schema failed and why, or only why at the top", () => {
    const deep = thrown(() => forkSpecCodec.decode(JSON.stringify({ ...spec({ kind: "none" }), run_id: 5 })));
    expect(deep.code).toBe("invalid_spec");
    expect(deep.path).toEqual(["run_id"]);
    expect(deep.message).toMatch(/^invalid fork spec at run_id: \S/);
    const nested = thrown(() =>
      forkSpecCodec.decode(JSON.stringify({ ...spec({ kind: "none" }), parent: { agent_id: 5 } })),
    );
    expect(nested.message).toMatch(/^invalid fork spec at parent\.agent_id: /);
    const top = thrown(() => abortRequestCodec.decode("[]"));
    expect(top).toMatchObject({ code: "invalid_message", path: [] });
    expect(top.message).toMatch(/^invalid abort request: \S/);
  });

  it("refuses only a newer integer version as unsupported, and names both versions", () => {
    expect(thrown(() => abortRequestCodec.decode('{"v":2,"run_id":"run-1"}'))).toEqual({
      code: "unsupported_version",
      message: "abort request has protocol version 2; this side reads up to 1",
      path: ["v"],
    });
    for (const v of ["1.5", '"2"']) {
      expect(thrown(() => abortRequestCodec.decode(`{"v":${v},"run_id":"run-1"}`))).toMatchObject({
        code: "invalid_message",
        path: ["v"],
      });
    }
  });

  it("does not read a version where the message has none (stored prefixes)", () => {
    const stored = forkPrefixCodec.decode(JSON.stringify({ ...prefix(), v: 99 }));
    expect(stored.params).toEqual({ ...prefix().params });
  });

  it("says why a value cannot be serialised", () => {
    const cyclic: Record<string, unknown> = { v: 1, run_id: "run-1" };
    cyclic.self = cyclic;
    const cycle = thrown(() => abortRequestCodec.encode(cyclic as never));
    expect(cycle.message).toMatch(/^abort request cannot be serialised as JSON: \S/);
    expect(() => abortRequestCodec.encode(cyclic as never)).toThrow(
      expect.objectContaining({ cause: expect.any(TypeError) }),
    );
    expect(thrown(() => abortRequestCodec.encode(undefined as never))).toEqual({
      code: "invalid_message",
      message: "abort request cannot be serialised as JSON",
      path: [],
    });
  });

  it("carries each message's size limit", () => {
    expect(forkSpecCodec.maxBytes).toBe(MAX_SPEC_BYTES);
    expect(createForkSpecCodec({ maxBytes: 5 }).maxBytes).toBe(5);
    expect(forkPrefixCodec.maxBytes).toBe(MAX_PREFIX_BYTES);
    expect(forkEventCodec.maxBytes).toBe(MAX_EVENT_BYTES);
    expect(runStateCodec.maxBytes).toBe(MAX_EVENT_BYTES);
    expect(abortRequestCodec.maxBytes).toBe(MAX_CONTROL_BYTES);
    expect(permissionResponseCodec.maxBytes).toBe(MAX_CONTROL_BYTES);
  });

  it("encodes to the UTF-8 JSON text of the value", () => {
    const value = { v: 1 as const, run_id: "run-1", reason: "é", requested_at: 1 };
    expect(new TextDecoder().decode(abortRequestCodec.encode(value))).toBe(JSON.stringify(value));
  });
});

describe("fork spec prefixes", () => {
  it("a spec codec with its own limit checks size, version and schema like the default one", () => {
    const codec = createForkSpecCodec({ maxBytes: 4096 });
    const valid = spec({ kind: "inline", prefix: prefix() });
    expect(codec.decode(JSON.stringify(valid)).run_id).toBe("run-1");
    expect(codec.decode(codec.encode(valid as never)).directive).toBe(valid.directive);
    expect(thrown(() => codec.decode(JSON.stringify({ ...valid, directive: "x".repeat(4096) }))).code).toBe(
      "payload_too_large",
    );
    expect(thrown(() => codec.decode(JSON.stringify({ ...valid, v: 2 })))).toMatchObject({
      code: "unsupported_version",
      message: "fork spec has protocol version 2; this side reads up to 1",
    });
    const invalid = thrown(() => codec.decode(JSON.stringify({ ...valid, run_id: 5 })));
    expect(invalid.code).toBe("invalid_spec");
    expect(invalid.message).toMatch(/^invalid fork spec at run_id: /);
  });

  it("keeps an inline prefix's params and reply as sent: key order and unknown fields", () => {
    const params = { messages: [{ content: "Hi.", role: "user" }], model: "claude-x", zz_new: 1 };
    const reply = { content: [{ text: "ok", type: "text" }], role: "assistant" };
    const raw = { params, reply };
    const decoded = forkSpecCodec.decode(JSON.stringify(spec({ kind: "inline", prefix: raw })));
    expect(decoded.prefix.kind).toBe("inline");
    expect(JSON.stringify(decoded.prefix.kind === "inline" ? decoded.prefix.prefix : null)).toBe(
      JSON.stringify(raw),
    );
    const stored = forkPrefixCodec.decode(JSON.stringify(raw));
    expect(JSON.stringify(stored)).toBe(JSON.stringify(raw));
  });

  it("keeps a native (OpenAI) parent's request and reply as sent, key order and unknown fields", () => {
    const params = { model: "gpt-5", messages: [{ role: "user", content: "Hi." }] };
    const native = {
      api: "openai-chat",
      request: {
        stream: true,
        model: "gpt-5",
        messages: [{ content: "Hi.", role: "user" }],
        zz_new: { b: 1, a: 2 },
      },
      reply: [{ tool_calls: [], content: "ok", role: "assistant" }],
    };
    const raw = { params, native };
    const decoded = forkSpecCodec.decode(JSON.stringify(spec({ kind: "inline", prefix: raw })));
    expect(JSON.stringify(decoded.prefix.kind === "inline" ? decoded.prefix.prefix : null)).toBe(
      JSON.stringify(raw),
    );
    expect(JSON.stringify(forkPrefixCodec.decode(JSON.stringify(raw)))).toBe(JSON.stringify(raw));
    // Without a native prefix none appears.
    expect("native" in forkPrefixCodec.decode(JSON.stringify({ params }))).toBe(false);
    // A native prefix of an API forkd does not speak is refused, not carried.
    expect(
      thrown(() => forkPrefixCodec.decode(JSON.stringify({ params, native: { ...native, api: "cohere" } })))
        .path,
    ).toEqual(["native", "api"]);
    // A Gemini one carries the model its URL named, its bytes kept as they are.
    const gemini = {
      params,
      native: { api: "gemini", model: "gemini-2.5-flash", request: { contents: [], z: 1, a: 2 }, reply: [] },
    };
    expect(JSON.stringify(forkPrefixCodec.decode(JSON.stringify(gemini)))).toBe(JSON.stringify(gemini));
  });

  it("points into the union branch that got furthest", () => {
    // content is a string or a list of blocks: the list got further, so the path names the block.
    const bad = {
      params: { model: "claude-x", messages: [{ role: "user", content: [{ text: "no type" }] }] },
    };
    expect(thrown(() => forkPrefixCodec.decode(JSON.stringify(bad))).path).toEqual([
      "params",
      "messages",
      0,
      "content",
      0,
      "type",
    ]);
  });

  it("reports the union itself when no branch got further than another", () => {
    // An error path element is a string or a number: a boolean fails both branches at the same depth.
    const failed = {
      ...envelope,
      type: "failed",
      error: { code: "x", message: "m", retryable: false, path: [true] },
      usage: emptyUsageTotals(),
    };
    const union = z.union([z.string(), z.number()]).safeParse(true).error!.issues[0]!.message;
    expect(thrown(() => forkEventCodec.decode(JSON.stringify(failed)))).toEqual({
      code: "invalid_event",
      message: `invalid event at error.path.0: ${union}`,
      path: ["error", "path", 0],
    });
  });

  it("keeps a stored prefix's reference as validated", () => {
    const ref = { kind: "ref", hash: "a".repeat(64), size: 10 };
    expect(forkSpecCodec.decode(JSON.stringify(spec(ref))).prefix).toEqual(ref);
  });

  it("adds no reply to an inline prefix that has none", () => {
    const decoded = forkSpecCodec.decode(JSON.stringify(spec({ kind: "inline", prefix: prefix() })));
    expect(Object.keys(decoded.prefix.kind === "inline" ? decoded.prefix.prefix : {})).not.toContain("reply");
  });
});

describe("decodeEventLenient", () => {
  const heartbeat = {
    ...envelope,
    type: "heartbeat",
    daemon_id: "d1",
    turn: 2,
  };

  it("validates a known type in full, and returns an unknown one with its envelope", () => {
    expect(decodeEventLenient(JSON.stringify(heartbeat))).toMatchObject({ kind: "event", event: heartbeat });
    expect(thrown(() => decodeEventLenient(JSON.stringify({ ...heartbeat, daemon_id: 5 }))).path).toEqual([
      "daemon_id",
    ]);
    expect(decodeEventLenient(JSON.stringify({ ...heartbeat, type: "x.new", daemon_id: 5 }))).toMatchObject({
      kind: "unknown",
      type: "x.new",
    });
  });

  it("refuses a payload that is no object with the codec's error, not a TypeError", () => {
    for (const text of ["null", "7", '"heartbeat"']) {
      expect(thrown(() => decodeEventLenient(text))).toMatchObject({ code: "invalid_event", path: [] });
    }
  });
});

describe("gemini cache entries", () => {
  it("round-trips both states and names itself when an entry is not one", () => {
    const held = { v: 1, state: "held", holder: "daemon-a", lease_until: 1_763_776_871_000 } as const;
    const ready = {
      v: 1,
      state: "ready",
      name: "cachedContents/abc",
      expires_at: 1_763_776_931_000,
      tokens: 46_222,
    } as const;
    expect(geminiCacheEntryCodec.decode(geminiCacheEntryCodec.encode(held))).toEqual(held);
    expect(geminiCacheEntryCodec.decode(geminiCacheEntryCodec.encode(ready))).toEqual(ready);
    expect(geminiCacheEntryCodec.decode(geminiCacheEntryCodec.encode({ ...ready, name: null }))).toEqual({
      ...ready,
      name: null,
    });
    expect(() => geminiCacheEntryCodec.decode('{"v":1,"state":"ready","name":"x"}')).toThrow(
      /^invalid gemini cache entry/,
    );
    expect(() => geminiCacheEntryCodec.decode('{"v":1,"state":"gone"}')).toThrow(ProtocolError);
  });
});

describe("decodeSpecOwnership", () => {
  const owned = {
    ...spec({ kind: "inline", prefix: prefix() }),
    group_id: "group-1",
    owner_token: "a".repeat(64),
  };
  /** `value` serialised, padded with spaces to exactly `size` bytes. */
  const ofSize = (value: unknown, size: number) => {
    const text = JSON.stringify(value);
    return utf8(`${text}${" ".repeat(size - text.length)}`);
  };

  it("reads whose run a spec is and nothing else", () => {
    expect(decodeSpecOwnership(utf8(JSON.stringify(owned)))).toEqual({
      v: 1,
      run_id: "run-1",
      group_id: "group-1",
      owner_token: "a".repeat(64),
      prefix: { kind: "inline" },
    });
  });

  it("does not walk the conversation: nesting the full decode refuses is no concern of its", () => {
    const deep = { ...owned, prefix: { kind: "inline", prefix: JSON.parse(nested(MAX_JSON_DEPTH + 10)) } };
    expect(thrown(() => forkSpecCodec.decode(utf8(JSON.stringify(deep)))).code).toBe("too_deep");
    expect(decodeSpecOwnership(utf8(JSON.stringify(deep))).owner_token).toBe("a".repeat(64));
  });

  it("reads an escaped ownership key as the full decode does, without the native parser", () => {
    const text = JSON.stringify(owned).replace('"owner_token"', '"owner_toke\\u006e"');
    const watched = withNativeParseWatched(() => decodeSpecOwnership(utf8(text)).owner_token);
    expect(watched.result).toBe("a".repeat(64));
    expect(forkSpecCodec.decode(text).owner_token).toBe("a".repeat(64));
  });

  it("accepts a spec of the size limit exactly and refuses one byte more", () => {
    expect(decodeSpecOwnership(ofSize(owned, MAX_SPEC_BYTES)).run_id).toBe("run-1");
    expect(thrown(() => decodeSpecOwnership(ofSize(owned, MAX_SPEC_BYTES + 1)))).toEqual({
      code: "payload_too_large",
      message: `payload of ${MAX_SPEC_BYTES + 1} bytes exceeds the limit of ${MAX_SPEC_BYTES}`,
      path: [],
    });
  });

  it("refuses what is not JSON, a newer version and ownership fields of the wrong shape", () => {
    expect(thrown(() => decodeSpecOwnership(new Uint8Array([0x7b, 0xc3])))).toEqual({
      code: "invalid_json",
      message: "fork spec is not UTF-8 JSON",
      path: [],
    });
    let notJson: unknown;
    try {
      decodeSpecOwnership(utf8("{x"));
    } catch (error) {
      notJson = error;
    }
    expect(notJson).toMatchObject({ code: "invalid_json", cause: expect.any(SyntaxError) });
    expect(thrown(() => decodeSpecOwnership(utf8(JSON.stringify({ ...owned, v: 2 }))))).toMatchObject({
      code: "unsupported_version",
      message: "fork spec has protocol version 2; this side reads up to 1",
    });
    const badToken = thrown(() => decodeSpecOwnership(utf8(JSON.stringify({ ...owned, owner_token: "zz" }))));
    expect(badToken).toMatchObject({ code: "invalid_spec", path: ["owner_token"] });
    expect(badToken.message).toMatch(/^invalid fork spec at owner_token: /);
    const badKind = thrown(() =>
      decodeSpecOwnership(utf8(JSON.stringify({ ...owned, prefix: { kind: "elsewhere" } }))),
    );
    expect(badKind).toMatchObject({ code: "invalid_spec", path: ["prefix", "kind"] });
    expect(thrown(() => decodeSpecOwnership(utf8("[]"))).code).toBe("invalid_spec");
  });
});
