// #3 Fan-out: 100 forks of one parent across four daemons, warm-first, until every child has sent its
// first request; by reference (the default for a 48k prefix) against inline prefixes.
import { performance } from "node:perf_hooks";
import type { ForkHandle } from "@forkd/core";
import { type Cluster, startClusterWithSimProcess } from "./cluster.js";
import { CpuMeter } from "./cpu.js";
import { parentTurn, taggedDirective } from "./fixtures.js";
import { type SeenMoment, type SimProcess, TaggedRequests } from "./sim-process.js";
import { now, overBy, round, summarize } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

const CHILDREN = 100;
const DAEMONS = 4;
const CONCURRENCY = 32; // 4 × 32 ≥ 100: every child can run at once
const TTFT_MS = 1000;
const TARGET_MS = 250;

interface Trial {
  /** Last child's first request at the simulator, minus the fan-out call, minus one TTFT. @unit ms */
  beyondTtft: number;
  /** fanOut() → the first child's request at the simulator. */
  firstDispatch: number;
  /** The first child's response began (simulator's first byte) → its first `llm.delta` seen here (the release: the daemons holding the followers hear the same event). */
  release: number;
  /** Release → the last child's request at the simulator. */
  rest: number;
  /** Spread of the 99 followers' requests (first to last). */
  followerSpread: number;
  /** fanOut() → the last follower's spec went through NATS (published once the leader was claimed). */
  lastSpec: number;
  /** fanOut() → the last follower's `accepted` event (claimed by a daemon, during the leader's TTFT when it fits). */
  lastAccepted: number;
  /** fanOut() → the last follower's `started` event (its run set up; its first call then waits for the leader). */
  lastStarted: number;
  /** CPU per released child from release to the last request: this process, the daemon processes, nats-server. @unit ms */
  cpuPerChild: { thisProcess: number; daemonProcesses: number; natsServer: number; simulator: number };
  /** Event-loop utilisation of this process (parent, daemons) from release to the last request. */
  busy: number;
}

async function trial(
  cluster: Cluster<SimProcess>,
  transport: "ref" | "inline",
  label: string,
  daemonPids: readonly number[],
): Promise<Trial> {
  const turn = await parentTurn("48k");
  const forks = await cluster.subagent({ prefixTransport: transport });
  const received = new TaggedRequests(cluster.sim);
  const firstByte = new Map<number, number>();
  const onFirstByte = (event: SeenMoment) => firstByte.set(event.seq, event.at);
  let released: number | undefined;
  let firstRunId: string | undefined;
  let eluAtRelease: ReturnType<typeof performance.eventLoopUtilization> | undefined;
  let busy = Number.NaN;
  let meter: CpuMeter | undefined;
  let cpu: Record<string, number> | undefined;
  let accepted = 0;
  const onAccepted = () => {
    accepted += 1;
    if (accepted === CHILDREN && eluAtRelease !== undefined) {
      busy = performance.eventLoopUtilization(eluAtRelease).utilization;
      cpu = meter?.readMs();
    }
  };
  const lastOf = { accepted: 0, started: 0, spec: 0 };
  const offEvents = cluster.watch.onEvent(({ event, at }) => {
    if (event.run_id === firstRunId) {
      if (released === undefined && (event.type === "llm.delta" || event.type === "llm.message")) {
        released = at;
        eluAtRelease = performance.eventLoopUtilization();
        meter = new CpuMeter({
          nats_server: cluster.server.pid,
          simulator: cluster.sim.pid,
          ...Object.fromEntries(daemonPids.map((pid, i) => [`daemon${i}`, pid])),
        });
      }
    } else if (event.type === "accepted" || event.type === "started") {
      lastOf[event.type] = Math.max(lastOf[event.type], at);
    }
  });
  const specs = cluster.watch.nc.subscribe("agent.fork.*", {
    callback: () => {
      lastOf.spec = now();
    },
  });
  cluster.sim.on("firstByte", onFirstByte).on("accepted", onAccepted);
  try {
    const tags = Array.from({ length: CHILDREN }, (_, i) => `${label}-${i}`);
    const started = now();
    const handles: ForkHandle[] = forks.fanOut(
      { prefix: turn.prefix, parent: { agent_id: "bench-parent" } },
      tags.map((tag) => ({ directive: taggedDirective(tag, "Fan-out child: answer in one line.") })),
      { warmFirst: true },
    );
    firstRunId = handles[0]!.runId;
    const outcomes = await Promise.all(handles.map((handle) => handle.result()));
    const failed = outcomes.filter((outcome) => outcome.status !== "completed");
    if (failed.length > 0)
      throw new Error(`${failed.length} children did not complete (${failed[0]!.status})`);
    const requests = await Promise.all(tags.map((tag) => received.get(tag)));
    const times = requests.map((request) => request.receivedAt);
    const first = times[0]!;
    const last = Math.max(...times);
    const followers = times.slice(1);
    const firstResponse = firstByte.get(requests[0]!.seq);
    if (firstResponse === undefined || released === undefined) throw new Error("no release seen");
    return {
      beyondTtft: round(last - started - TTFT_MS),
      firstDispatch: round(first - started),
      release: round(released - firstResponse),
      rest: round(last - released),
      followerSpread: round(Math.max(...followers) - Math.min(...followers)),
      lastSpec: round(lastOf.spec - started),
      lastAccepted: round(lastOf.accepted - started),
      lastStarted: round(lastOf.started - started),
      busy: round(busy, 3),
      cpuPerChild: cpuPerChild(cpu),
    };
  } finally {
    received.close();
    cluster.sim.off("firstByte", onFirstByte).off("accepted", onAccepted);
    offEvents();
    specs.unsubscribe();
    await forks.close();
  }
}

