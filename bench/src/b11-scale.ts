// #11 Scale: batches of forks of one 4k parent on 8 daemon processes — per-fork wall, makespan
// against the slot-bound ideal, stored bytes per fork, nats-server and daemon RSS, `forkd ps`
// latency as the registry fills — then a 30 s retention window: how fast the stored messages of
// finished runs fall, while a running run keeps all of its own (issue #23).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ForkResources } from "@forkd/client";
import { type NatsForkHandle, type NatsForkSubagent, readRetentionLease } from "@forkd/client";
import { readStoredEvents } from "@forkd/client/internal";
import type { DaemonProcess } from "../../test/harness/daemons.js";
import { memoryOf } from "./b8-memory.js";
import { type Cluster, startCluster, within } from "./cluster.js";
import { parentTurn, taggedDirective } from "./fixtures.js";
import { now, round, summarize } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

const DAEMONS = 8;
const SLOTS_PER_DAEMON = 32;
const TTFT_MS = 300;
const RETENTION_MS = 30_000;
/** After the window, the stored messages of finished runs must fall below 5 % of their peak within this. */
const RETENTION_DEADLINE_MS = 90_000;
const PS_SAMPLES = 5;
const CLI = fileURLToPath(new URL("../../packages/cli/dist/bin.js", import.meta.url));

/** Bytes and messages stored in each stream forkd uses. */
interface Stored {
  events: { bytes: number; messages: number };
  specs: { bytes: number; messages: number };
  runs: { bytes: number; messages: number };
  prefixes: { bytes: number; messages: number };
}

async function stored(resources: ForkResources): Promise<Stored> {
  const state = async (name: string) => {
    const info = await resources.jsm.streams.info(name);
    return { bytes: info.state.bytes, messages: info.state.messages };
  };
  const [events, specs, runs, prefixes] = await Promise.all([
    state(resources.subjects.streams.events),
    state(resources.subjects.streams.specs),
    state(resources.subjects.bucketStreams.runs),
    state(resources.subjects.bucketStreams.prefixes),
  ]);
  return { events, specs, runs, prefixes };
}

/** Wall time of `forkd ps` (a process, as an operator runs it), median of {@link PS_SAMPLES}. @unit ms */
async function psLatency(natsUrl: string, args: readonly string[] = []): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < PS_SAMPLES; i++) {
    const started = now();
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, "ps", "--nats", natsUrl, ...args], {
        stdio: ["ignore", "ignore", "inherit"],
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp" },
      });
      child.on("error", reject);
      child.on("exit", resolve);
    });
    if (code !== 0) throw new Error(`forkd ps ${args.join(" ")} exited ${code}`);
    samples.push(now() - started);
  }
  return round(summarize(samples).p50, 0);
}

function rssOf(daemons: readonly DaemonProcess[], serverPid: number | undefined) {
  const daemonRss = daemons.map((daemon) => memoryOf(daemon.child.pid!));
  return {
    nats_server_rss_mb: serverPid === undefined ? null : round(memoryOf(serverPid).rss, 1),
    daemon_rss_mb_max: round(Math.max(...daemonRss.map((m) => m.rss)), 1),
    daemon_peak_rss_mb_max: round(Math.max(...daemonRss.map((m) => m.hwm)), 1),
  };
}

interface Batch {
  forks: number;
  completed: number;
  lost: number;
  makespan_ms: number;
  per_fork_wall_ms: number;
  slot_bound_ideal_ms: number;
  makespan_over_ideal: number;
  stored_bytes_per_fork: Record<keyof Stored, number>;
  stored_messages_per_fork: Record<keyof Stored, number>;
  ps_ms: number;
  ps_all_ms: number;
  nats_server_rss_mb: number | null;
  daemon_rss_mb_max: number;
  daemon_peak_rss_mb_max: number;
}

/** Forks `count` children one by one as a parent would, and waits for every terminal event. */
async function runBatch(
  cluster: Cluster,
  forks: NatsForkSubagent,
  count: number,
  tag: string,
  singleRunMs: number,
): Promise<
  Omit<Batch, "ps_ms" | "ps_all_ms" | "nats_server_rss_mb" | "daemon_rss_mb_max" | "daemon_peak_rss_mb_max">
