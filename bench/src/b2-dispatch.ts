// #2 Dispatch latency: `fork()` to the first byte of the child's request at the simulator, over one
// NATS node on loopback, against the in-process fork with the same client and simulator.
import type { ForkHandle, ForkSubagent } from "@forkd/core";
import type { FixtureName } from "@forkd/testing";
import { type Cluster, startClusterWithSimProcess } from "./cluster.js";
import { CpuMeter } from "./cpu.js";
import { parentTurn, taggedDirective } from "./fixtures.js";
import { inProcessForks } from "./in-process.js";
import { measureNatsFloor } from "./nats-floor.js";
import { type SimProcess, TaggedRequests } from "./sim-process.js";
import { now, round, type Summary, summarize } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

/** Issue #14: forkd's added latency over the in-process fork, at each percentile, 48k and 4k alike. */
const OVERHEAD_P50_TARGET_MS = 1;
const OVERHEAD_P99_TARGET_MS = 5;
/** The earlier absolute target (48k), still reported in the notes. */
const P50_TARGET_MS = 3;
const P99_TARGET_MS = 15;

interface Sample {
  /** fork() → the simulator received the request's headers. */
  total: number;
  /** fork() → the spec went through the NATS server (seen by an observer on the spec subject). */
  spec?: number;
  /** fork() → the daemon's `accepted` event (the run's first event, published after its first request). */
  accepted?: number;
}

/** Forks `count` children one after the other; each waits for its result before the next starts. */
async function measure(
  cluster: Cluster<SimProcess>,
  forks: ForkSubagent,
  fixture: FixtureName,
  label: string,
  count: number,
  warmup: number,
): Promise<Sample[]> {
  const turn = await parentTurn(fixture);
  const received = new TaggedRequests(cluster.sim);
  const seen = new Map<string, Partial<Record<"spec" | "accepted", number>>>();
  const offEvents = cluster.watch.onEvent(({ event, at }) => {
    if (event.type !== "accepted") return;
    const stages = seen.get(event.run_id);
    if (stages) stages[event.type] ??= at;
  });
  const specs = cluster.watch.nc.subscribe("agent.fork.*"); // the spec subject of every run
  void (async () => {
    for await (const message of specs) {
      const at = now();
      const runId = message.subject.slice("agent.fork.".length);
      const stages = seen.get(runId);
      if (stages) stages.spec ??= at;
    }
  })();
  const samples: Sample[] = [];
  let meter: CpuMeter | undefined;
  try {
    for (let i = 0; i < warmup + count; i++) {
      if (i === warmup) meter = new CpuMeter({ nats_server: cluster.server.pid });
      const tag = `${label}-${i}`;
      const started = now();
      const handle: ForkHandle = forks.fork({
        prefix: turn.prefix,
        directive: taggedDirective(tag, "Dispatch probe: answer in one line."),
        parent: { agent_id: "bench-parent" },
      });
      seen.set(handle.runId, {});
      const outcome = await handle.result();
      if (outcome.status !== "completed") throw new Error(`fork ${tag} ended ${outcome.status}`);
      const at = (await received.get(tag)).receivedAt;
      if (i < warmup) continue;
      const stages = seen.get(handle.runId) ?? {};
      const sample: Sample = { total: at - started };
      if (stages.spec !== undefined) sample.spec = stages.spec - started;
      if (stages.accepted !== undefined) sample.accepted = stages.accepted - started;
      samples.push(sample);
    }
    const cpu = meter?.readMs() ?? {};
    cpuPerFork.set(label, {
      thisProcess: round((cpu.this_process_ms ?? Number.NaN) / count, 3),
      natsServer: round((cpu.nats_server_ms ?? Number.NaN) / count, 3),
    });
  } finally {
    received.close();
    offEvents();
    specs.unsubscribe();
  }
  return samples;
}

/** CPU per counted fork of each series (by its label), end to end: dispatch, the model call, the result. @unit ms */
const cpuPerFork = new Map<string, { thisProcess: number; natsServer: number }>();

function stage(samples: Sample[], key: keyof Sample): Summary {
  return summarize(samples.map((s) => s[key]).filter((v): v is number => v !== undefined));
}

