// The committed JSON Schemas and the generated parts of docs/protocol.md must be what the code
// generates, and every JSON example in the reference must decode.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  normaliseTables,
  PROTOCOL_DOC,
  REGENERATE,
  renderDoc,
  SCHEMA_DIR,
  schemaFiles,
} from "../scripts/schema-files.js";
import {
  abortRequestCodec,
  type Codec,
  callSlotsCodec,
  daemonInfoCodec,
  daemonPresenceCodec,
  decodeEventLenient,
  forkEventCodec,
  forkPrefixCodec,
  forkSpecCodec,
  geminiCacheEntryCodec,
  groupBudgetCodec,
  groupSpendCodec,
  permissionRequestCodec,
  permissionResponseCodec,
  providerThrottleCodec,
  retentionLeaseCodec,
  runStateCodec,
  steerReplyCodec,
  steerRequestCodec,
  toolHostRequestCodec,
  toolHostResponseCodec,
} from "./codec.js";
import { FORK_EVENT_TYPES } from "./events.js";
import { protocolJsonSchemas } from "./json-schema.js";

const stale = (what: string) => `${what} is out of date: run \`${REGENERATE}\` and commit the result`;

describe("docs/schema", () => {
  it("holds exactly the schemas the code generates, byte for byte", () => {
    const expected = schemaFiles();
    const committed = readdirSync(SCHEMA_DIR).filter((name) => name.endsWith(".schema.json"));
    const differing = [...expected].filter(([name, content]) => {
      try {
        return readFileSync(join(SCHEMA_DIR, name), "utf8") !== content;
      } catch {
        return true;
      }
    });
    const extra = committed.filter((name) => !expected.has(name));
    const wrong = [...differing.map(([name]) => name), ...extra];
    expect(wrong, stale(`docs/schema (${wrong.join(", ")})`)).toEqual([]);
  });

  it("names every wire message", () => {
    expect(Object.keys(protocolJsonSchemas())).toEqual([
      "fork-spec",
      "fork-prefix",
      "fork-event",
      "fork-event-envelope",
      ...FORK_EVENT_TYPES.map((type) => `fork-event-${type.replaceAll(".", "-")}`),
      "abort-request",
      "steer-request",
      "steer-reply",
      "permission-request",
      "permission-response",
      "tool-host-request",
      "tool-host-response",
      "run-state",
      "group-budget",
      "group-spend",
      "daemon-info",
      "retention-lease",
      "call-slots",
      "gemini-cache-entry",
      "daemon-presence",
      "provider-throttle",
    ]);
  });

  it("is stable: two calls give equal schemas with the same key order", () => {
    expect(JSON.stringify(protocolJsonSchemas())).toBe(JSON.stringify(protocolJsonSchemas()));
  });

  it("describes what a sender may write: defaulted fields are optional, unknown fields allowed", () => {
    const spec = protocolJsonSchemas()["fork-spec"] as {
      required: string[];
      additionalProperties?: unknown;
      properties: Record<string, { default?: unknown }>;
    };
    expect(spec.required).toEqual(["v", "run_id", "parent", "directive", "prefix", "created_at"]);
    expect(spec.additionalProperties).toBeUndefined();
    expect(spec.properties.query_source?.default).toBe("agent");
    const abort = protocolJsonSchemas()["abort-request"] as { required: string[] };
    expect(abort.required).not.toContain("reason");
  });

  it("fork-event is one of every event type", () => {
    const event = protocolJsonSchemas()["fork-event"] as {
      oneOf: { properties: { type: { const: string } } }[];
    };
    expect(event.oneOf.map((member) => member.properties.type.const).sort()).toEqual(
      [...FORK_EVENT_TYPES].sort(),
    );
  });
});

describe("docs/protocol.md", () => {
  const doc = readFileSync(PROTOCOL_DOC, "utf8");

  it("has current field tables (padding aside: Biome may re-pad them)", () => {
    const current = normaliseTables(renderDoc(doc)) === normaliseTables(doc);
    expect(current, stale("docs/protocol.md (its generated field tables)")).toBe(true);
  });

  it("links every schema file", () => {
    const missing = [...schemaFiles().keys()].filter((name) => !doc.includes(`schema/${name}`));
    expect(missing).toEqual([]);
  });

  // biome-ignore lint/suspicious/noExplicitAny: a table of codecs of different messages
  const codecs: Record<string, Codec<any, any>> = {
    "fork-spec": forkSpecCodec,
    "fork-prefix": forkPrefixCodec,
    "fork-event": forkEventCodec,
    "abort-request": abortRequestCodec,
    "steer-request": steerRequestCodec,
    "steer-reply": steerReplyCodec,
    "permission-request": permissionRequestCodec,
    "permission-response": permissionResponseCodec,
    "tool-host-request": toolHostRequestCodec,
    "tool-host-response": toolHostResponseCodec,
    "run-state": runStateCodec,
    "group-budget": groupBudgetCodec,
    "group-spend": groupSpendCodec,
    "daemon-info": daemonInfoCodec,
    "retention-lease": retentionLeaseCodec,
    "call-slots": callSlotsCodec,
    "gemini-cache-entry": geminiCacheEntryCodec,
    "daemon-presence": daemonPresenceCodec,
    "provider-throttle": providerThrottleCodec,
  };
  const examples = [...doc.matchAll(/```(json|jsonl) ([a-z-]+)\n([\s\S]*?)```/g)].flatMap(
    ([, format, tag, body]) =>
      format === "json"
        ? [[tag!, body!] as const]
        : body!
            .split("\n")
            .filter((line) => line.trim() !== "")
            .map((line) => [tag!, line] as const),
  );

  it("has an example of every message", () => {
    const tags = new Set(examples.map(([tag]) => tag));
    expect(Object.keys(codecs).filter((tag) => !tags.has(tag))).toEqual([]);
    const eventTypes = new Set(
      examples
        .filter(([tag]) => tag === "fork-event")
        .map(([, text]) => (JSON.parse(text) as { type: string }).type),
    );
    expect(FORK_EVENT_TYPES.filter((type) => !eventTypes.has(type))).toEqual([]);
  });

  it.each(examples.map(([tag, text], i) => [`${i + 1}: ${tag}`, tag, text] as const))(
    "example %s decodes",
    (_name, tag, text) => {
      if (tag === "fork-event-unknown") {
        expect(decodeEventLenient(text).kind).toBe("unknown");
        return;
      }
      const codec = codecs[tag];
      if (!codec) throw new Error(`unknown example tag ${tag}`);
      expect(() => codec.decode(text)).not.toThrow();
    },
  );

  it("the example run's events are contiguous from seq 1", () => {
    const seqs = examples
      .filter(([tag]) => tag === "fork-event")
      .map(([, text]) => JSON.parse(text) as { run_id: string; seq: number })
      .filter((event) => event.run_id === "01JD8Z3K4Q-child-1")
      .map((event) => event.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });
});