> {
  const turn = await parentTurn("4k");
  const before = await stored(forks.resources);
  const started = now();
  const handles: NatsForkHandle[] = [];
  for (let i = 0; i < count; i++) {
    const handle = forks.fork({
      prefix: turn.prefix,
      directive: taggedDirective(`${tag}-${i}`, "Scale probe.\n@sim text 5"),
      parent: { agent_id: `bench-scale-${tag}` },
    });
    handles.push(handle);
    // Publishing never waits on a run; this only keeps the parent's own event loop responsive.
    if (i % 500 === 499) await new Promise((resolve) => setImmediate(resolve));
  }
  const ends = await within(
    Promise.all(handles.map((handle) => cluster.watch.terminal(handle.runId))),
    Math.max(120_000, count * 40),
    `${count} forks`,
  );
  // A run can end before its parent has registered it (queued entry, parent index key): the
  // stored figures are read once every parent write is done.
  await within(Promise.all(handles.map((handle) => handle.published())), 60_000, `${count} registrations`);
  const makespan = Math.max(...ends.map((end) => end.at)) - started;
  const completed = ends.filter((end) => end.event.type === "completed").length;
  const after = await stored(forks.resources);
  const perFork = (pick: (s: Stored[keyof Stored]) => number) =>
    Object.fromEntries(
      (Object.keys(after) as (keyof Stored)[]).map((key) => [
        key,
        round((pick(after[key]) - pick(before[key])) / count, 1),
      ]),
    ) as Record<keyof Stored, number>;
  const ideal = Math.ceil(count / (DAEMONS * SLOTS_PER_DAEMON)) * singleRunMs;
  return {
    forks: count,
    completed,
    lost: count - completed,
    makespan_ms: round(makespan, 0),
    per_fork_wall_ms: round(makespan / count, 2),
    slot_bound_ideal_ms: round(ideal, 0),
    makespan_over_ideal: round(makespan / ideal, 2),
    stored_bytes_per_fork: perFork((s) => s.bytes),
    stored_messages_per_fork: perFork((s) => s.messages),
  };
}

async function spawnDaemons(cluster: Cluster, prefix: string, extraEnv: Record<string, string> = {}) {
  const daemons: DaemonProcess[] = [];
  for (let i = 0; i < DAEMONS; i++) {
    daemons.push(
      await cluster.spawnDaemon(`${prefix}-${i + 1}`, {
        concurrency: SLOTS_PER_DAEMON,
        bash: "off",
        extraEnv,
      }),
    );
  }
  return daemons;
}

/** Sizes of the batches: `--sizes` on the command line, else 1,000 and 8,000 (quick: 100 and 400). */
function sizesOf(context: BenchContext): number[] {
  return context.sizes ?? (context.quick ? [100, 400] : [1_000, 8_000]);
}