// The CPU a trial spent from its release to its last request, per released child.
function cpuPerChild(cpu: Record<string, number> | undefined): Trial["cpuPerChild"] {
  if (cpu === undefined)
    return {
      thisProcess: Number.NaN,
      daemonProcesses: Number.NaN,
      natsServer: Number.NaN,
      simulator: Number.NaN,
    };
  const released = CHILDREN - 1;
  const daemons = Object.entries(cpu)
    .filter(([name]) => name.startsWith("daemon"))
    .reduce((sum, [, ms]) => sum + ms, 0);
  return {
    thisProcess: round((cpu.this_process_ms ?? Number.NaN) / released, 3),
    daemonProcesses: round(daemons / released, 3),
    natsServer: round((cpu.nats_server_ms ?? Number.NaN) / released, 3),
    simulator: round((cpu.simulator_ms ?? Number.NaN) / released, 3),
  };
}

/** Warm-up, then `trials` fan-outs by reference and `trials` inline, alternating. */
async function series(
  cluster: Cluster<SimProcess>,
  trials: number,
  label: string,
  context: BenchContext,
  daemonPids: readonly number[] = [],
) {
  const byRef: Trial[] = [];
  const inline: Trial[] = [];
  // uploads the prefix, warms every daemon's prefix cache
  await trial(cluster, "ref", `${label}-warmup`, daemonPids);
  for (let i = 0; i < trials; i++) {
    context.log(`${label}: trial ${i + 1}/${trials}`);
    byRef.push(await trial(cluster, "ref", `${label}-ref${i}`, daemonPids));
    inline.push(await trial(cluster, "inline", `${label}-inline${i}`, daemonPids));
  }
  return { byRef, inline };
}

type NumericKey = { [K in keyof Trial]: Trial[K] extends number ? K : never }[keyof Trial];
const median = (rows: Trial[], key: NumericKey) => summarize(rows.map((t) => t[key])).p50;
const stages = (rows: Trial[]) => ({
  "fanOut→first child's request": median(rows, "firstDispatch"),
  "TTFT (simulated)": TTFT_MS,
  "first byte→parent released the rest": median(rows, "release"),
  "fanOut→last follower's spec through NATS": median(rows, "lastSpec"),
  "fanOut→last follower accepted": median(rows, "lastAccepted"),
  "fanOut→last follower started": median(rows, "lastStarted"),
  "release→last child's request": median(rows, "rest"),
  "followers' spread": median(rows, "followerSpread"),
  "event-loop utilisation of this process, release→last request": median(rows, "busy"),
  "CPU per released child, this process (ms)": summarize(rows.map((t) => t.cpuPerChild.thisProcess)).p50,
  "CPU per released child, daemon processes (ms)": summarize(rows.map((t) => t.cpuPerChild.daemonProcesses))
    .p50,
  "CPU per released child, nats-server (ms)": summarize(rows.map((t) => t.cpuPerChild.natsServer)).p50,
  "CPU per released child, the simulator (ms)": summarize(rows.map((t) => t.cpuPerChild.simulator)).p50,
});

