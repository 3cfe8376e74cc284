// A corpus of hostile and malformed inputs, table-driven: each is refused with the right code and
// field path, and none crashes the process or pollutes a prototype.
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { forkSpecArb, jsonArb } from "./arbitraries.js";
import {
  abortRequestCodec,
  type Codec,
  createForkSpecCodec,
  daemonInfoCodec,
  decodeEventLenient,
  forkEventCodec,
  forkPrefixCodec,
  forkSpecCodec,
  parseWireJson,
  permissionRequestCodec,
  permissionResponseCodec,
  runStateCodec,
  toolHostRequestCodec,
  toolHostResponseCodec,
} from "./codec.js";
import { PROTOCOL_ERROR_CODES, ProtocolError, type ProtocolErrorCode } from "./errors.js";
import { FailedEventSchema } from "./events.js";
import {
  MAX_CONTROL_BYTES,
  MAX_EVENT_BYTES,
  MAX_JSON_DEPTH,
  MAX_PREFIX_BYTES,
  MAX_RUN_ID_LENGTH,
  MAX_SPEC_BYTES,
} from "./limits.js";
import { MAX_CACHE_LEADER_WAIT_MS } from "./spec.js";
import { forkSubjects } from "./subjects.js";
import { emptyUsageTotals } from "./usage.js";

/** Runs `fn` and returns the ProtocolError it throws; fails the test on anything else. */
function refusal(fn: () => unknown): ProtocolError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return error as ProtocolError;
  }
  throw new Error("expected a ProtocolError, nothing was thrown");
}

const MB = 1024 * 1024;
const utf8 = (text: string) => new TextEncoder().encode(text);

// A minimal valid spec and event; the corpus mutates copies of them.
const spec = () => ({
  v: 1,
  run_id: "run-1",
  parent: { agent_id: "agent-1" },
  directive: "Find the flaky test.",
  prefix: {
    kind: "inline",
    prefix: {
      params: {
        model: "claude-x",
        system: "You are a coding agent.",
        tools: [{ name: "Read", input_schema: { type: "object" } }],
        messages: [
          { role: "user", content: "Fix it." },
          {
            role: "assistant",
            content: [{ type: "tool_use", id: "toolu_1", name: "Read", input: { path: "a.ts" } }],
          },
        ],
      },
    },
  },
  created_at: 1_700_000_000_000,
});
const event = () => ({
  v: 1,
  run_id: "run-1",
  seq: 3,
  attempt: 1,
  ts: 1_700_000_000_000,
  type: "heartbeat",
  daemon_id: "d1",
  turn: 2,
});
const json = (value: unknown) => JSON.stringify(value);

/** `base` with `path` set to `value` (or deleted when `value` is `DELETE`). */
const DELETE = Symbol("delete");
function set(base: object, path: (string | number)[], value: unknown): object {
  const copy = structuredClone(base) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (value === DELETE) delete node[last];
  else node[last] = value;
  return copy;
}

const params = ["prefix", "prefix", "params"];

interface Row {
  name: string;
  // biome-ignore lint/suspicious/noExplicitAny: any codec of the table
  codec: Codec<any, any>;
  input: string | Uint8Array;
  code: ProtocolErrorCode;
  path: (string | number)[];
}

const specRow = (
  name: string,
  input: string | Uint8Array,
  code: ProtocolErrorCode,
  path: (string | number)[],
): Row => ({
  name,
  codec: forkSpecCodec,
  input,
  code,
  path,
});
const mutated = (name: string, path: (string | number)[], value: unknown, errorPath = path): Row =>
  specRow(name, json(set(spec(), path, value)), "invalid_spec", errorPath);
const eventRow = (name: string, input: string, code: ProtocolErrorCode, path: (string | number)[]): Row => ({
  name,
  codec: forkEventCodec,
  input,
  code,
  path,
});

const deep = (levels: number) => "[".repeat(levels) + "]".repeat(levels);
const deepObject = (levels: number) => `${'{"a":'.repeat(levels)}0${"}".repeat(levels)}`;

