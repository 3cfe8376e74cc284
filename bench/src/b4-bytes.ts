// #4 Bytes through NATS for 100 forks of the 48k prefix: by reference (stored once in the object
// store) against inline prefixes (in every spec), counted by the server per connection.
import { encodeStoredPrefix } from "@forkd/client/internal";
import { type ForkSpecInput, forkSpecCodec } from "@forkd/protocol";
import { startCluster } from "./cluster.js";
import { parentTurn, taggedDirective } from "./fixtures.js";
import { byteDelta, byteSnapshot, sumConnections } from "./nats-monitor.js";
import { round } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

const FORKS = 100;
const DAEMONS = 4;
const DIRECTIVE = "Bytes probe: answer in one line.";

interface Traffic {
  /** Parent → NATS: specs, the prefix upload, registry entries, JetStream API calls. @unit bytes */
  parentIn: number;
  /** NATS → parent (publish acks, API replies). @unit bytes */
  parentOut: number;
  /** NATS → the daemons: specs, prefix downloads, acks, API replies. @unit bytes */
  daemonsOut: number;
  /** Daemons → NATS: events, registry updates, API calls. @unit bytes */
  daemonsIn: number;
  /** Everything the server received and sent, minus the benchmark's own observer connection. @unit bytes */
  serverIn: number;
  serverOut: number;
  /** Spec messages (payload + headers) as published, the mean over the forks. @unit bytes */
  specMean: number;
  /** The first spec as published, decoded: the reference "spec without prefix" is it with `prefix: none`. */
  firstSpec: ForkSpecInput | undefined;
}

async function measure(transport: "ref" | "inline", context: BenchContext): Promise<Traffic> {
  // A new server and cold daemons per transport: the prefix upload and each daemon's first download count.
  const cluster = await startCluster({ daemons: DAEMONS, concurrency: 32 });
  try {
    const turn = await parentTurn("48k");
    const forks = await cluster.subagent({ prefixTransport: transport });
    let specBytes = 0;
    let specs = 0;
    let firstSpec: ForkSpecInput | undefined;
    const specSub = cluster.watch.nc.subscribe("agent.fork.*", {
      callback: (_, message) => {
        specs += 1;
        firstSpec ??= JSON.parse(Buffer.from(message.data).toString("utf8")) as ForkSpecInput;
        specBytes += message.data.byteLength + (message.headers?.toString().length ?? 0);
      },
    });
    await cluster.watch.nc.flush();
    const before = await byteSnapshot(cluster.server.monitorUrl);
    context.log(`${transport}: ${FORKS} forks`);
    const handles = forks.fanOut(
      { prefix: turn.prefix, parent: { agent_id: "bench-parent" } },
      Array.from({ length: FORKS }, (_, i) => ({
        directive: taggedDirective(`${transport}-${i}`, DIRECTIVE),
      })),
      { warmFirst: true },
    );
    // Runs are followed by the observer, not by the parent's handles, so that the parent's
    // connection carries the forking only (no per-run consumers).
    const ends = await Promise.all(handles.map((handle) => cluster.watch.terminal(handle.runId)));
    const failed = ends.filter((end) => end.event.type !== "completed");
    if (failed.length > 0)
      throw new Error(`${failed.length} forks did not complete (${failed[0]!.event.type})`);
    const after = await byteSnapshot(cluster.server.monitorUrl);
    specSub.unsubscribe();
    const delta = byteDelta(before, after);
    const parent = sumConnections(delta, (name) => name === "bench-parent");
    const daemons = sumConnections(delta, (name) => name.startsWith("forkd-daemon-"));
    const observer = sumConnections(delta, (name) => name === "bench-observer");
    return {
      parentIn: parent.in,
      parentOut: parent.out,
      daemonsOut: daemons.out,
      daemonsIn: daemons.in,
      serverIn: delta.total.in - observer.in,
      serverOut: delta.total.out - observer.out,
      specMean: round(specBytes / Math.max(1, specs), 1),
      firstSpec,
    };
  } finally {
    await cluster.stop();
  }
}

function withoutSpec({ firstSpec: _, ...traffic }: Traffic): Omit<Traffic, "firstSpec"> {
  return traffic;
}

