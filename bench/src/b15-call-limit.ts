// #15 Cluster-wide call limit (#15): 4 daemon processes share `callLimitPerKey = N`; 200 runs of two
// parents, each one model call of ~40 ms. From the simulator's request log (the independent witness):
// the most calls it held at once (target: exactly N, never more), and how long a slot freed while
// every slot was taken stayed unused before another daemon's call arrived (the watch's wake-up path:
// release write → KV watch → the waiter's read and compare-and-set → its HTTP request).
import { maxConcurrent, slotReuseGaps } from "../../test/harness/concurrency.js";
import { startCluster, within } from "./cluster.js";
import { now, round, summarize } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

const LIMIT = 3;
const DAEMONS = 4;

export const callLimitBenchmark: Benchmark = {
  id: 15,
  name: "cluster-wide call limit: max concurrency at the provider vs N, freed slot → reused",
  timeoutMs: { quick: 120_000, full: 400_000 },
  async run(context: BenchContext) {
    const runs = context.quick ? 60 : 200;
    const cluster = await startCluster({ daemons: 0, simLogLimit: runs + 10 });
    try {
      for (let i = 0; i < DAEMONS; i++)
        await cluster.spawnDaemon(`limit-d${i + 1}`, {
          concurrency: 60,
          extraEnv: { FORKD_CALL_LIMIT_PER_KEY: String(LIMIT) },
        });
      const forks = await cluster.subagent();
      context.log(`${runs} runs on ${DAEMONS} daemon processes, call limit ${LIMIT} per key`);
      const started = now();
      const handles = Array.from({ length: runs }, (_, i) =>
        forks.fork({
          prefix: null,
          parent: { agent_id: `bench-limit-${i % 2}` },
          directive: `Answer ${i}.\n@sim ttft 40\n@sim say ok`,
        }),
      );
      const outcomes = await within(
        Promise.all(handles.map((handle) => handle.result())),
        300_000,
        "call-limit runs",
      );
      const elapsed = now() - started;
      const failed = outcomes.filter((outcome) => outcome.status !== "completed").length;
      if (failed > 0) throw new Error(`${failed} of ${runs} runs did not complete`);
      await forks.close();
      const calls = cluster.sim.requests().filter((entry) => entry.path === "/v1/messages");
      const max = maxConcurrent(calls);
      const gaps = summarize(slotReuseGaps(calls, LIMIT));
      const pass = max === LIMIT;
      return {
        figures: {
          max_concurrent_calls: max,
          limit: LIMIT,
          freed_slot_reused_ms: gaps,
          runs_per_second: round(runs / (elapsed / 1000)),
        },
        baseline: {},
        target: `never more than N = ${LIMIT} calls of the key at the provider at once, and N reached`,
        headline: `max ${max} of N ${LIMIT}; freed slot reused p50 ${gaps.p50} ms, p99 ${gaps.p99} ms`,
        baselineHeadline: "—",
        pass,
        params: { runs, daemons: DAEMONS, limit: LIMIT, model_call_ms: 40, daemon: "process" },
        notes: [
          "Concurrency is read from the simulator's log (arrival and end of each request), not from the limiter's own entry.",
          "A freed slot's reuse: for each request that ended while all N slots were taken, the time to the next request's arrival at the simulator (each arrival answers the oldest such end). It includes the client's release, the compare-and-set that gives the slot back, the KV watch waking the waiting daemon, its read and compare-and-set, and its HTTP request.",
          "Polling stays as a fallback: every 500 ms with a live watch, 40 ms without one.",
        ],
      };
    } finally {
      await cluster.stop();
    }
  },
};
