// #6 Throughput: forks completed per second with a zero-latency simulator and four daemons, against
// the in-process fork with the same client and simulator.
import type { ForkHandle } from "@forkd/core";
import type { FixtureName } from "@forkd/testing";
import { type Cluster, startClusterWithSimProcess, within } from "./cluster.js";
import { CpuMeter } from "./cpu.js";
import { parentTurn, taggedDirective } from "./fixtures.js";
import { inProcessForks } from "./in-process.js";
import type { SimProcess } from "./sim-process.js";
import { now, percentile, round } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

const DAEMONS = 4;
const CONCURRENCY = 64;
/** The earlier absolute target (48k), still reported in the notes. */
const TARGET_PER_S = 500;
/** Issue #14: throughput does not depend on the prefix — forks/s at 48k ≥ this × forks/s at 4k, same run. */
const TARGET_RATIO_48K_TO_4K = 0.9;
/**
 * The simulator's niceness. A provider is remote: its CPU, which grows with the prefix, takes none of
 * a daemon's cores. On this benchmark's shared cores the simulator runs at the lowest priority, so that
 * it takes only the CPU the parent, the daemons and nats-server leave idle (bench/README.md, "A
 * twenty-sixth look").
 */
const SIM_NICENESS = 19;

interface Throughput {
  forks: number;
  /** Forks / (last completion − first fork()). @unit forks per second */
  overall: number;
  /** Completions between the 10th and the 90th percentile of completion times, per second. @unit forks per second */
  steady: number;
  cpu: Record<string, number>;
}

function throughputOf(started: number, ends: number[], cpu: Record<string, number>): Throughput {
  const last = Math.max(...ends);
  const p10 = percentile(ends, 10);
  const p90 = percentile(ends, 90);
  const inner = ends.filter((t) => t >= p10 && t <= p90).length;
  return {
    forks: ends.length,
    // Unrounded: the verdict is judged at full precision; figures are rounded where they are shown.
    overall: ends.length / ((last - started) / 1000),
    steady: inner / ((p90 - p10) / 1000),
    cpu,
  };
}

/** Fans `count` forks out at once; each completion seen by the observer. */
async function onCluster(
  cluster: Cluster<SimProcess>,
  fixture: FixtureName,
  count: number,
  label: string,
  pids: Record<string, number | undefined>,
): Promise<Throughput> {
  const turn = await parentTurn(fixture);
  const forks = await cluster.subagent();
  const meter = new CpuMeter(pids);
  const started = now();
  const handles: ForkHandle[] = forks.fanOut(
    { prefix: turn.prefix, parent: { agent_id: "bench-parent" } },
    Array.from({ length: count }, (_, i) => ({
      directive: taggedDirective(`${label}-${i}`, "Throughput probe."),
    })),
  );
  const ends = await within(
    Promise.all(handles.map((handle) => cluster.watch.terminal(handle.runId))),
    300_000,
    `${count} forks`,
  );
  const cpu = meter.read();
  const failed = ends.filter((end) => end.event.type !== "completed");
  if (failed.length > 0)
    throw new Error(`${failed.length} forks did not complete (${failed[0]!.event.type})`);
  return throughputOf(
    started,
    ends.map((end) => end.at),
    cpu,
  );
}

/** The same forks in process, at most `DAEMONS × CONCURRENCY` at once. */
async function inProcess(
  cluster: Cluster<SimProcess>,
  fixture: FixtureName,
  count: number,
  label: string,
): Promise<Throughput> {
  const turn = await parentTurn(fixture);
  const forks = inProcessForks(cluster.sim);
  const meter = new CpuMeter({ nats_server: cluster.server.pid, simulator: cluster.sim.pid });
  const started = now();
  const ends: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const outcome = await forks
        .fork({
          prefix: turn.prefix,
          directive: taggedDirective(`${label}-${i}`, "Throughput probe."),
          parent: { agent_id: "bench-parent" },
        })
        .result();
      if (outcome.status !== "completed") throw new Error(`in-process fork ${i} ended ${outcome.status}`);
      ends.push(now());
    }
  };
  await Promise.all(Array.from({ length: DAEMONS * CONCURRENCY }, worker));
  return throughputOf(started, ends, meter.read());
}

