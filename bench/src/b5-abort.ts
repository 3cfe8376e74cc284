// #5 Abort latency: `abort()` to the simulator seeing the model call's connection close, and to the
// tool process being gone, for runs on a daemon over NATS.
import { spawnSync } from "node:child_process";
import { setTimeout as delay } from "node:timers/promises";
import type { ForkHandle } from "@forkd/core";
import { type Cluster, startCluster, within } from "./cluster.js";
import { parentTurn, taggedDirective } from "./fixtures.js";
import { now, overBy, percentile, summarize } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

const TARGET_P99_MS = 25;

/** Resolves once `handle` emitted an event of `type`. */
async function waitForEvent(handle: ForkHandle, type: string): Promise<void> {
  for await (const event of handle.events()) {
    if (event.type === type) return;
    if (event.type === "completed" || event.type === "failed" || event.type === "aborted") {
      throw new Error(`run ${handle.runId} ended (${event.type}) before a ${type} event`);
    }
  }
}

/** The host pid of the newest process whose command line matches `pattern`, or NaN. */
function hostPidOf(pattern: string): number {
  const found = spawnSync("pgrep", ["-n", "-f", pattern], { encoding: "utf8" });
  const pid = Number(found.stdout.trim());
  return found.status === 0 && pid > 0 ? pid : Number.NaN;
}

/** Whether a process exists (a zombie counts: it is not reaped yet). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

interface AbortSample {
  /** abort() called → the simulator saw the connection close (or the tool process was gone). */
  stopped: number;
  /** abort() called → the run's `aborted` event reached an observer. */
  aborted: number;
}

/** Streaming model calls, aborted one at a time once their first llm.delta arrived. */
async function llmAborts(cluster: Cluster, count: number): Promise<AbortSample[]> {
  const turn = await parentTurn("48k");
  const forks = await cluster.subagent();
  const samples: AbortSample[] = [];
  for (let i = 0; i < count; i++) {
    // 20 tokens/s for 2000 tokens: the stream would last 100 s.
    const handle = forks.fork({
      prefix: turn.prefix,
      directive: taggedDirective(`llm-${i}`, "Write a long essay.\n@sim tps 20\n@sim text 2000"),
      parent: { agent_id: "bench-parent" },
    });
    await waitForEvent(handle, "llm.delta");
    const disconnect = cluster.sim.next("disconnect");
    const terminal = cluster.watch.terminal(handle.runId);
    const started = now();
    await handle.abort("benchmark abort");
    const [gone, end] = await within(Promise.all([disconnect, terminal]), 10_000, `abort ${i}`);
    if (end.event.type !== "aborted")
      throw new Error(`run ${handle.runId} ended ${end.event.type}, not aborted`);
    samples.push({ stopped: gone.at - started, aborted: end.at - started });
  }
  return samples;
}

/** Bash tool calls (`sleep 30`), aborted once the process is running; polled every millisecond until it is gone. */
async function toolAborts(cluster: Cluster, count: number): Promise<AbortSample[]> {
  const turn = await parentTurn("48k");
  const forks = await cluster.subagent();
  const samples: AbortSample[] = [];
  for (let i = 0; i < count; i++) {
    // The tool runs in its own PID namespace (the Bash sandbox): `$$` there is not a host pid, so
    // the process is named and found by its command line.
    const tag = `forkd-bench-abort-${process.pid}-${i}`;
    const command = JSON.stringify({ command: `exec -a ${tag} sleep 30` });
    const handle = forks.fork({
      prefix: turn.prefix,
      directive: taggedDirective(`tool-${i}`, `Wait.\n@sim tool Bash ${command}`),
      parent: { agent_id: "bench-parent" },
    });
    await waitForEvent(handle, "tool.call");
    // No event says that the process has started: wait until it shows in the process table.
    let pid = Number.NaN;
    for (let waited = 0; Number.isNaN(pid) || !alive(pid); waited++) {
      if (waited > 10_000) throw new Error(`tool ${i}: no running process after 10 s`);
      pid = hostPidOf(`^${tag} 30$`);
      await delay(1);
    }
    const terminal = cluster.watch.terminal(handle.runId);
    const started = now();
    await handle.abort("benchmark abort");
    while (alive(pid)) {
      if (now() - started > 10_000)
        throw new Error(`tool ${i}: process ${pid} still alive 10 s after abort()`);
      await delay(1);
    }
    const gone = now();
    const end = await within(terminal, 10_000, `tool abort ${i}`);
    if (end.event.type !== "aborted")
      throw new Error(`run ${handle.runId} ended ${end.event.type}, not aborted`);
    samples.push({ stopped: gone - started, aborted: end.at - started });
  }
  return samples;
}