export const fanOutBenchmark: Benchmark = {
  id: 3,
  name: "fan-out: 100 forks of one parent on 4 daemons, until all sent their first request",
  async run(context: BenchContext) {
    const trials = context.quick ? 1 : 5;
    const latency = { ttftMs: TTFT_MS };
    // The suite's fixture: the four daemons run in this process, beside the parent; the simulator (a
    // provider is remote) in a process of its own.
    const simEvents = ["request", "firstByte", "accepted"] as const;
    const inProcess = await startClusterWithSimProcess({
      daemons: DAEMONS,
      concurrency: CONCURRENCY,
      latency,
      simEvents: [...simEvents],
    });
    let fixture: Awaited<ReturnType<typeof series>>;
    try {
      fixture = await series(inProcess, trials, "in-process", context);
    } finally {
      await inProcess.stop();
    }
    // The same with each daemon in its own process, as deployed (still on this 2-core machine).
    const spawned = await startClusterWithSimProcess({ daemons: 0, latency, simEvents: [...simEvents] });
    let processes: Awaited<ReturnType<typeof series>>;
    try {
      const pids: number[] = [];
      for (let i = 1; i <= DAEMONS; i++) {
        const daemon = await spawned.spawnDaemon(`bench-p${i}`, { concurrency: CONCURRENCY });
        if (daemon.child.pid !== undefined) pids.push(daemon.child.pid);
      }
      processes = await series(spawned, trials, "processes", context, pids);
    } finally {
      await spawned.stop();
    }
    const beyond = summarize(fixture.byRef.map((t) => t.beyondTtft));
    const beyondInline = summarize(fixture.inline.map((t) => t.beyondTtft));
    const beyondProc = summarize(processes.byRef.map((t) => t.beyondTtft));
    const beyondProcInline = summarize(processes.inline.map((t) => t.beyondTtft));
    // Issue #14: every trial, not the median.
    // Judged on the unrounded figures (the summaries are rounded for reading).
    const pass = Math.max(...fixture.byRef.map((t) => t.beyondTtft)) <= TARGET_MS;
    const notes = [
      `Figure: (the simulator's receipt of the last child's first request) − (the fanOut() call) − one TTFT (${TTFT_MS} ms), per trial; the verdict uses every one of the ${trials} trials of the suite's fixture (daemons in this process): the max; the median is reported too.`,
      "Warm-first: the first child (the leader) is published at once; the other 99 once a daemon claimed it, naming it as their cache_leader. The daemons claim them and set their runs up during the leader's time to first token, and hold each one's first model call until the leader's first llm.delta (its response began), so they read the cache entry it writes. The parent awaits every handle's result() from the start, as a parent would (100 core subscriptions on its connection, one read of the stored last event per child at its end).",
      `Median stages, daemons in this process, by reference: ${JSON.stringify(stages(fixture.byRef))}.`,
      `Median stages, daemons in this process, inline: ${JSON.stringify(stages(fixture.inline))}.`,
      `Median stages, daemon processes, by reference: ${JSON.stringify(stages(processes.byRef))}.`,
      `Daemons: ${DAEMONS} × concurrency ${CONCURRENCY}. The fixture runs them in this process with the parent (one event loop); the second configuration spawns them as processes (packages/daemon/bin/forkd-daemon: the shipped launcher and its runtime settings), the parent staying here; the simulator and nats-server are processes of their own in both (the simulator's times reach this process over IPC, converted to its clock). Each series starts with an unmeasured warm-up fan-out (prefix uploaded, daemons' prefix caches warm). This machine has 2 cores for all of it.`,
    ];
    if (!pass) {
      notes.push(
        `MISSED: the worst trial is ${beyond.max} ms beyond one TTFT (median ${beyond.p50} ms), over ${TARGET_MS} ms by ${overBy(beyond.max, TARGET_MS)}. The followers were claimed ${stages(fixture.byRef)["fanOut→last follower accepted"]} ms after fanOut() (median); from the release to the last request this process's event loop was ${Math.round(stages(fixture.byRef)["event-loop utilisation of this process, release→last request"] * 100)} % busy (the daemons and the parent share it).`,
      );
    }
    return {
      figures: {
        beyond_ttft_ms: beyond,
        stages_p50_ms: stages(fixture.byRef),
        daemon_processes_beyond_ttft_ms: beyondProc,
        trials: fixture.byRef,
        daemon_processes_trials: processes.byRef,
      },
      baseline: {
        inline_beyond_ttft_ms: beyondInline,
        daemon_processes_inline_beyond_ttft_ms: beyondProcInline,
        trials: fixture.inline,
      },
      target: `≤ ${TARGET_MS} ms beyond one time-to-first-token, every trial`,
      headline: `by reference: ${beyond.p50} ms beyond one TTFT (median of ${trials}, max ${beyond.max}); daemon processes: ${beyondProc.p50} ms`,
      baselineHeadline: `inline prefixes: ${beyondInline.p50} ms (max ${beyondInline.max}); daemon processes: ${beyondProcInline.p50} ms`,
      pass,
      params: {
        children: CHILDREN,
        daemons: DAEMONS,
        concurrency: CONCURRENCY,
        sim_ttft_ms: TTFT_MS,
        trials,
        fixture: "48k",
        simulator: "own process",
      },
      notes,
    };
  },
};