export const bytesBenchmark: Benchmark = {
  id: 4,
  name: "bytes through NATS for 100 forks of the 48k prefix",
  async run(context: BenchContext) {
    const turn = await parentTurn("48k");
    const prefixBytes = encodeStoredPrefix(turn.prefix).ref.size; // the prefix as stored and as inlined
    const byRef = await measure("ref", context);
    const inline = await measure("inline", context);
    // The spec of the same fork without any prefix: what each fork costs on top of the prefix itself.
    // It is a spec as the client publishes it (owner token and all: a hand-built one lacked the
    // 81-byte owner token every spec has carried since abort proofs), with `prefix: none`.
    if (byRef.firstSpec === undefined) throw new Error("no spec went through the server");
    const specWithoutPrefix = forkSpecCodec.encode({
      ...byRef.firstSpec,
      prefix: { kind: "none" },
    }).byteLength;
    const budget = Math.round(1.3 * prefixBytes + FORKS * specWithoutPrefix);
    const pass = byRef.parentIn <= budget;
    const kib = (bytes: number) => `${round(bytes / 1024, 1)} KiB`;
    const notes = [
      `Counted by nats-server per connection (/connz) and in total (/varz), framing and headers included. The figure is what the parent sends into NATS for the 100 forks (its connection's in_bytes): ${kib(byRef.parentIn)} by reference against a budget of 1.3 × ${kib(prefixBytes)} (one prefix as JSON) + 100 × ${specWithoutPrefix} B (the same spec without a prefix) = ${kib(budget)}.`,
      `Per fork beyond the prefix, by reference: ${round((byRef.parentIn - prefixBytes) / FORKS, 0)} B from the parent (the spec message is ${byRef.specMean} B with headers; the rest is the run's 'queued' registry entry, its parent index key (#23) and the publish framing).`,
      `Daemons: by reference each of the ${DAEMONS} daemons downloads the prefix once (NATS → daemons ${kib(byRef.daemonsOut)}, i.e. ${round(byRef.daemonsOut / prefixBytes, 2)} prefixes); inline every spec carries it (NATS → daemons ${kib(inline.daemonsOut)}, ${round(inline.daemonsOut / prefixBytes, 1)} prefixes).`,
      `Whole server, both directions, without the benchmark's observer connection: by reference ${kib(byRef.serverIn + byRef.serverOut)}, inline ${kib(inline.serverIn + inline.serverOut)} (${round((inline.serverIn + inline.serverOut) / (byRef.serverIn + byRef.serverOut), 1)}×). Events (published by the daemons, stored, not read by the parent here) are in the daemons' in_bytes: ${kib(byRef.daemonsIn)} by reference.`,
      "Runs are followed by an observer connection (a core subscription on the events subject) instead of the parent's handles, so the parent's counters hold the forking only; a parent awaiting result() adds each run's events (heard on core NATS) and one read of its stored last event on top. A new nats-server and cold daemons for each transport.",
    ];
    if (!pass) {
      notes.push(
        `MISSED by ${kib(byRef.parentIn - budget)} (${round(((byRef.parentIn - budget) / budget) * 100, 1)} %): see the per-fork bytes above.`,
      );
    }
    return {
      figures: { by_reference: withoutSpec(byRef), budget_bytes: budget },
      baseline: { inline: withoutSpec(inline) },
      target: "parent → NATS ≤ 1.3 × one prefix + 100 × a spec without prefix",
      headline: `by reference: parent sent ${kib(byRef.parentIn)} (${round(byRef.parentIn / budget, 3)}× the budget of ${kib(budget)}); whole server ${kib(byRef.serverIn + byRef.serverOut)}`,
      baselineHeadline: `inline: parent sent ${kib(inline.parentIn)} (${round(inline.parentIn / prefixBytes, 1)} prefixes); whole server ${kib(inline.serverIn + inline.serverOut)}`,
      pass,
      params: {
        forks: FORKS,
        daemons: DAEMONS,
        prefix_json_bytes: prefixBytes,
        spec_without_prefix_bytes: specWithoutPrefix,
        fan_out: "warm-first",
      },
      notes,
    };
  },
};