/** The median time spent in each stage (differences of the stage medians). */
function breakdown(samples: Sample[]): Record<string, number> {
  const p50 = (key: keyof Sample) => stage(samples, key).p50;
  return {
    "fork→spec through NATS": round(p50("spec")),
    "spec→request at sim (claim, prefix, request, SDK, HTTP)": round(p50("total") - p50("spec")),
    "request at sim→accepted stored (a run's events follow its first request)": round(
      p50("accepted") - p50("total"),
    ),
  };
}

export const dispatchBenchmark: Benchmark = {
  id: 2,
  name: "dispatch latency: fork() → first request byte at the simulator",
  async run(context: BenchContext) {
    const count = context.quick ? 200 : 1000;
    const warmup = context.quick ? 30 : 100;
    const smallCount = context.quick ? 100 : 300;
    // The simulator runs in its own process (a provider is remote): its parsing and hashing of each
    // body is not counted against forkd's or the in-process fork's latency.
    const cluster = await startClusterWithSimProcess({
      daemons: 1,
      concurrency: 64,
      simEvents: ["request"],
    });
    try {
      const forks = await cluster.subagent(); // prefixTransport "auto": 48k by reference, 4k inline
      const inProcess = inProcessForks(cluster.sim);
      context.log(`48k prefix: ${warmup} warm-up + ${count} forks, then the in-process baseline`);
      const nats48 = await measure(cluster, forks, "48k", "n48", count, warmup);
      const base48 = await measure(cluster, inProcess, "48k", "i48", count, warmup);
      context.log(`4k prefix: ${smallCount} forks each`);
      const nats4 = await measure(cluster, forks, "4k", "n4", smallCount, warmup);
      const base4 = await measure(cluster, inProcess, "4k", "i4", smallCount, warmup);
      context.log(`the raw JetStream floor: ${smallCount} publish → pull → KV create, one at a time`);
      const floor = await measureNatsFloor(cluster.server.url, smallCount, warmup);

      const total48 = stage(nats48, "total");
      const baseTotal48 = stage(base48, "total");
      const total4 = stage(nats4, "total");
      const baseTotal4 = stage(base4, "total");
      const overhead = (forkd: Summary, inProcess: Summary) => ({
        p50: round(forkd.p50 - inProcess.p50),
        p99: round(forkd.p99 - inProcess.p99),
      });
      const overhead48 = overhead(total48, baseTotal48);
      const overhead4 = overhead(total4, baseTotal4);
      const overheadMisses: string[] = [];
      for (const [size, { p50, p99 }] of [
        ["48k", overhead48],
        ["4k", overhead4],
      ] as const) {
        if (p50 > OVERHEAD_P50_TARGET_MS)
          overheadMisses.push(`${size} p50 overhead ${p50} ms > ${OVERHEAD_P50_TARGET_MS} ms`);
        if (p99 > OVERHEAD_P99_TARGET_MS)
          overheadMisses.push(`${size} p99 overhead ${p99} ms > ${OVERHEAD_P99_TARGET_MS} ms`);
      }
      const pass = overheadMisses.length === 0;
      const absolutePass = total48.p50 <= P50_TARGET_MS && total48.p99 <= P99_TARGET_MS;
      const notes = [
        "Each fork is launched after the previous one's result() resolved (one at a time), so the figure is the latency of one dispatch, not of a queue. The parent calls handle.result() at once, as a parent would: a core subscription on the run's events subject, made while the spec travels on the same connection, and one read of the stored last event once the terminal one is heard.",
        "End point: `receivedAt` of the simulator's log entry (request headers received), matched to its fork by a tag in the directive, reported by the simulator's process over IPC and converted to this process's clock (performance.timeOrigin + performance.now()).",
        "Stages come from an observer connection: a core subscription on `agent.fork.*` (the spec passing through the server) and on the events subject (`accepted`, which a run publishes after its first request); each adds one loopback hop (~0.1 ms).",
        `Median stages, 48k: ${JSON.stringify(breakdown(nats48))}.`,
        `Median stages, 4k: ${JSON.stringify(breakdown(nats4))}.`,
        `CPU per fork, end to end (dispatch, model call, result), by series (n48/n4: forkd, i48/i4: in-process; this process holds the parent and the daemon): ${JSON.stringify(Object.fromEntries(cpuPerFork))} ms. Less noisy than the latencies on a shared machine: compare these across runs.`,
        `forkd's added latency over the in-process fork (forkd − in-process at the same percentile; the verdict): 48k p50 ${overhead48.p50} ms, p99 ${overhead48.p99} ms; 4k p50 ${overhead4.p50} ms, p99 ${overhead4.p99} ms. The in-process fork itself needs ${baseTotal48.p50} ms at 48k (build the child request, hash the cache key, serialise ~190 kB in the SDK, send it).`,
        `The earlier absolute target (48k p50 ≤ ${P50_TARGET_MS} ms, p99 ≤ ${P99_TARGET_MS} ms): ${absolutePass ? "met" : "missed"}.`,
        `The daemon and the parent share this process (and its event loop); the simulator runs in a process of its own (a provider is remote; its per-request parsing and hashing, ~1.6 ms more at 48k than at 4k, is not counted against either side), and so does nats-server. A 2-core machine runs all of it. The simulator's timestamps are converted to this process's clock (offset ${round(cluster.sim.clock.offsetMs, 3)} ms, known to ±${round(cluster.sim.clock.uncertaintyMs, 3)} ms; the overhead, a difference of two such times, does not depend on it).`,
        `The floor, raw JetStream in the same process and server, no forkd code (bench/src/nats-floor.ts): a 300-byte message published to a work-queue stream reaches a pull consumer on another connection in ${floor.delivered.p50} ms p50 (p99 ${floor.delivered.p99}); that consumer's KV create (a claim) is acknowledged ${floor.claimed.p50} ms p50 (p99 ${floor.claimed.p99}) after the publish call. forkd cannot add less than that over an in-process fork: its spec must be stored before a daemon takes it, and the claim stored before the run does anything. Overhead beyond the floor, p50: 48k ${round(overhead48.p50 - floor.claimed.p50)} ms, 4k ${round(overhead4.p50 - floor.claimed.p50)} ms.`,
      ];
      if (!pass) notes.push(`MISSED: ${overheadMisses.join("; ")}.`);
      return {
        figures: {
          "48k_ms": total48,
          "4k_ms": total4,
          overhead_ms: { "48k": overhead48, "4k": overhead4 },
          "48k_stages_p50_ms": breakdown(nats48),
          cpu_per_fork_ms: Object.fromEntries(cpuPerFork),
        },
        baseline: {
          in_process_48k_ms: baseTotal48,
          in_process_4k_ms: baseTotal4,
          nats_floor_ms: {
            delivered: floor.delivered,
            publish_acked: floor.publishAcked,
            stored_then_claimed: floor.claimed,
          },
        },
        target: `overhead over the in-process fork ≤ ${OVERHEAD_P50_TARGET_MS} ms p50, ≤ ${OVERHEAD_P99_TARGET_MS} ms p99, at 48k and 4k (one NATS node over loopback)`,
        headline: `48k: p50 ${total48.p50} ms, p99 ${total48.p99} ms (4k: p50 ${total4.p50}, p99 ${total4.p99}); overhead p50 ${overhead48.p50} / ${overhead4.p50} ms, p99 ${overhead48.p99} / ${overhead4.p99} ms (48k / 4k)`,
        baselineHeadline: `in-process 48k: p50 ${baseTotal48.p50} ms, p99 ${baseTotal48.p99} ms (4k: ${baseTotal4.p50} / ${baseTotal4.p99}); raw JetStream stored-then-claimed floor p50 ${floor.claimed.p50} ms, p99 ${floor.claimed.p99} ms`,
        pass,
        params: {
          forks_48k: count,
          forks_4k: smallCount,
          warmup,
          daemons: 1,
          concurrency: 64,
          prefix_transport: "auto (48k by reference, 4k inline)",
          sim_latency: "none",
          simulator: "own process",
        },
        notes,
      };
    } finally {
      await cluster.stop();
    }
  },
};