export const scaleBenchmark: Benchmark = {
  id: 11,
  name: "scale: batches of forks on 8 daemon processes, registry growth and 30 s retention",
  timeoutMs: { quick: 240_000, full: 1_800_000 },
  async run(context: BenchContext) {
    const sizes = sizesOf(context);
    const cluster = await startCluster({ daemons: 0, latency: { ttftMs: TTFT_MS } });
    try {
      const forks = await cluster.subagent();
      const serverPid = cluster.server.pid;
      // Growth: the default retention (6 h) keeps every run of the batches, as a busy hour does.
      let daemons = await spawnDaemons(cluster, "bench-scale");
      const psEmpty = await psLatency(cluster.server.url);
      const psAllEmpty = await psLatency(cluster.server.url, ["--all"]);
      const rssEmpty = rssOf(daemons, serverPid);
      context.log(`empty registry: ps ${psEmpty} ms, ps --all ${psAllEmpty} ms`);
      const single = await runBatch(cluster, forks, 1, "single", 1);
      const singleRunMs = single.makespan_ms;
      const batches: Batch[] = [];
      for (const size of sizes) {
        context.log(`${size} forks on ${DAEMONS} daemons × ${SLOTS_PER_DAEMON} slots`);
        const batch = await runBatch(cluster, forks, size, `n${size}`, singleRunMs);
        const ps = await psLatency(cluster.server.url);
        const psAll = await psLatency(cluster.server.url, ["--all"]);
        batches.push({ ...batch, ps_ms: ps, ps_all_ms: psAll, ...rssOf(daemons, serverPid) });
        context.log(
          `  ${batch.completed}/${size} completed, ${batch.per_fork_wall_ms} ms per fork, makespan ${batch.makespan_over_ideal}× ideal; ps ${ps} ms (--all ${psAll} ms)`,
        );
      }
      const storedRuns = (await stored(forks.resources)).runs.messages;

      // Retention: the daemons restart with a 30 s window; one run that never ends keeps running.
      context.log(`retention: daemons restarted with a ${RETENTION_MS / 1000} s window`);
      await Promise.all(daemons.map((daemon) => daemon.kill("SIGTERM")));
      daemons = await spawnDaemons(cluster, "bench-keep", { FORKD_RETENTION_MS: String(RETENTION_MS) });
      const turn = await parentTurn("4k");
      const longRun = forks.fork({
        prefix: turn.prefix,
        directive: "Stay.\n@sim ttft 900000",
        parent: { agent_id: "bench-scale-long" },
      });
      const retentionSize = sizes[0]!;
      const lastBatch = await runBatch(cluster, forks, retentionSize, "retention", singleRunMs);
      const endedAt = Date.now();
      const finishedMessages = async () => {
        const s = await stored(forks.resources);
        return s.events.messages + s.runs.messages;
      };
      const curve: { t_s: number; messages: number }[] = [];
      let peak = 0;
      const windowEnd = endedAt + RETENTION_MS;
      let belowAt: number | undefined;
      while (Date.now() < windowEnd + RETENTION_DEADLINE_MS + 10_000) {
        const messages = await finishedMessages();
        peak = Math.max(peak, messages);
        curve.push({ t_s: round((Date.now() - endedAt) / 1000, 1), messages });
        if (Date.now() > windowEnd && messages < 0.05 * peak) {
          belowAt = Date.now();
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      const longEvents = await readStoredEvents(forks.resources, longRun.runId);
      const longState = await forks.state(longRun.runId);
      const lease = await readRetentionLease(forks.resources);
      await longRun.abort("benchmark over");
      const belowAfterWindowMs = belowAt === undefined ? null : belowAt - windowEnd;
      const last = batches.at(-1)!;
      const first = batches[0]!;
      // Judged unrounded (1.204 misses 1.2); rounded where shown.
      const exactWallRatio = last.per_fork_wall_ms / first.per_fork_wall_ms;
      const exactPsRatio = last.ps_ms / psEmpty;
      const wallRatio = round(exactWallRatio, 2);
      const psRatio = round(exactPsRatio, 2);
      const lost = batches.reduce((sum, batch) => sum + batch.lost, 0) + lastBatch.lost;
      const retentionPass =
        belowAfterWindowMs !== null &&
        belowAfterWindowMs <= RETENTION_DEADLINE_MS &&
        longState?.status === "running" &&
        longEvents.length > 0;
      const pass = lost === 0 && exactWallRatio <= 1.2 && exactPsRatio <= 2 && retentionPass;
      const notes = [
        `${DAEMONS} daemon processes (packages/daemon/bin/forkd-daemon: the shipped launcher and its runtime settings) × ${SLOTS_PER_DAEMON} slots, the simulator ${TTFT_MS} ms to first token, one nats-server ${cluster.server.pid === undefined ? "" : `(pid ${cluster.server.pid}) `}on loopback; every fork a child of the 4k parent, forked one by one without waiting; a run is over when the observer sees its terminal event.`,
        `Slot-bound ideal = ceil(N / ${DAEMONS * SLOTS_PER_DAEMON}) × one fork's wall alone (${singleRunMs} ms).`,
        `forkd ps is the CLI as a process (node start-up included), median of ${PS_SAMPLES}: ${psEmpty} ms on the empty registry, ${last.ps_ms} ms with ${storedRuns} registry messages after the batches (${psRatio}×); ps --all (reads every run, what ps did before) ${psAllEmpty} → ${last.ps_all_ms} ms.`,
        `Retention: the daemons restarted with FORKD_RETENTION_MS=${RETENTION_MS}; a batch of ${retentionSize} ran; the stored messages of finished runs (events + registry) peaked at ${peak} and fell below 5 % ${belowAfterWindowMs === null ? "NOT within the deadline" : `${round(belowAfterWindowMs / 1000, 1)} s after the window ended`} (target ≤ ${RETENTION_DEADLINE_MS / 1000} s). The run that was running all along kept its entry (${longState?.status}) and its ${longEvents.length} events. Lease: ${lease?.holder ?? "none"}, last sweep ${JSON.stringify(lease?.last_sweep ?? null)}.`,
      ];
      return {
        figures: {
          batches,
          per_fork_wall_ratio_last_to_first: wallRatio,
          ps_ratio_full_to_empty: psRatio,
          lost,
          retention: {
            window_ms: RETENTION_MS,
            peak_messages: peak,
            below_5_percent_after_window_ms: belowAfterWindowMs,
            curve,
            running_run_kept: { status: longState?.status ?? null, events: longEvents.length },
            batch: lastBatch,
          },
        },
        baseline: {
          ps_empty_ms: psEmpty,
          ps_all_empty_ms: psAllEmpty,
          single_fork_ms: singleRunMs,
          ...rssEmpty,
        },
        target: `0 lost; per-fork wall at ${last.forks} ≤ 1.2× at ${first.forks}; ps with the runs stored ≤ 2× empty; with ${RETENTION_MS / 1000} s retention, finished runs' stored messages < 5 % of peak within ${RETENTION_DEADLINE_MS / 1000} s after the window; a running run keeps everything`,
        headline: `${lost} lost; per-fork wall ${first.per_fork_wall_ms} → ${last.per_fork_wall_ms} ms (${wallRatio}×); ps ${psEmpty} → ${last.ps_ms} ms (${psRatio}×); retention < 5 % ${belowAfterWindowMs === null ? "missed" : `${round(belowAfterWindowMs / 1000, 1)} s after the window`}`,
        baselineHeadline: `empty registry: ps ${psEmpty} ms; ps --all ${psAllEmpty} → ${last.ps_all_ms} ms`,
        pass,
        params: {
          sizes,
          daemons: DAEMONS,
          slots_per_daemon: SLOTS_PER_DAEMON,
          sim_ttft_ms: TTFT_MS,
          retention_ms: RETENTION_MS,
          fixture: "4k",
        },
        notes,
      };
    } finally {
      await cluster.stop();
    }
  },
};