/** The measured configurations on the in-process daemons' cluster. */
type Series = "forkd48" | "forkd4" | "inProcess48" | "inProcess4";

/**
 * The order of the series in round `index`: forkd's two sizes side by side, so that each round gives
 * a ratio of two bursts measured moments apart, and every other round reversed (ABBA), so that a drift
 * of the machine's speed weighs on every series alike.
 */
function roundOrder(index: number): readonly Series[] {
  const order: Series[] = ["forkd48", "forkd4", "inProcess48", "inProcess4"];
  return index % 2 === 0 ? order : order.reverse();
}

/** One series over its rounds: the median of its rates, every round kept. */
function combined(rounds: Throughput[]): Throughput & { rounds: { overall: number; steady: number }[] } {
  const median = (pick: (t: Throughput) => number) => percentile(rounds.map(pick), 50);
  const cpu: Record<string, number> = {};
  for (const key of Object.keys(rounds[0]!.cpu))
    cpu[key] = round(
      median((t) => t.cpu[key] ?? 0),
      3,
    );
  return {
    forks: rounds.reduce((sum, t) => sum + t.forks, 0),
    overall: round(
      median((t) => t.overall),
      1,
    ),
    steady: round(
      median((t) => t.steady),
      1,
    ),
    cpu,
    rounds: rounds.map(({ overall, steady }) => ({ overall: round(overall, 1), steady: round(steady, 1) })),
  };
}

/** forks/s at 48k ÷ forks/s at 4k of each round (the two bursts of a round run one after the other). */
function roundRatios(at48: Throughput[], at4: Throughput[]): number[] {
  return at48.map((t, i) => t.steady / at4[i]!.steady);
}

/** CPU time of this process (parent and daemons) per fork of a burst. @unit ms */
function cpuPerFork(t: Throughput): number {
  return ((t.cpu.this_process_cores ?? Number.NaN) * (t.cpu.wall_ms ?? Number.NaN)) / t.forks;
}

/**
 * The two factors of each round's ratio, once this process's event loop is saturated (forks/s = cores
 * it gets ÷ CPU per fork): the cores it got at 48k ÷ at 4k (the simulator's share of the two cores
 * grows with the prefix), and its CPU per fork at 4k ÷ at 48k (what forkd's own work adds for the
 * larger prefix; 1 when it adds nothing).
 */
function ratioFactors(at48: Throughput[], at4: Throughput[]): { cores: number; cpuPerFork: number } {
  const median = (values: number[]) => round(percentile(values, 50), 3);
  return {
    cores: median(
      at48.map(
        (t, i) => (t.cpu.this_process_cores ?? Number.NaN) / (at4[i]!.cpu.this_process_cores ?? Number.NaN),
      ),
    ),
    cpuPerFork: median(at48.map((t, i) => cpuPerFork(at4[i]!) / cpuPerFork(t))),
  };
}

