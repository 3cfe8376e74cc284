// Hostile messages for the subjects a daemon listens to, for the fuzz test and the hostile-wire
// benchmark: deterministic (seeded), each with the refusal it must get. Built to hurt a decoder —
// deep nesting up to each limit, sizes at and over each limit, broken UTF-8 and JSON, prototype
// keys, wrong versions and shapes — and, on spec subjects, run ids that are no run ids.
import { forkSubjects, MAX_CONTROL_BYTES, MAX_JSON_DEPTH, PROTOCOL_VERSION } from "@forkd/protocol";
import { mulberry32 } from "@forkd/sim";

const subjects = forkSubjects("agent");
const encoder = new TextEncoder();

/** One hostile message and what the daemon must answer it with. */
export interface HostileMessage {
  /** `abort`: core NATS on an abort subject; `spec`: a JetStream publish on a spec subject; `advisory`: a forged max-deliveries advisory. */
  channel: "abort" | "spec" | "advisory";
  subject: string;
  payload: Uint8Array;
  /** The run id of a spec (absent for a subject token that is no run id). */
  runId?: string | undefined;
  /**
   * The error code the daemon must give it: for an abort or advisory, the code it counts; for a spec,
   * the code of its run's `failed` event; `invalid_run_id` for a spec that is removed unrun; `none`
   * for a well-formed abort of a run this daemon does not run (nothing to refuse).
   */
  expected: string;
}

/** `[[…]]` nested `depth` deep, repeated (comma-separated inside one array) up to about `bytes`. */
function nestedArrays(depth: number, bytes: number): string {
  const one = `${"[".repeat(depth)}${"]".repeat(depth)}`;
  const count = Math.max(1, Math.floor((bytes - 2) / (one.length + 1)));
  return `[${Array(count).fill(one).join(",")}]`;
}

const abortOf = (runId: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ v: PROTOCOL_VERSION, run_id: runId, reason: "fuzz", requested_at: 1, ...extra });

/** Hostile payloads for an abort subject, each with the code the codec must refuse it with. */
function abortCase(
  pick: number,
  runId: string,
  random: () => number,
): { payload: Uint8Array | string; expected: string } {
  switch (pick % 10) {
    case 0: // the audit's shape: as many 126-deep arrays as fit, here just under the control limit
      return {
        payload: nestedArrays(MAX_JSON_DEPTH - 2, MAX_CONTROL_BYTES - 64),
        expected: "invalid_message",
      };
    case 1: // one level too deep, with a megabyte behind it that must never be parsed
      return {
        payload: `${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`,
        expected: "too_deep",
      };
    case 2: // the biggest message NATS carries, far over the control limit
      return { payload: new Uint8Array(1_000_000).fill(0x5b), expected: "payload_too_large" };
    case 3: // broken UTF-8
      return { payload: Uint8Array.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]), expected: "invalid_utf8" };
    case 4: // truncated JSON
      return { payload: abortOf(runId).slice(0, 1 + Math.floor(random() * 40)), expected: "invalid_json" };
    case 5: // a prototype key, escaped
      return {
        payload: abortOf(runId).replace(/}$/, ',"\\u005f_proto__":{"polluted":true}}'),
        expected: "forbidden_key",
      };
    case 6: // a newer protocol
      return { payload: abortOf(runId, { v: 2 }), expected: "unsupported_version" };
    case 7: // wrong shapes
      return {
        payload: JSON.stringify({ v: 1, run_id: 42, requested_at: "now" }),
        expected: "invalid_message",
      };
    case 8: // a run id that is no run id
      return { payload: abortOf("a.b>c"), expected: "invalid_message" };
    default: // well-formed, for a run nobody runs here: nothing to refuse
      return { payload: abortOf(runId), expected: "none" };
  }
}

/** Hostile specs, each on its own run id, with the code of the `failed` event it must produce. */
function specCase(
  pick: number,
  runId: string,
): { payload: string | Uint8Array; expected: string; runId?: string } {
  const base = {
    v: PROTOCOL_VERSION,
    run_id: runId,
    parent: { agent_id: "fuzz" },
    directive: "fuzz",
    prefix: { kind: "none" },
    created_at: 1,
  };
  switch (pick % 8) {
    case 0:
      return { payload: "{}", expected: "invalid_spec", runId };
    case 1:
      return { payload: nestedArrays(MAX_JSON_DEPTH - 2, 64 * 1024), expected: "invalid_spec", runId };
    case 2:
      return {
        payload: `${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}1${"}".repeat(MAX_JSON_DEPTH + 1)}`,
        expected: "too_deep",
        runId,
      };
    case 3:
      return { payload: Uint8Array.from([0xff, 0xfe, 0x00]), expected: "invalid_utf8", runId };
    case 4:
      return {
        payload: JSON.stringify({ ...base, run_id: "someone-else" }),
        expected: "invalid_spec",
        runId,
      };
    case 5:
      return { payload: JSON.stringify({ ...base, v: 2 }), expected: "unsupported_version", runId };
    case 6:
      return { payload: JSON.stringify({ ...base, directive: "" }), expected: "invalid_spec", runId };
    default: // a subject token that is no run id: removed unrun
      return { payload: JSON.stringify(base), expected: "invalid_run_id" };
  }
}

/**
 * `count` hostile messages: about one spec in `specEvery`, one forged advisory in 50, aborts for
 * the rest. Run ids are `<tag>-<n>`.
 */
export function hostileMessages(
  count: number,
  options: { seed?: number; tag?: string; specEvery?: number } = {},
): HostileMessage[] {
  // Seeded, so that a failing message can be found again.
  const random = mulberry32(options.seed ?? 11);
  const tag = options.tag ?? "fuzz";
  const specEvery = options.specEvery ?? 10;
  const messages: HostileMessage[] = [];
  for (let i = 0; i < count; i++) {
    const runId = `${tag}-${i}`;
    const pick = Math.floor(random() * 1_000_000);
    if (i % specEvery === specEvery - 1) {
      const spec = specCase(pick, runId);
      const subject =
        spec.runId === undefined ? `${subjects.subjectPrefix}.fork.${tag}+${i}` : subjects.spec(runId);
      messages.push({
        channel: "spec",
        subject,
        payload: typeof spec.payload === "string" ? encoder.encode(spec.payload) : spec.payload,
        runId: spec.runId,
        expected: spec.expected,
      });
    } else if (i % 50 === 0) {
      const garbage = pick % 2 === 0 ? "not json" : JSON.stringify({ stream_seq: "x", deliveries: -1 });
      messages.push({
        channel: "advisory",
        subject: `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${subjects.streams.specs}.${subjects.specsConsumer}`,
        payload: encoder.encode(garbage),
        expected: garbage === "not json" ? "invalid_json" : "invalid_message",
      });
    } else {
      const abort = abortCase(pick, runId, random);
      messages.push({
        channel: "abort",
        subject: subjects.abort(runId),
        payload: typeof abort.payload === "string" ? encoder.encode(abort.payload) : abort.payload,
        runId,
        expected: abort.expected,
      });
    }
  }
  return messages;
}

/** `forkd_refused_controls_total` by kind, read from a daemon's `/metrics`. */
export async function refusedControlCounts(metricsUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(metricsUrl)).text();
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^forkd_refused_controls_total\{kind="([^"]+)"\} (\d+)$/gm)) {
    counts[match[1]!] = Number(match[2]);
  }
  return counts;
}
