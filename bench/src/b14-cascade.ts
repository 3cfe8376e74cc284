// #14 Cascade abort (#15): `forks.abortParent(P)` → every run of the parent ended, running and queued,
// on real daemon processes. The figure is, per run, the time from the call to its `aborted` event
// reaching an observer; the target is p99 ≤ 100 ms over every run of every round.
import { availableParallelism } from "node:os";
import { type Cluster, startCluster, within } from "./cluster.js";
import { processCpuMs } from "./cpu.js";
import { parentTurn, taggedDirective } from "./fixtures.js";
import { now, overBy, percentile, summarize } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

const TARGET_P99_MS = 100;
const DAEMONS = 4;
const CONCURRENCY = 4;
/** How long after a round's last aborted event its CPU is still counted (the bookkeeping's time). @unit ms */
const CPU_TAIL_MS = 1_000;
/** Runs per round: the daemons' slots run, the rest wait in the queue. */
const RUNS = 40;

interface Round {
  /** Per run: abortParent() called → its aborted event at the observer. @unit ms */
  latencies: number[];
  /** Per run: abortParent() called → the daemon stamped its aborted event (`ts`, ms resolution). @unit ms */
  stamped: number[];
  /** Same, only the runs that were queued when the cascade began. */
  queued: number[];
  /** Same, only the runs that were running. */
  running: number[];
  /** How long abortParent() itself took (registry listing and the requests). @unit ms */
  call: number;
  /** CPU time the cascade took, from the call until a second after the last aborted event was observed, per process kind. @unit ms */
  cpuMs: CascadeCpu;
}

/** CPU time per process kind. @unit ms */
interface CascadeCpu {
  /** The parent's process: the parent, the observer and the simulator. */
  parent: number;
  nats_server: number;
  /** The daemon processes together. */
  daemons: number;
}

// Starts counting the CPU time of every process of the cluster; the returned function says how much
// each kind used since (Linux /proc, 10 ms ticks per process: the sum over rounds is what is read).
function cascadeCpu(cluster: Cluster, daemonPids: readonly number[]): () => CascadeCpu {
  const daemonsCpu = () => daemonPids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
  const natsCpu = () => (cluster.server.pid === undefined ? Number.NaN : processCpuMs(cluster.server.pid));
  const start = { self: process.cpuUsage(), nats: natsCpu(), daemons: daemonsCpu() };
  return () => {
    const self = process.cpuUsage(start.self);
    return {
      parent: (self.user + self.system) / 1000,
      nats_server: natsCpu() - start.nats,
      daemons: daemonsCpu() - start.daemons,
    };
  };
}

async function round(
  cluster: Cluster,
  index: number | "warm-up",
  daemonPids: readonly number[],
): Promise<Round> {
  const turn = await parentTurn("4k");
  const forks = await cluster.subagent();
  const parent = `bench-cascade-${index}`;
  const slots = DAEMONS * CONCURRENCY;
  // The cascade begins once every slot's model call is at the simulator (accepted there), not merely
  // claimed: a run still starting would connect and send its request inside the measured window.
  let accepted = 0;
  let allInFlight!: () => void;
  const inFlight = new Promise<void>((resolve) => {
    allInFlight = resolve;
  });
  const onAccepted = () => {
    if (++accepted === slots) allInFlight();
  };
  cluster.sim.on("accepted", onAccepted);
  // The model answers after 100 s: every running run has its model call in flight, and the machine is
  // not loaded by streaming (what is measured is the control path, not a busy CPU).
  const handles = forks.fanOut(
    { prefix: turn.prefix, parent: { agent_id: parent } },
    Array.from({ length: RUNS }, (_, i) => ({
      directive: taggedDirective(
        `cascade-${index}-${i}`,
        "Wait for the answer.\n@sim ttft 100000\n@sim text 10",
      ),
    })),
    { warmFirst: false },
  );
  await Promise.all(handles.map((handle) => handle.published()));
  await within(inFlight, 30_000, `round ${index}: ${slots} model calls at the simulator`);
  cluster.sim.off("accepted", onAccepted);
  const states = await Promise.all(handles.map((handle) => forks.state(handle.runId)));
  const queuedIds = new Set(
    states.filter((state) => state?.status === "queued").map((state) => state!.run_id),
  );
  const terminals = handles.map((handle) => cluster.watch.terminal(handle.runId));
  const cpu = cascadeCpu(cluster, daemonPids);
  const started = now();
  await forks.abortParent(parent, { reason: "benchmark cascade" });
  const call = now() - started;
  const ended = await within(Promise.all(terminals), 20_000, `cascade round ${index}`);
  // The CPU of the whole cascade: the runs' bookkeeping (records, acks, spec removals) follows their
  // events by up to BOOKKEEPING_WAIT_MS (250 ms) and takes a few round trips more.
  await new Promise((resolve) => setTimeout(resolve, CPU_TAIL_MS));
  const cpuMs = cpu();
  const latencies: number[] = [];
  const stamped: number[] = [];
  const queued: number[] = [];
  const running: number[] = [];
  ended.forEach((watched, i) => {
    if (watched.event.type !== "aborted")
      throw new Error(`run ${handles[i]!.runId} ended ${watched.event.type}, not aborted`);
    const ms = watched.at - started;
    latencies.push(ms);
    stamped.push(watched.event.ts - started);
    (queuedIds.has(handles[i]!.runId) ? queued : running).push(ms);
  });
  await forks.close();
  return { latencies, stamped, queued, running, call, cpuMs };
}

/** The round's slowest run: call → aborted event. @unit ms */
function slowest(round: Round): number {
  return Math.round(Math.max(...round.latencies) * 100) / 100;
}