export const throughputBenchmark: Benchmark = {
  id: 6,
  name: "throughput: forks completed per second (zero-latency simulator, 4 daemons)",
  async run(context: BenchContext) {
    const count48 = context.quick ? 300 : 1000;
    const count4 = context.quick ? 300 : 1000;
    // Many short rounds rather than two long ones: two bursts' rates move by 10–15 % within minutes on
    // this shared machine, and the ratio of two bursts run one after the other moves less.
    const rounds = context.quick ? 2 : 12;
    // The first large burst after a start runs 25–40 % slower than the next ones of the same size
    // (code not yet optimised for it, heap not yet grown to it; bench/README.md, "A thirteenth look"):
    // every series is warmed with a burst of this size before anything is measured.
    const warmup = context.quick ? 100 : 1000;
    const measured: Record<Series, Throughput[]> = {
      forkd48: [],
      forkd4: [],
      inProcess48: [],
      inProcess4: [],
    };
    const results: Record<string, Throughput> = {};
    // The simulator runs in its own process (a provider is remote): its per-request work, which grows
    // with the prefix, is not counted in this process's CPU, for forkd and the in-process fork alike.
    const cluster = await startClusterWithSimProcess({
      daemons: DAEMONS,
      concurrency: CONCURRENCY,
      simNiceness: SIM_NICENESS,
    });
    try {
      const pids = { nats_server: cluster.server.pid, simulator: cluster.sim.pid };
      const run: Record<Series, (count: number, label: string) => Promise<Throughput>> = {
        forkd48: (count, label) => onCluster(cluster, "48k", count, label, pids),
        forkd4: (count, label) => onCluster(cluster, "4k", count, label, pids),
        inProcess48: (count, label) => inProcess(cluster, "48k", count, label),
        inProcess4: (count, label) => inProcess(cluster, "4k", count, label),
      };
      context.log(`warm-up: ${warmup} forks of each series`);
      for (const series of roundOrder(0)) await run[series](warmup, `warmup-${series}`);
      for (let index = 0; index < rounds; index++) {
        const order = roundOrder(index);
        context.log(`round ${index + 1}: ${order.join(", ")} (${count48} forks at 48k, ${count4} at 4k)`);
        for (const series of order) {
          measured[series].push(
            await run[series](series.endsWith("48") ? count48 : count4, `r${index + 1}-${series}`),
          );
        }
      }
      for (const series of Object.keys(measured) as Series[]) results[series] = combined(measured[series]);
    } finally {
      await cluster.stop();
    }
    // The same on daemon processes (as deployed), the parent staying in this process.
    const spawned = await startClusterWithSimProcess({ daemons: 0, simNiceness: SIM_NICENESS });
    try {
      const pids: Record<string, number | undefined> = {
        nats_server: spawned.server.pid,
        simulator: spawned.sim.pid,
      };
      for (let i = 1; i <= DAEMONS; i++) {
        const daemon = await spawned.spawnDaemon(`bench-p${i}`, { concurrency: CONCURRENCY });
        pids[`daemon_p${i}`] = daemon.child.pid;
      }
      await onCluster(spawned, "48k", warmup, "pwarmup48", pids);
      context.log(`48k: ${count48} forks on ${DAEMONS} daemon processes`);
      // One burst, not rounds: rounded here as combined() rounds a series' medians.
      const processes = await onCluster(spawned, "48k", count48, "p48", pids);
      results.processes48 = {
        ...processes,
        overall: round(processes.overall, 1),
        steady: round(processes.steady, 1),
      };
    } finally {
      await spawned.stop();
    }
    const forkd48 = results.forkd48!;
    const shown = (values: number[]) => values.map((value) => round(value, 3));
    const exactRatios = roundRatios(measured.forkd48, measured.forkd4);
    const ratios = shown(exactRatios);
    const inProcessRatios = shown(roundRatios(measured.inProcess48, measured.inProcess4));
    // The lower median of the rounds' ratios (nearest rank): an even count is judged on the worse middle,
    // unrounded (0.895 is a miss of 0.9, though it shows as 0.9 to two decimals).
    const exactRatio = percentile(exactRatios, 50);
    const ratio = round(exactRatio, 2);
    const inProcessRatio = round(percentile(inProcessRatios, 50), 2);
    const factors = ratioFactors(measured.forkd48, measured.forkd4);
    const cpuMsPerFork = {
      forkd_48k: round(percentile(measured.forkd48.map(cpuPerFork), 50), 3),
      forkd_4k: round(percentile(measured.forkd4.map(cpuPerFork), 50), 3),
    };
    const pass = exactRatio >= TARGET_RATIO_48K_TO_4K;
    const notes = [
      `All ${count48} (48k) or ${count4} (4k) forks are fanned out at once (warm-first) from one parent; a run counts when its completed event reaches an observer connection (a core subscription on the events subject), so the parent opens no consumer per run. "steady" counts the completions between the 10th and 90th percentile of completion times (the ramp-up and the tail excluded); "overall" is all forks over first fork() → last completion. The verdict uses steady.`,
      `Every series is first warmed with an unmeasured burst of ${warmup} forks, then measured in ${rounds} rounds, every other one in reverse order (${roundOrder(0).join(" → ")}; then ${roundOrder(1).join(" → ")}); forkd's 48k and 4k bursts run one after the other in each round. A series' figure is the median of its rounds (each round is in "rounds"); the ratio is the lower median of the rounds' ratios (48k burst ÷ the 4k burst of the same round): forkd ${JSON.stringify(ratios)}, in-process fork ${JSON.stringify(inProcessRatios)}.`,
      `Baseline: the in-process fork with the same Anthropic client and simulator, ${DAEMONS * CONCURRENCY} at a time (the cluster's total concurrency).`,
      `CPU (cores used = CPU time / wall time; this machine has 2): 48k on in-process daemons ${JSON.stringify(forkd48.cpu)}; in-process fork ${JSON.stringify(results.inProcess48!.cpu)}; daemon processes ${JSON.stringify(results.processes48!.cpu)}.`,
      `forks/s at 48k ÷ forks/s at 4k (the verdict): forkd ${ratio}, in-process fork ${inProcessRatio}. The earlier absolute target (≥ ${TARGET_PER_S} forks/s at 48k): ${forkd48.steady >= TARGET_PER_S ? "met" : "missed"}.`,
      `Where forkd's ratio comes from (medians over the rounds): this process's CPU per fork is ${cpuMsPerFork.forkd_48k} ms at 48k and ${cpuMsPerFork.forkd_4k} ms at 4k (4k ÷ 48k = ${factors.cpuPerFork}; 1 would mean the prefix adds nothing to forkd's own work); the cores this process got at 48k ÷ at 4k = ${factors.cores} (the simulator, decoding and parsing ~190 kB per request at 48k, takes more of the machine's two cores; its cache keys are memoised across forks of one parent). Their product is about the ratio.`,
      `The in-process daemons share this process's one event loop with the parent: once it is ~100 % busy, throughput is the inverse of the CPU each fork costs across daemon and client. The simulator runs in a process of its own (its CPU is reported as simulator_cores): its parse of a ~190 kB body per request at 48k is a cost the real provider bears, and it no longer shares the measured event loop. It does share the machine's 2 cores, at niceness ${SIM_NICENESS}: it gets the CPU that this process and nats-server leave idle, as a remote provider takes none of theirs.`,
    ];
    if (!pass) {
      notes.push(
        `MISSED: 48k runs at ${ratio} × the 4k rate, under ${TARGET_RATIO_48K_TO_4K}. ${forkd48.steady} forks/s at 48k, ${round((1 - forkd48.steady / TARGET_PER_S) * 100, 1)} % under ${TARGET_PER_S}. The in-process fork, with no NATS at all, does ${results.inProcess48!.steady} forks/s on the same machine; forkd reaches ${round((forkd48.steady / results.inProcess48!.steady) * 100, 0)} % of it. 4k: ${results.forkd4!.steady} forks/s (in process ${results.inProcess4!.steady}).`,
      );
    }
    return {
      figures: {
        forkd_48k: forkd48,
        forkd_4k: results.forkd4!,
        ratio_48k_to_4k: ratio,
        ratio_by_round: ratios,
        ratio_factors: factors,
        cpu_ms_per_fork: cpuMsPerFork,
        daemon_processes_48k: results.processes48!,
      },
      baseline: {
        in_process_48k: results.inProcess48!,
        in_process_4k: results.inProcess4!,
        in_process_ratio_by_round: inProcessRatios,
      },
      target: `forks/s at 48k ≥ ${TARGET_RATIO_48K_TO_4K} × forks/s at 4k (same run)`,
      headline: `48k: ${forkd48.steady} forks/s steady (${forkd48.overall} overall); 4k: ${results.forkd4!.steady}; 48k ÷ 4k = ${ratio}; 48k on daemon processes: ${results.processes48!.steady}`,
      baselineHeadline: `in-process 48k: ${results.inProcess48!.steady} forks/s; 4k: ${results.inProcess4!.steady}; 48k ÷ 4k = ${inProcessRatio}`,
      pass,
      params: {
        forks_48k: count48,
        forks_4k: count4,
        rounds,
        daemons: DAEMONS,
        concurrency: CONCURRENCY,
        sim_latency: "none",
        simulator: `own process, niceness ${SIM_NICENESS}`,
        prefix_transport:
          "auto (48k by reference; 4k inline until forked again and stored, then by reference)",
      },
      notes,
    };
  },
};
