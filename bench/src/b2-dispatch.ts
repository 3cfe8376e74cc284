// #2 Dispatch latency: `fork()` to the first byte of the child's request at the simulator, over one
// NATS node on loopback, against the in-process fork with the same client and simulator.
import type { ForkHandle, ForkSubagent } from "@forkd/core";
import type { FixtureName } from "@forkd/testing";
import type { Subscription } from "@nats-io/transport-node";
import { type Cluster, startClusterWithSimProcess } from "./cluster.js";
import { CpuMeter } from "./cpu.js";
import { parentTurn, taggedDirective } from "./fixtures.js";
import { GcPauses } from "./gc-pauses.js";
import { inProcessForks } from "./in-process.js";
import { measureNatsFloor } from "./nats-floor.js";
import { type SimProcess, TaggedRequests } from "./sim-process.js";
import { now, percentile, round, type Summary, summarize } from "./stats.js";
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
  /** When fork() was called and when the simulator had the headers (clock of `now()`). @unit ms since epoch */
  window: { from: number; to: number };
}

/** The four series, each a size and a way of forking. */
type SeriesLabel = "n48" | "i48" | "n4" | "i4";

/**
 * Forks children one after the other, each after the previous one's result. Watches the spec subject
 * and the runs' `accepted` events for the stages, and meters CPU per series across all its blocks.
 */
class DispatchProbe {
  readonly #cluster: Cluster<SimProcess>;
  readonly #received: TaggedRequests;
  readonly #seen = new Map<string, Partial<Record<"spec" | "accepted", number>>>();
  readonly #offEvents: () => void;
  readonly #specs: Subscription;
  /** CPU of the counted forks of each series, and how many. @unit ms */
  readonly cpu = new Map<SeriesLabel, { thisProcess: number; natsServer: number; forks: number }>();