export const abortBenchmark: Benchmark = {
  id: 5,
  name: "abort latency: abort() → the simulator sees the disconnect / the tool process is gone",
  async run(context: BenchContext) {
    const llmCount = context.quick ? 50 : 200;
    const toolCount = context.quick ? 5 : 20;
    const cluster = await startCluster({ daemons: 1, concurrency: 8, bash: "full" });
    try {
      context.log(`${llmCount} aborts of streaming model calls`);
      const llm = await llmAborts(cluster, llmCount);
      context.log(`${toolCount} aborts of a running Bash tool`);
      const tool = await toolAborts(cluster, toolCount);
      const llmStopped = summarize(llm.map((s) => s.stopped));
      const llmAborted = summarize(llm.map((s) => s.aborted));
      const toolStopped = summarize(tool.map((s) => s.stopped));
      const toolAborted = summarize(tool.map((s) => s.aborted));
      // Judged on the unrounded percentiles (the summaries are rounded for reading).
      const exactP99 = (values: number[]) => percentile(values, 99);
      const pass =
        exactP99(llm.map((s) => s.stopped)) <= TARGET_P99_MS &&
        exactP99(tool.map((s) => s.stopped)) <= TARGET_P99_MS;
      const notes = [
        "Model calls: each fork streams at 20 tokens/s; once its first llm.delta reached the parent, the parent calls abort() and the clock runs until the simulator's `disconnect` event (its `at`, the same clock as this process: performance.timeOrigin + performance.now()). One abort at a time.",
        "Tools: each fork runs `Bash` with `exec -a <tag> sleep 30` (bash policy full, in the bubblewrap sandbox); once the process shows in the host's process table (found by its tag with pgrep) the parent calls abort() and polls its pid (kill(pid, 0)) every ~1 ms until it is gone: the figure has ~1 ms of polling granularity.",
        `abort() → the run's aborted event at an observer: model calls p50 ${llmAborted.p50} / p99 ${llmAborted.p99} ms; tools p50 ${toolAborted.p50} / p99 ${toolAborted.p99} ms. The daemon publishes the event as soon as the run's signal has aborted, so it races the socket's close: it shows what the parent sees, not an upper bound of the stop.`,
        "Path: abort() publishes on core NATS (`agent.fork.<run>.abort`) before it touches the registry; the daemon's wildcard subscription aborts the run's signal, which aborts the SDK's fetch (the socket closes) or SIGKILLs the tool's process group. The daemon runs in this process.",
      ];
      if (!pass) {
        if (llmStopped.p99 > TARGET_P99_MS)
          notes.push(
            `MISSED (model calls): p99 ${llmStopped.p99} ms, over by ${overBy(llmStopped.p99, TARGET_P99_MS)}.`,
          );
        if (toolStopped.p99 > TARGET_P99_MS)
          notes.push(
            `MISSED (tools): p99 ${toolStopped.p99} ms, over by ${overBy(toolStopped.p99, TARGET_P99_MS)}.`,
          );
      }
      return {
        figures: {
          llm_disconnect_ms: llmStopped,
          tool_gone_ms: toolStopped,
          llm_aborted_event_ms: llmAborted,
          tool_aborted_event_ms: toolAborted,
        },
        baseline: {},
        target: `p99 ≤ ${TARGET_P99_MS} ms`,
        headline: `model call: p50 ${llmStopped.p50} ms, p99 ${llmStopped.p99} ms (n=${llmCount}); tool process: p50 ${toolStopped.p50} ms, p99 ${toolStopped.p99} ms (n=${toolCount})`,
        baselineHeadline: "—",
        pass,
        params: { llm_aborts: llmCount, tool_aborts: toolCount, daemons: 1, sim_tps: 20, fixture: "48k" },
        notes,
      };
    } finally {
      await cluster.stop();
    }
  },
};