const corpus: Row[] = [
  // Wrong types.
  mutated("run_id is a number", ["run_id"], 5),
  mutated("created_at is a string", ["created_at"], "now"),
  mutated("directive is null", ["directive"], null),
  mutated("directive is empty", ["directive"], ""),
  mutated("parent is a string", ["parent"], "me"),
  mutated("prefix kind is unknown", ["prefix", "kind"], "weird"),
  mutated("limits.max_turns is negative", ["limits"], { max_turns: -1 }, ["limits", "max_turns"]),
  mutated("limits.max_turns is fractional", ["limits"], { max_turns: 1.5 }, ["limits", "max_turns"]),
  mutated("permissions.mode is unknown", ["permissions"], { mode: "sometimes" }, ["permissions", "mode"]),
  mutated("messages is a string", [...params, "messages"], "hello"),
  mutated(
    "a message has role tool (not user, assistant or system)",
    [...params, "messages", 0, "role"],
    "tool",
  ),
  mutated("a content block has no type", [...params, "messages", 1, "content", 0, "type"], DELETE),
  mutated("content is a number (no branch of the union fits)", [...params, "messages", 0, "content"], 5),
  mutated(
    "a system block has a numeric type",
    [...params, "system"],
    [{ type: 1, text: "x" }],
    [...params, "system", 0, "type"],
  ),
  mutated("a tool has an empty name", [...params, "tools", 0, "name"], ""),
  mutated("model is missing", [...params, "model"], DELETE),
  mutated("traceparent is malformed", ["trace"], { traceparent: "00-abc" }, ["trace", "traceparent"]),
  mutated("lineage holds an invalid run id", ["parent", "lineage"], ["ok", "a.b"], ["parent", "lineage", 1]),
  specRow("payload is null", "null", "invalid_spec", []),
  specRow("payload is an array", "[]", "invalid_spec", []),
  specRow("payload is a string", '"spec"', "invalid_spec", []),
  specRow("payload is a number", "42", "invalid_spec", []),
  // Missing fields.
  mutated("no run_id", ["run_id"], DELETE),
  mutated("no directive", ["directive"], DELETE),
  mutated("no prefix", ["prefix"], DELETE),
  mutated("no created_at", ["created_at"], DELETE),
  mutated("no parent.agent_id", ["parent", "agent_id"], DELETE),
  mutated("inline prefix without the prefix", ["prefix", "prefix"], DELETE),
  mutated("no v", ["v"], DELETE),
  // Prototype keys.
  specRow(
    "__proto__ at the top level",
    `{"__proto__":{"polluted":true},${json(spec()).slice(1)}`,
    "forbidden_key",
    ["__proto__"],
  ),
  specRow(
    "__proto__ spelled \\u005f_proto__",
    `{"\\u005f_proto__":{"polluted":true},${json(spec()).slice(1)}`,
    "forbidden_key",
    ["__proto__"],
  ),
  specRow(
    "__proto__ spelled with every letter escaped",
    `{"\\u005f\\u005f\\u0070\\u0072\\u006f\\u0074\\u006f\\u005f\\u005f":{"polluted":true},${json(spec()).slice(1)}`,
    "forbidden_key",
    ["__proto__"],
  ),
  specRow(
    "__proto__ nested in a tool input",
    json(spec()).replace('{"path":"a.ts"}', '{"path":"a.ts","__proto__":{"polluted":true}}'),
    "forbidden_key",
    [...params, "messages", 1, "content", 0, "input", "__proto__"],
  ),
  specRow(
    "__proto__ nested in an array, escaped",
    json(set(spec(), ["parent", "lineage"], [])).replace('"lineage":[]', '"lineage":[{"\\u005f_proto__":1}]'),
    "forbidden_key",
    ["parent", "lineage", 0, "__proto__"],
  ),
  // Size.
  specRow("a 10 MB spec", json(set(spec(), ["directive"], "x".repeat(10 * MB))), "payload_too_large", []),
  specRow("one byte over MAX_SPEC_BYTES", "x".repeat(MAX_SPEC_BYTES + 1), "payload_too_large", []),
  specRow(
    "a 10 MB spec, as bytes",
    utf8(json(set(spec(), ["directive"], "x".repeat(10 * MB)))),
    "payload_too_large",
    [],
  ),
  eventRow(
    "a 10 MB event",
    json({ ...event(), type: "llm.delta", text: "x".repeat(10 * MB) }),
    "payload_too_large",
    [],
  ),
  {
    name: "a 10 MB directive in a spec whose limit was raised",
    codec: createForkSpecCodec({ maxBytes: 16 * MB }),
    input: json(set(spec(), ["directive"], "x".repeat(10 * MB))),
    code: "invalid_spec",
    path: ["directive"],
  },
  // Depth: the walk is iterative and JSON.parse in V8 is too: no stack overflow.
  specRow("10k nested arrays", deep(10_000), "too_deep", Array(MAX_JSON_DEPTH).fill(0)),
  specRow("10k nested objects", deepObject(10_000), "too_deep", Array(MAX_JSON_DEPTH).fill("a")),
  specRow("1M nested arrays (2 MB)", deep(1_000_000), "too_deep", Array(MAX_JSON_DEPTH).fill(0)),
  specRow(
    "10k levels inside a tool input",
    json(spec()).replace('{"path":"a.ts"}', deep(10_000)),
    "too_deep",
    [...params, "messages", 1, "content", 0, "input", ...Array(MAX_JSON_DEPTH - 8).fill(0)],
  ),
  // Bytes that are not UTF-8.
  specRow("a lone 0xff byte", new Uint8Array([0xff]), "invalid_utf8", []),
  specRow("an overlong '/'", new Uint8Array([0x22, 0xc0, 0xaf, 0x22]), "invalid_utf8", []),
  specRow(
    "a UTF-16 surrogate encoded as UTF-8",
    new Uint8Array([0x22, 0xed, 0xa0, 0x80, 0x22]),
    "invalid_utf8",
    [],
  ),
  specRow("a truncated multi-byte sequence", new Uint8Array([0x22, 0xe2, 0x82, 0x22]), "invalid_utf8", []),
  specRow(
    "invalid UTF-8 inside a valid spec",
    new Uint8Array([...utf8(json(spec()).slice(0, -1)), 0x2c, 0x22, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
    "invalid_utf8",
    [],
  ),
  // Not JSON.
  specRow("truncated JSON", json(spec()).slice(0, 60), "invalid_json", []),
  specRow("empty payload", "", "invalid_json", []),
  specRow("empty bytes", new Uint8Array(0), "invalid_json", []),
  specRow("a trailing comma", `${json(spec()).slice(0, -1)},}`, "invalid_json", []),
  specRow("NaN", json(spec()).replace("1700000000000", "NaN"), "invalid_json", []),
  specRow("single quotes", "{'v':1}", "invalid_json", []),
  specRow("two documents", `${json(spec())}${json(spec())}`, "invalid_json", []),
  // Versions.
  specRow("v is 2", json(set(spec(), ["v"], 2)), "unsupported_version", ["v"]),
  specRow(
    "v is 2 and the rest is garbage: the version is checked first",
    json({ v: 2, hello: "world" }),
    "unsupported_version",
    ["v"],
  ),
  mutated('v is "1"', ["v"], "1"),
  mutated("v is 0", ["v"], 0),
  mutated("v is 1.5", ["v"], 1.5),
  mutated("v is null", ["v"], null),
  // Prefix references.
  mutated("prefix hash in uppercase", ["prefix"], { kind: "ref", hash: "A".repeat(64), size: 10 }, [
    "prefix",
    "hash",
  ]),
  mutated("prefix hash of 63 characters", ["prefix"], { kind: "ref", hash: "a".repeat(63), size: 10 }, [
    "prefix",
    "hash",
  ]),
  mutated(
    "prefix hash with a scheme",
    ["prefix"],
    { kind: "ref", hash: `sha256:${"a".repeat(64)}`, size: 10 },
    ["prefix", "hash"],
  ),
  mutated("prefix hash not hex", ["prefix"], { kind: "ref", hash: "g".repeat(64), size: 10 }, [
    "prefix",
    "hash",
  ]),
  mutated("prefix of size 0", ["prefix"], { kind: "ref", hash: "a".repeat(64), size: 0 }, ["prefix", "size"]),
  mutated(
    "prefix larger than MAX_PREFIX_BYTES",
    ["prefix"],
    { kind: "ref", hash: "a".repeat(64), size: MAX_PREFIX_BYTES + 1 },
    ["prefix", "size"],
  ),
  // Events.
  eventRow("event with seq 0", json({ ...event(), seq: 0 }), "invalid_event", ["seq"]),
  eventRow("event with seq -1", json({ ...event(), seq: -1 }), "invalid_event", ["seq"]),
  eventRow("event with seq 1.5", json({ ...event(), seq: 1.5 }), "invalid_event", ["seq"]),
  eventRow("event with seq beyond 2^53", json({ ...event(), seq: 2 ** 53 }), "invalid_event", ["seq"]),
  eventRow("event with attempt 0", json({ ...event(), attempt: 0 }), "invalid_event", ["attempt"]),
  eventRow("event of an unknown type", json({ ...event(), type: "llm.thought" }), "invalid_event", ["type"]),
  eventRow("event without a type", json({ ...event(), type: undefined }), "invalid_event", ["type"]),
  eventRow("event of v 2", json({ ...event(), v: 2 }), "unsupported_version", ["v"]),
  eventRow("event with __proto__", json(event()).replace("{", '{"__proto__":{},'), "forbidden_key", [
    "__proto__",
  ]),
  eventRow("event with an invalid run id", json({ ...event(), run_id: "a.b" }), "invalid_event", ["run_id"]),
  eventRow(
    "failed event without usage",
    json({ ...event(), type: "failed", error: { code: "x", message: "", retryable: false } }),
    "invalid_event",
    ["usage"],
  ),
  // Control and registry messages.
  {
    name: "abort of v 2",
    codec: abortRequestCodec,
    input: json({ v: 2 }),
    code: "unsupported_version",
    path: ["v"],
  },
  {
    name: "abort without requested_at",
    codec: abortRequestCodec,
    input: json({ v: 1, run_id: "r" }),
    code: "invalid_message",
    path: ["requested_at"],
  },
  {
    name: "permission response 'maybe'",
    codec: permissionResponseCodec,
    input: json({ v: 1, decision: "maybe" }),
    code: "invalid_message",
    path: ["decision"],
  },
  {
    name: "permission request without input",
    codec: permissionRequestCodec,
    input: json({ v: 1, run_id: "r", tool_use_id: "t", name: "Bash", requested_at: 0 }),
    code: "invalid_message",
    path: ["input"],
  },
  {
    name: "tool host request with __proto__ in input",
    codec: toolHostRequestCodec,
    input: '{"v":1,"run_id":"r","tool_use_id":"t","name":"n","input":{"\\u005f_proto__":{"x":1}}}',
    code: "forbidden_key",
    path: ["input", "__proto__"],
  },
  {
    name: "tool host response content as a number",
    codec: toolHostResponseCodec,
    input: json({ v: 1, content: 5 }),
    code: "invalid_message",
    path: ["content"],
  },
  {
    name: "run state with a bad status",
    codec: runStateCodec,
    input: json({
      v: 1,
      run_id: "r",
      status: "zombie",
      attempt: 0,
      last_seq: 0,
      created_at: 0,
      updated_at: 0,
    }),
    code: "invalid_message",
    path: ["status"],
  },
  {
    name: "daemon info with a dotted daemon id",
    codec: daemonInfoCodec,
    input: json({
      v: 1,
      daemon_id: "a.b",
      host: "h",
      pid: 1,
      version: "0",
      protocol: 1,
      state: "running",
      capacity: 1,
      load: 0,
      started_at: 0,
      heartbeat_at: 0,
    }),
    code: "invalid_message",
    path: ["daemon_id"],
  },
  {
    name: "stored prefix over MAX_EVENT_BYTES is fine, but not without params",
    codec: forkPrefixCodec,
    input: json({ reply: { role: "assistant", content: [] } }),
    code: "invalid_message",
    path: ["params"],
  },
];

describe("hostile input corpus", () => {
  it.each(corpus.map((row) => [row.name, row] as const))("%s", (_name, row) => {
    const error = refusal(() => row.codec.decode(row.input));
    expect({ code: error.code, path: error.path }).toEqual({ code: row.code, path: row.path });
    expect(error.retryable).toBe(false);
    expect(error.message.length).toBeLessThan(2000);
  });

  it("every error code but invalid_subject_token is produced by the corpus", () => {
    const seen = new Set(corpus.map((row) => row.code));
    expect(PROTOCOL_ERROR_CODES.filter((code) => !seen.has(code))).toEqual(["invalid_subject_token"]);
  });
});

describe("invalid run ids", () => {
  const bad = [
    "a.b",
    "*",
    ">",
    "a b",
    "",
    "x".repeat(MAX_RUN_ID_LENGTH + 1),
    "a\tb",
    "a/b",
    "é",
    "a\nb",
    "fork.>",
  ];
  const subjects = forkSubjects();

  it.each(bad.map((id) => [JSON.stringify(id.length > 20 ? `${id.slice(0, 8)}…(${id.length})` : id), id]))(
    "%s is refused by the subject builders and by the codecs",
    (_shown, id) => {
      for (const build of [
        subjects.spec,
        subjects.events,
        subjects.abort,
        subjects.permission,
        subjects.toolHost,
      ]) {
        expect(refusal(() => build(id)).code).toBe("invalid_subject_token");
      }
      const specError = refusal(() => forkSpecCodec.decode(json(set(spec(), ["run_id"], id))));
      expect({ code: specError.code, path: specError.path }).toEqual({
        code: "invalid_spec",
        path: ["run_id"],
      });
      // A cache leader is subscribed to by its run id: a wildcard there would hear every run.
      const leaderError = refusal(() =>
        forkSpecCodec.decode(json({ ...spec(), cache_leader: { run_id: id, wait_ms: 1_000 } })),
      );
      expect({ code: leaderError.code, path: leaderError.path }).toEqual({
        code: "invalid_spec",
        path: ["cache_leader", "run_id"],
      });
      const eventError = refusal(() => forkEventCodec.decode(json({ ...event(), run_id: id })));
      expect({ code: eventError.code, path: eventError.path }).toEqual({
        code: "invalid_event",
        path: ["run_id"],
      });
    },
  );

  it("a cache leader's wait is 1 ms to MAX_CACHE_LEADER_WAIT_MS, 120 s when not given", () => {
    const withWait = (wait: unknown) => json({ ...spec(), cache_leader: { run_id: "run-0", wait_ms: wait } });
    expect(forkSpecCodec.decode(withWait(1)).cache_leader?.wait_ms).toBe(1);
    expect(forkSpecCodec.decode(withWait(MAX_CACHE_LEADER_WAIT_MS)).cache_leader?.wait_ms).toBe(
      MAX_CACHE_LEADER_WAIT_MS,
    );
    for (const wait of [0, MAX_CACHE_LEADER_WAIT_MS + 1, 1.5, -1])
      expect(refusal(() => forkSpecCodec.decode(withWait(wait))).path).toEqual(["cache_leader", "wait_ms"]);
    const defaulted = forkSpecCodec.decode(json({ ...spec(), cache_leader: { run_id: "run-0" } }));
    expect(defaulted.cache_leader).toEqual({ run_id: "run-0", wait_ms: 120_000 });
  });

  it("a run id of exactly MAX_RUN_ID_LENGTH characters is accepted", () => {
    const id = "x".repeat(MAX_RUN_ID_LENGTH);
    expect(subjects.spec(id)).toBe(`agent.fork.${id}`);
    expect(forkSpecCodec.decode(json(set(spec(), ["run_id"], id))).run_id).toBe(id);
  });
});

describe("prototype keys that are plain data", () => {
  afterEach(() => {
    // Belt and braces: nothing may have reached Object.prototype.
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty("polluted");
  });

  it("constructor and prototype keys are accepted as data, anywhere, without pollution", () => {
    const hostile = {
      constructor: { prototype: { polluted: "top" } },
      prototype: { polluted: "top" },
      ...spec(),
    };
    const withKeys = set(hostile, [...params, "messages", 1, "content", 0, "input"], {
      constructor: { prototype: { polluted: "input" } },
      prototype: { polluted: "input" },
    });
    const withMore = set(withKeys, [...params, "constructor"], { prototype: { polluted: "params" } });
    const decoded = forkSpecCodec.decode(json(withMore));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    // Unknown top-level fields are dropped; inside the raw prefix they are kept as plain own data.
    expect(Object.hasOwn(decoded, "prototype")).toBe(false);
    if (decoded.prefix.kind !== "inline") throw new Error("unreachable");
    const rawParams = decoded.prefix.prefix.params as Record<string, unknown>;
    expect(Object.hasOwn(rawParams, "constructor")).toBe(true);
    expect(rawParams.constructor).toEqual({ prototype: { polluted: "params" } });
    expect(JSON.stringify(decoded.prefix.prefix.params)).toBe(
      JSON.stringify((withMore as ReturnType<typeof spec>).prefix.prefix.params),
    );
  });

  it("__proto__ never reaches a prototype, however it is spelled, in any message", () => {
    const payloads = [
      '{"__proto__":{"polluted":1}}',
      '{"\\u005f_proto__":{"polluted":1}}',
      '{"a":[{"b":{"__proto__":{"polluted":1}}}]}',
      '{"constructor":{"prototype":{"polluted":1}}}',
    ];
    for (const codec of [forkSpecCodec, forkEventCodec, abortRequestCodec, runStateCodec, forkPrefixCodec]) {
      for (const payload of payloads) {
        expect(() => codec.decode(payload)).toThrow(ProtocolError);
      }
    }
  });
});

describe("forward compatibility: unknown fields are ignored", () => {
  it("a spec with fields from a newer minor revision decodes, without them", () => {
    const newer = {
      ...spec(),
      priority: "high",
      sandbox: { kind: "firecracker" },
      parent: { agent_id: "a", team: "x" },
    };
    const decoded = forkSpecCodec.decode(json(newer));
    expect(decoded).not.toHaveProperty("priority");
    expect(decoded).not.toHaveProperty("sandbox");
    expect(decoded.parent).toEqual({ agent_id: "a", lineage: [] });
  });

  it("an event with new fields decodes, without them", () => {
    const decoded = forkEventCodec.decode(json({ ...event(), cpu_ms: 12 }));
    expect(decoded).toEqual(event());
  });

  it("any spec plus arbitrary unknown top-level fields decodes to the same spec", () => {
    const known = new Set(
      Object.keys(spec()).concat([
        "label",
        "query_source",
        "fork_call",
        "tool_filter",
        "overrides",
        "limits",
        "isolation",
        "permissions",
        "tool_host",
        "trace",
        "deadline_at",
        "cache_leader",
      ]),
    );
    fc.assert(
      fc.property(
        forkSpecArb,
        fc.dictionary(
          fc.string().filter((k) => !known.has(k) && k !== "__proto__"),
          jsonArb(2),
          { noNullPrototype: true },
        ),
        (value, extra) => {
          const bytes = forkSpecCodec.encode({ ...extra, ...value });
          expect(forkSpecCodec.decode(bytes)).toEqual(value);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe("size and depth limits, at the boundary", () => {
  it("a spec of exactly MAX_SPEC_BYTES is accepted; one more byte is not", () => {
    const base = json(spec());
    const padded = (size: number) => `${base.slice(0, -1)},"pad":"${"x".repeat(size - base.length - 9)}"}`;
    expect(utf8(padded(MAX_SPEC_BYTES)).byteLength).toBe(MAX_SPEC_BYTES);
    expect(forkSpecCodec.decode(padded(MAX_SPEC_BYTES)).run_id).toBe("run-1");
    expect(refusal(() => forkSpecCodec.decode(padded(MAX_SPEC_BYTES + 1))).code).toBe("payload_too_large");
  });

  it("size is counted in UTF-8 bytes, not UTF-16 units", () => {
    const text = json({ ...event(), type: "llm.delta", text: "é".repeat(MAX_EVENT_BYTES / 2) });
    expect(text.length).toBeLessThan(MAX_EVENT_BYTES);
    expect(refusal(() => forkEventCodec.decode(text)).code).toBe("payload_too_large");
  });

  it("an abort or permission answer of exactly MAX_CONTROL_BYTES is accepted; one more byte is not", () => {
    const abort = json({ v: 1, run_id: "run-1", reason: "stop", requested_at: 1 });
    const padded = (base: string, size: number) =>
      `${base.slice(0, -1)},"pad":"${"x".repeat(size - base.length - 9)}"}`;
    expect(utf8(padded(abort, MAX_CONTROL_BYTES)).byteLength).toBe(MAX_CONTROL_BYTES);
    expect(abortRequestCodec.decode(padded(abort, MAX_CONTROL_BYTES)).run_id).toBe("run-1");
    expect(refusal(() => abortRequestCodec.decode(padded(abort, MAX_CONTROL_BYTES + 1))).code).toBe(
      "payload_too_large",
    );
    const answer = json({ v: 1, decision: "allow" });
    expect(permissionResponseCodec.decode(padded(answer, MAX_CONTROL_BYTES)).decision).toBe("allow");
    expect(refusal(() => permissionResponseCodec.decode(padded(answer, MAX_CONTROL_BYTES + 1))).code).toBe(
      "payload_too_large",
    );
  });

  it("nesting is refused from the text, before parsing, with the path of the first too-deep container", () => {
    const text = `{"a":[1,{"b":${deep(MAX_JSON_DEPTH)}}]}`;
    const error = refusal(() => parseWireJson(text, MB));
    expect(error.code).toBe("too_deep");
    expect(error.path).toEqual(["a", 1, "b", ...Array(MAX_JSON_DEPTH - 3).fill(0)]);
    // Brackets inside strings, escaped quotes included, are text, not nesting.
    const quoted = JSON.stringify({ s: `"${"[".repeat(MAX_JSON_DEPTH * 2)}` });
    expect(parseWireJson(quoted, MB)).toEqual(JSON.parse(quoted));
  });

  it("MAX_JSON_DEPTH containers are accepted, one more is not", () => {
    expect(parseWireJson(deep(MAX_JSON_DEPTH), MB)).toBeDefined();
    expect(refusal(() => parseWireJson(deep(MAX_JSON_DEPTH + 1), MB)).code).toBe("too_deep");
  });
});

describe("encode refuses what decode would refuse", () => {
  const valid = spec() as Parameters<typeof forkSpecCodec.encode>[0];

  it.each([
    ["an invalid run id", { ...valid, run_id: "a.b" }, "invalid_spec", ["run_id"]],
    ["a missing directive", { ...valid, directive: undefined }, "invalid_spec", ["directive"]],
    ["NaN created_at (JSON null)", { ...valid, created_at: Number.NaN }, "invalid_spec", ["created_at"]],
    ["v 2", { ...valid, v: 2 }, "unsupported_version", ["v"]],
    ["a 10 MB directive", { ...valid, directive: "x".repeat(10 * MB) }, "payload_too_large", []],
    [
      "a tool input 200 levels deep",
      set(valid, [...params, "messages", 1, "content", 0, "input"], JSON.parse(deep(200))),
      "too_deep",
      [...params, "messages", 1, "content", 0, "input", ...Array(MAX_JSON_DEPTH - 8).fill(0)],
    ],
    [
      "an own __proto__ key",
      set(valid, ["parent"], JSON.parse('{"agent_id":"a","__proto__":{}}')),
      "forbidden_key",
      ["parent", "__proto__"],
    ],
  ] as const)("%s", (_name, value, code, path) => {
    const error = refusal(() => forkSpecCodec.encode(value as never));
    expect({ code: error.code, path: error.path }).toEqual({ code, path });
  });

  it("a cycle or a BigInt is refused with the codec's code, not a TypeError", () => {
    const cyclic: Record<string, unknown> = { ...valid };
    cyclic.self = cyclic;
    expect(refusal(() => forkSpecCodec.encode(cyclic as never)).code).toBe("invalid_spec");
    expect(refusal(() => forkEventCodec.encode({ ...event(), seq: 1n } as never)).code).toBe("invalid_event");
    expect(refusal(() => abortRequestCodec.encode(undefined as never)).code).toBe("invalid_message");
  });

  it("an event of an unknown type cannot be encoded", () => {
    expect(refusal(() => forkEventCodec.encode({ ...event(), type: "llm.thought" } as never)).path).toEqual([
      "type",
    ]);
  });
});

describe("decodeEventLenient", () => {
  it("returns a known event fully validated", () => {
    expect(decodeEventLenient(json(event()))).toEqual({ kind: "event", event: event() });
  });

  it("returns an unknown type with a valid envelope as kind unknown, raw fields included", () => {
    const future = { ...event(), type: "sandbox.snapshot", daemon_id: undefined, turn: undefined, bytes: 42 };
    const result = decodeEventLenient(utf8(json(future)));
    expect(result).toEqual({
      kind: "unknown",
      type: "sandbox.snapshot",
      envelope: {
        v: 1,
        run_id: "run-1",
        seq: 3,
        attempt: 1,
        ts: 1_700_000_000_000,
        type: "sandbox.snapshot",
      },
      raw: JSON.parse(json(future)),
    });
  });

  it.each([
    ["a known type that is malformed", { ...event(), turn: -1 }, "invalid_event", ["turn"]],
    ["an unknown type with seq 0", { ...event(), type: "x.y", seq: 0 }, "invalid_event", ["seq"]],
    [
      "an unknown type without run_id",
      { ...event(), type: "x.y", run_id: undefined },
      "invalid_event",
      ["run_id"],
    ],
    [
      "a type that is not a dotted lowercase name",
      { ...event(), type: "Drop Table" },
      "invalid_event",
      ["type"],
    ],
    ["a non-string type", { ...event(), type: 7 }, "invalid_event", ["type"]],
    [
      "v 2 (a breaking change is never skipped silently)",
      { ...event(), type: "x.y", v: 2 },
      "unsupported_version",
      ["v"],
    ],
    ["an array", [event()], "invalid_event", []],
  ] as const)("still refuses %s", (_name, value, code, path) => {
    const error = refusal(() => decodeEventLenient(json(value)));
    expect({ code: error.code, path: error.path }).toEqual({ code, path });
  });

  it("still applies the pre-checks", () => {
    expect(refusal(() => decodeEventLenient(new Uint8Array([0xff]))).code).toBe("invalid_utf8");
    expect(refusal(() => decodeEventLenient("x".repeat(MAX_EVENT_BYTES + 1))).code).toBe("payload_too_large");
    expect(refusal(() => decodeEventLenient('{"__proto__":1}')).code).toBe("forbidden_key");
  });
});

describe("ProtocolError", () => {
  it.each(PROTOCOL_ERROR_CODES.map((code) => [code]))(
    "%s: toJSON round-trips through JSON and fromJSON",
    (code) => {
      const error = new ProtocolError(code, `bad ${code}`, {
        path: ["prefix", "params", "messages", 3, "role"],
        cause: new Error("x"),
      });
      const wire = JSON.parse(JSON.stringify(error));
      expect(wire).toEqual(error.toJSON());
      expect(wire).toEqual({
        name: "ProtocolError",
        code,
        message: `bad ${code}`,
        path: ["prefix", "params", "messages", 3, "role"],
        retryable: false,
      });
      const back = ProtocolError.fromJSON(wire);
      expect(back).toBeInstanceOf(ProtocolError);
      expect(back).toBeInstanceOf(Error);
      expect(back.toJSON()).toEqual(error.toJSON());
      // It fits the `error` of a failed event.
      const failed = FailedEventSchema.parse({
        ...event(),
        type: "failed",
        error: wire,
        usage: emptyUsageTotals(),
      });
      expect(failed.error).toEqual({
        code,
        message: `bad ${code}`,
        path: ["prefix", "params", "messages", 3, "role"],
        retryable: false,
      });
    },
  );

  it("a codec error keeps the zod error as its cause and toJSON does not leak it", () => {
    const error = refusal(() => forkSpecCodec.decode(json(set(spec(), ["run_id"], 5))));
    expect(error.cause).toBeDefined();
    expect(Object.keys(error.toJSON()).sort()).toEqual(["code", "message", "name", "path", "retryable"]);
    expect(error.message).toMatch(/^invalid fork spec at run_id: /);
  });

  it("toJSON returns a copy of the path", () => {
    const error = new ProtocolError("invalid_spec", "x", { path: ["a"] });
    error.toJSON().path.push("b");
    expect(error.path).toEqual(["a"]);
  });
});