  constructor(cluster: Cluster<SimProcess>) {
    this.#cluster = cluster;
    this.#received = new TaggedRequests(cluster.sim);
    this.#offEvents = cluster.watch.onEvent(({ event, at }) => {
      if (event.type !== "accepted") return;
      const stages = this.#seen.get(event.run_id);
      if (stages) stages[event.type] ??= at;
    });
    const specs = cluster.watch.nc.subscribe("agent.fork.*"); // the spec subject of every run
    this.#specs = specs;
    void (async () => {
      for await (const message of specs) {
        const at = now();
        const stages = this.#seen.get(message.subject.slice("agent.fork.".length));
        if (stages) stages.spec ??= at;
      }
    })();
  }

  /** `count` forks of `fixture`, measured (their CPU added to `label`'s) unless `warmUp`. */
  async block(
    forks: ForkSubagent,
    fixture: FixtureName,
    label: SeriesLabel,
    count: number,
    warmUp = false,
  ): Promise<Sample[]> {
    const turn = await parentTurn(fixture);
    const meter = warmUp ? undefined : new CpuMeter({ nats_server: this.#cluster.server.pid });
    const samples: Sample[] = [];
    for (let i = 0; i < count; i++) {
      const tag = `${label}-${this.#seen.size}`;
      const started = now();
      const handle: ForkHandle = forks.fork({
        prefix: turn.prefix,
        directive: taggedDirective(tag, "Dispatch probe: answer in one line."),
        parent: { agent_id: "bench-parent" },
      });
      const stages: Partial<Record<"spec" | "accepted", number>> = {};
      this.#seen.set(handle.runId, stages);
      const outcome = await handle.result();
      if (outcome.status !== "completed") throw new Error(`fork ${tag} ended ${outcome.status}`);
      const at = (await this.#received.get(tag)).receivedAt;
      const sample: Sample = { total: at - started, window: { from: started, to: at } };
      if (stages.spec !== undefined) sample.spec = stages.spec - started;
      if (stages.accepted !== undefined) sample.accepted = stages.accepted - started;
      samples.push(sample);
    }
    if (meter) {
      const cpu = meter.readMs();
      const sum = this.cpu.get(label) ?? { thisProcess: 0, natsServer: 0, forks: 0 };
      sum.thisProcess += cpu.this_process_ms ?? Number.NaN;
      sum.natsServer += cpu.nats_server_ms ?? Number.NaN;
      sum.forks += count;
      this.cpu.set(label, sum);
    }
    return samples;
  }

  /** CPU per counted fork of each series, end to end: dispatch, the model call, the result. @unit ms */
  cpuPerFork(): Record<string, { thisProcess: number; natsServer: number }> {
    return Object.fromEntries(
      [...this.cpu].map(([label, sum]) => [
        label,
        {
          thisProcess: round(sum.thisProcess / sum.forks, 3),
          natsServer: round(sum.natsServer / sum.forks, 3),
        },
      ]),
    );
  }

  close(): void {
    this.#received.close();
    this.#offEvents();
    this.#specs.unsubscribe();
  }
}

/** The order of a round's blocks: forkd and the in-process fork adjacent at each size, every other round reversed. */
function roundOrder(round: number): SeriesLabel[][] {
  return round % 2 === 0
    ? [
        ["n48", "i48"],
        ["n4", "i4"],
      ]
    : [
        ["i4", "n4"],
        ["i48", "n48"],
      ];
}

function stage(samples: Sample[], key: "total" | "spec" | "accepted"): Summary {
  return summarize(samples.map((s) => s[key]).filter((v): v is number => v !== undefined));
}

/**
 * How many of a series' dispatches a GC pause of this process fell into, and the series' p99 without
 * them: the parent and the daemon share this process, and a pause is as long as the p99 target.
 * Shown beside the verdict, which counts every dispatch.
 */
function gcInDispatch(samples: Sample[], gc: GcPauses) {
  const paused = samples.map((sample) => gc.pausedWithin(sample.window.from, sample.window.to));
  const hit = paused.filter((ms) => ms > 0);
  const clear = samples.filter((_, index) => paused[index] === 0).map((sample) => sample.total);
  return {
    dispatches_with_a_pause: hit.length,
    share_pct: round((hit.length / samples.length) * 100, 1),
    pause_in_dispatch_p50_ms: hit.length > 0 ? round(percentile(hit, 50)) : 0,
    p99_without_them_ms: round(percentile(clear, 99)),
  };
}

/** The median time spent in each stage (differences of the stage medians). */
function breakdown(samples: Sample[]): Record<string, number> {
  const p50 = (key: "total" | "spec" | "accepted") => stage(samples, key).p50;
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
    const rounds = context.quick ? 3 : 9;
    const block48 = context.quick ? 60 : 100;
    const block4 = context.quick ? 30 : 50;
    const warmup = context.quick ? 30 : 100;
    // The simulator runs in its own process (a provider is remote): its parsing and hashing of each
    // body is not counted against forkd's or the in-process fork's latency.
    const cluster = await startClusterWithSimProcess({
      daemons: 1,
      concurrency: 64,
      simEvents: ["request"],
    });
    const probe = new DispatchProbe(cluster);
    const gc = new GcPauses();
    try {
      const forkd = await cluster.subagent(); // prefixTransport "auto": 48k by reference; 4k inline until forked again, then by reference
      const inProcess = inProcessForks(cluster.sim);
      const forkerOf = (label: SeriesLabel): ForkSubagent => (label.startsWith("n") ? forkd : inProcess);
      const fixtureOf = (label: SeriesLabel): "48k" | "4k" => (label.endsWith("48") ? "48k" : "4k");
      const blockOf = (label: SeriesLabel) => (label.endsWith("48") ? block48 : block4);
      const forkdOf = { "48k": "n48", "4k": "n4" } as const;
      const inProcessOf = { "48k": "i48", "4k": "i4" } as const;
      const labels: SeriesLabel[] = ["n48", "i48", "n4", "i4"];
      context.log(`warm-up: ${warmup} forks per series`);
      for (const label of labels) await probe.block(forkerOf(label), fixtureOf(label), label, warmup, true);
      // Rounds of short blocks, forkd's and the in-process fork's of one size one after the other: the
      // machine's speed drifts by more than the target within minutes (bench/README.md, "2."), and a
      // round's difference is taken between blocks measured moments apart.
      context.log(`${rounds} rounds of ${block48} (48k) and ${block4} (4k) forks per series`);
      gc.start();
      const samples: Record<SeriesLabel, Sample[]> = { n48: [], i48: [], n4: [], i4: [] };
      const overheadByRound: Record<"48k" | "4k", number[]> = { "48k": [], "4k": [] };
      for (let r = 0; r < rounds; r++) {
        for (const pair of roundOrder(r)) {
          const blocks = new Map<SeriesLabel, Sample[]>();
          for (const label of pair) {
            const measured = await probe.block(forkerOf(label), fixtureOf(label), label, blockOf(label));
            blocks.set(label, measured);
            samples[label].push(...measured);
          }
          const p50 = (label: SeriesLabel) =>
            percentile(
              blocks.get(label)!.map((sample) => sample.total),
              50,
            );
          // A pair holds one size's forkd series ("n…") and in-process series ("i…"), in either order.
          const size = fixtureOf(pair[0]!);
          overheadByRound[size].push(p50(forkdOf[size]) - p50(inProcessOf[size]));
        }
      }
      gc.stop();
      const gcBySeries = Object.fromEntries(
        (Object.keys(samples) as SeriesLabel[]).map((label) => [label, gcInDispatch(samples[label], gc)]),
      );
      context.log(`the raw JetStream floor: ${block4 * rounds} publish → pull → KV create, one at a time`);
      const floor = await measureNatsFloor(cluster.server.url, block4 * rounds, warmup);
      const nats48 = samples.n48;
      const base48 = samples.i48;
      const nats4 = samples.n4;
      const base4 = samples.i4;
      const cpuPerFork = probe.cpuPerFork();

      const total48 = stage(nats48, "total");
      const baseTotal48 = stage(base48, "total");
      const total4 = stage(nats4, "total");
      const baseTotal4 = stage(base4, "total");
      // p50: the median of the rounds' differences; p99: the pooled samples' (a block has too few for its own).
      // Judged unrounded (1.004 ms misses 1 ms); rounded where shown.
      const exactP99 = (samples: Sample[]) =>
        percentile(
          samples.map((s) => s.total),
          99,
        );
      const overhead = (size: "48k" | "4k", forkd: Sample[], inProcess: Sample[]) => {
        const p50 = percentile(overheadByRound[size], 50);
        const p99 = exactP99(forkd) - exactP99(inProcess);
        return { shown: { p50: round(p50), p99: round(p99) }, exact: { p50, p99 } };
      };
      const { shown: overhead48, exact: exact48 } = overhead("48k", nats48, base48);
      const { shown: overhead4, exact: exact4 } = overhead("4k", nats4, base4);
      const overheadMisses: string[] = [];
      for (const [size, exact] of [
        ["48k", exact48],
        ["4k", exact4],
      ] as const) {
        if (exact.p50 > OVERHEAD_P50_TARGET_MS)
          overheadMisses.push(
            `${size} p50 overhead ${round(exact.p50, 3)} ms > ${OVERHEAD_P50_TARGET_MS} ms`,
          );
        if (exact.p99 > OVERHEAD_P99_TARGET_MS)
          overheadMisses.push(
            `${size} p99 overhead ${round(exact.p99, 3)} ms > ${OVERHEAD_P99_TARGET_MS} ms`,
          );
      }
      const shownByRound = {
        "48k": overheadByRound["48k"].map((value) => round(value)),
        "4k": overheadByRound["4k"].map((value) => round(value)),
      };
      const pass = overheadMisses.length === 0;
      const absolutePass = total48.p50 <= P50_TARGET_MS && total48.p99 <= P99_TARGET_MS;
      const notes = [
        `Measured in ${rounds} rounds after ${warmup} unmeasured forks per series: each round runs a block of forkd forks and a block of in-process forks of one size one after the other (${block48} at 48k, ${block4} at 4k), every other round in reverse order (${roundOrder(0).flat().join(" → ")}; then ${roundOrder(1).flat().join(" → ")}). The p50 overhead is the median of the rounds' differences of block medians (48k ${JSON.stringify(shownByRound["48k"])}, 4k ${JSON.stringify(shownByRound["4k"])} ms); p99 and the latencies are over all blocks of a series.`,
        "Each fork is launched after the previous one's result() resolved (one at a time), so the figure is the latency of one dispatch, not of a queue. The parent calls handle.result() at once, as a parent would: a core subscription on the run's events subject, made while the spec travels on the same connection, and one read of the stored last event once the terminal one is heard.",
        "End point: `receivedAt` of the simulator's log entry (request headers received), matched to its fork by a tag in the directive, reported by the simulator's process over IPC and converted to this process's clock (performance.timeOrigin + performance.now()).",
        "Stages come from an observer connection: a core subscription on `agent.fork.*` (the spec passing through the server) and on the events subject (`accepted`, which a run publishes after its first request); each adds one loopback hop (~0.1 ms).",
        `Median stages, 48k: ${JSON.stringify(breakdown(nats48))}.`,
        `Median stages, 4k: ${JSON.stringify(breakdown(nats4))}.`,
        `CPU per fork, end to end (dispatch, model call, result), by series (n48/n4: forkd, i48/i4: in-process; this process holds the parent and the daemon): ${JSON.stringify(cpuPerFork)} ms. Less noisy than the latencies on a shared machine: compare these across runs.`,
        `GC pauses of this process (the parent's and the daemon's) inside a dispatch, by series, with each series' p99 over the dispatches no pause fell into (not the verdict, which counts them all): ${JSON.stringify(gcBySeries)}.`,
        `forkd's added latency over the in-process fork (forkd − in-process at the same percentile; the verdict): 48k p50 ${overhead48.p50} ms, p99 ${overhead48.p99} ms; 4k p50 ${overhead4.p50} ms, p99 ${overhead4.p99} ms. The in-process fork itself needs ${baseTotal48.p50} ms at 48k (build the child request, hash the cache key, serialise ~190 kB in the SDK, send it).`,
        `The earlier absolute target (48k p50 ≤ ${P50_TARGET_MS} ms, p99 ≤ ${P99_TARGET_MS} ms): ${absolutePass ? "met" : "missed"}.`,
        `The daemon and the parent share this process (and its event loop); the simulator runs in a process of its own (a provider is remote; its per-request parsing and hashing, ~1.6 ms more at 48k than at 4k, is not counted against either side), and so does nats-server. A 2-core machine runs all of it. The simulator's timestamps are converted to this process's clock (offset ${round(cluster.sim.clock.offsetMs, 3)} ms, known to ±${round(cluster.sim.clock.uncertaintyMs, 3)} ms; the overhead, a difference of two such times, does not depend on it).`,
        `The floor, raw JetStream in the same process and server, no forkd code (bench/src/nats-floor.ts): a 300-byte message published to a work-queue stream reaches a pull consumer on another connection in ${floor.delivered.p50} ms p50 (p99 ${floor.delivered.p99}); that consumer's KV create (a claim) is acknowledged ${floor.claimed.p50} ms p50 (p99 ${floor.claimed.p99}) after the publish call. forkd cannot add less than that over an in-process fork: its spec must be stored before a daemon takes it, and the claim stored before the run does anything. Overhead beyond the floor, p50: 48k ${round(overhead48.p50 - floor.claimed.p50)} ms, 4k ${round(overhead4.p50 - floor.claimed.p50)} ms.`,
        `The same publishes as a core subscription on the consumer's connection hears them (the server hands a publish to its subscribers as it reads it, before the store): ${floor.coreDelivered.p50} ms p50 (p99 ${floor.coreDelivered.p99}); the pull consumer had each ${floor.pullAfterCore.p50} ms later at p50 (p90 ${floor.pullAfterCore.p90}). That is the most a spec offered to a daemon over core NATS, ahead of its stored copy, could take off this hop.`,
      ];
      if (!pass) notes.push(`MISSED: ${overheadMisses.join("; ")}.`);
      return {
        figures: {
          "48k_ms": total48,
          "4k_ms": total4,
          overhead_ms: { "48k": overhead48, "4k": overhead4 },
          overhead_p50_by_round_ms: shownByRound,
          "48k_stages_p50_ms": breakdown(nats48),
          cpu_per_fork_ms: cpuPerFork,
          gc_pauses_in_dispatch: gcBySeries,
        },
        baseline: {
          in_process_48k_ms: baseTotal48,
          in_process_4k_ms: baseTotal4,
          nats_floor_ms: {
            delivered: floor.delivered,
            core_delivered: floor.coreDelivered,
            pull_after_core: floor.pullAfterCore,
            publish_acked: floor.publishAcked,
            stored_then_claimed: floor.claimed,
          },
        },
        target: `overhead over the in-process fork ≤ ${OVERHEAD_P50_TARGET_MS} ms p50, ≤ ${OVERHEAD_P99_TARGET_MS} ms p99, at 48k and 4k (one NATS node over loopback)`,
        headline: `48k: p50 ${total48.p50} ms, p99 ${total48.p99} ms (4k: p50 ${total4.p50}, p99 ${total4.p99}); overhead p50 ${overhead48.p50} / ${overhead4.p50} ms, p99 ${overhead48.p99} / ${overhead4.p99} ms (48k / 4k)`,
        baselineHeadline: `in-process 48k: p50 ${baseTotal48.p50} ms, p99 ${baseTotal48.p99} ms (4k: ${baseTotal4.p50} / ${baseTotal4.p99}); raw JetStream stored-then-claimed floor p50 ${floor.claimed.p50} ms, p99 ${floor.claimed.p99} ms`,
        pass,
        params: {
          rounds,
          forks_48k: block48 * rounds,
          forks_4k: block4 * rounds,
          warmup,
          daemons: 1,
          concurrency: 64,
          prefix_transport:
            "auto (48k by reference; 4k inline until forked again and stored, then by reference)",
          sim_latency: "none",
          simulator: "own process",
        },
        notes,
      };
    } finally {
      probe.close();
      await cluster.stop();
    }
  },
};