export const cascadeBenchmark: Benchmark = {
  id: 14,
  name: "cascade abort: abortParent() → every run of the parent aborted, queued ones included",
  timeoutMs: { quick: 120_000, full: 400_000 },
  async run(context: BenchContext) {
    const rounds = context.quick ? 2 : 10;
    const cluster = await startCluster({ daemons: 0, ackWaitMs: 30_000 });
    try {
      const daemonPids: number[] = [];
      for (let i = 0; i < DAEMONS; i++) {
        const daemon = await cluster.spawnDaemon(`cascade-d${i + 1}`, {
          concurrency: CONCURRENCY,
          heartbeatMs: 1_000,
        });
        if (daemon.child.pid !== undefined) daemonPids.push(daemon.child.pid);
      }
      // One cascade first, not counted: the first one after the daemons start also compiles every
      // function and validator of the control path on each of them (its slowest run is reported).
      context.log("warm-up round (not counted)");
      const warmUp = await round(cluster, "warm-up", daemonPids);
      const results: Round[] = [];
      for (let i = 0; i < rounds; i++) {
        context.log(`round ${i + 1} of ${rounds}: ${RUNS} runs of one parent on ${DAEMONS} daemon processes`);
        results.push(await round(cluster, i, daemonPids));
      }
      const all = summarize(results.flatMap((r) => r.latencies));
      const queued = summarize(results.flatMap((r) => r.queued));
      const running = summarize(results.flatMap((r) => r.running));
      const call = summarize(results.map((r) => r.call));
      const stamped = summarize(results.flatMap((r) => r.stamped));
      const cpuPerCascade = (kind: keyof CascadeCpu) =>
        Math.round(results.reduce((sum, r) => sum + r.cpuMs[kind], 0) / results.length);
      const cpu = {
        parent: cpuPerCascade("parent"),
        nats_server: cpuPerCascade("nats_server"),
        daemons: cpuPerCascade("daemons"),
      };
      // Judged on the unrounded percentile (the summary is rounded for reading).
      const pass =
        percentile(
          results.flatMap((r) => r.latencies),
          99,
        ) <= TARGET_P99_MS;
      const notes = [
        `Each round: ${RUNS} forks of one parent (one fan-out, warm-first off), ${DAEMONS} daemon processes × ${CONCURRENCY} slots, so ${DAEMONS * CONCURRENCY} runs wait on their model call (first token after 100 s) and ${RUNS - DAEMONS * CONCURRENCY} wait in the work queue. Once the slots are full, the parent calls forks.abortParent(parent) and the clock runs, per run, until its aborted event reaches an observer subscribed to agent.fork.*.events (its own connection).`,
        "Path: abortParent sends each run an abort with its own proof on core NATS (the runs forked here at once, then those the registry's index lists), waits up to 500 ms for the runs' terminal events and writes the registry flag only for runs that did not end. A running run is stopped by the daemon holding it; a queued one is ended where it waits by the one daemon of the queue group `<consumer>_queued_controls` that sees the request (its terminal event published fenced on the empty log, which is the claim; then recorded, spec deleted); a daemon whose freed slot pulls such a run puts its spec back instead of claiming it. The bookkeeping of a run ended by a control (registry record, ack or spec removal) waits until no terminal event has been in flight on its daemon for 50 ms (at most 250 ms), so that a burst's events go first.",
        `Before the ${rounds} counted rounds, one warm-up cascade on the fresh daemons: its slowest run took ${slowest(warmUp)} ms (the counted rounds' slowest: ${results.map((r) => slowest(r)).join(", ")} ms).`,
        `abortParent() itself (listing + requests for ${RUNS} runs): p50 ${call.p50} / p99 ${call.p99} ms; the per-run figures include it.`,
        `Queued runs: p50 ${queued.p50} / p99 ${queued.p99} ms (n ${queued.n}); running runs: p50 ${running.p50} / p99 ${running.p99} ms (n ${running.n}).`,
        `CPU per cascade (mean of ${rounds}, from the call until ${CPU_TAIL_MS} ms after the last aborted event, so the runs' bookkeeping is in): ${cpu.daemons} ms in the ${DAEMONS} daemon processes, ${cpu.nats_server} ms in nats-server, ${cpu.parent} ms in the parent's process (with the observer and the simulator) — on ${availableParallelism()} cores, a cascade's wall time cannot be below its CPU time divided by the cores.`,
        `When the daemons stamped the aborted events (their ts, same clock, ms resolution): p50 ${stamped.p50} / p99 ${stamped.p99} ms — the rest of each figure is the way to the observer, which shares the parent's process.`,
      ];
      if (!pass) notes.push(`MISSED: p99 ${all.p99} ms, over by ${overBy(all.p99, TARGET_P99_MS)}.`);
      return {
        figures: {
          aborted_event_ms: all,
          queued_aborted_event_ms: queued,
          running_aborted_event_ms: running,
          abort_parent_call_ms: call,
          aborted_event_stamped_ms: stamped,
          cpu_ms_per_cascade: { ...cpu, total: cpu.parent + cpu.nats_server + cpu.daemons },
          slowest_run_per_round_ms: results.map((r) => slowest(r)),
          warm_up_slowest_run_ms: slowest(warmUp),
        },
        baseline: {},
        target: `every run of the parent, queued ones included, aborted within ${TARGET_P99_MS} ms p99`,
        headline: `p50 ${all.p50} ms, p99 ${all.p99} ms (n ${all.n})`,
        baselineHeadline: "—",
        pass,
        params: {
          rounds,
          runs_per_round: RUNS,
          daemons: DAEMONS,
          concurrency: CONCURRENCY,
          daemon: "process",
        },
        notes,
      };
    } finally {
      await cluster.stop();
    }
  },
};
