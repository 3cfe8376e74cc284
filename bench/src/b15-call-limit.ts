// #15 Cluster-wide call limit (#15): 4 daemon processes share `callLimitPerKey = N`; 200 runs of two
// parents, each one model call of ~40 ms. From the simulator's request log (the independent witness):
// the most calls it held at once (target: exactly N, never more), and how long a slot freed while
// every slot was taken stayed unused before another daemon's call arrived (the watch's wake-up path:
// release write → KV watch → the waiter's read and compare-and-set → its HTTP request).
import { ensureForkResources } from "@forkd/client";
import type { LlmRequest, LlmResponse } from "@forkd/core";
import { createDaemonLogger } from "@forkd/daemon";
import { CallLimits } from "@forkd/daemon/internal";
import { connect } from "@nats-io/transport-node";
import { maxConcurrent, slotReuseGaps } from "../../test/harness/concurrency.js";
import { startCluster, within } from "./cluster.js";
import { now, round, summarize } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

const LIMIT = 3;
const DAEMONS = 4;
/** The in-process comparison: calls through one slot (N = 1), each holding it this long. @unit ms */
const HANDOFF_HOLD_MS = 100;

/**
 * Four limiters on four connections to one nats-server share a limit of 1; each makes one call after
 * the other (its next call starts waiting when its last ends), every call holding the slot 100 ms.
 * The fair order gives a freed slot to the longest waiting, on another limiter: every hand-over
 * crosses daemons. Per hand-over: the time from one call's end to the next one's start, and the NATS
 * messages the four connections sent per call. With `watch` false the limiters only poll (40 ms).
 */
async function handoffs(
  url: string,
  watch: boolean,
  calls: number,
): Promise<{ gaps: number[]; messagesPerCall: number }> {
  const connections = await Promise.all(Array.from({ length: DAEMONS }, () => connect({ servers: url })));
  const limits: CallLimits[] = [];
  try {
    for (const [i, nc] of connections.entries()) {
      const resources = await ensureForkResources(nc);
      const daemonId = `handoff-${i}`;
      limits.push(
        new CallLimits({
          kv: resources.daemons,
          daemonId,
          logger: createDaemonLogger({ level: "silent", format: "json", daemonId }),
          settings: { perKey: 1, tenant: "bench" },
          keyIdOf: () => (watch ? "handoff-watch" : "handoff-poll"),
          watch,
        }),
      );
    }
    const starts: number[] = [];
    const ends: number[] = [];
    const llm = {
      createMessage: async () => {
        starts.push(now());
        await new Promise((resolve) => setTimeout(resolve, HANDOFF_HOLD_MS));
        ends.push(now());
        return {} as LlmResponse;
      },
    };
    const request = { model: "m", max_tokens: 1, messages: [] } as unknown as LlmRequest;
    const sentBefore = connections.reduce((sum, nc) => sum + nc.stats().outMsgs, 0);
    await Promise.all(
      limits.map(async (limit, i) => {
        const client = limit.wrap(llm, { api: "anthropic", parent: `p${i}` });
        for (let n = 0; n < calls / DAEMONS; n++) await client.createMessage(request);
      }),
    );
    const sent = connections.reduce((sum, nc) => sum + nc.stats().outMsgs, 0) - sentBefore;
    starts.sort((a, b) => a - b);
    ends.sort((a, b) => a - b);
    const gaps = starts.slice(1).map((start, i) => start - ends[i]!);
    return { gaps, messagesPerCall: round(sent / calls) };
  } finally {
    for (const limit of limits) limit.close();
    await Promise.all(connections.map((nc) => nc.close()));
  }
}

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
      context.log("in process: 4 limiters share a limit of 1, with their watch and polling only");
      const handoffCalls = context.quick ? 40 : 100;
      const watched = await handoffs(cluster.server.url, true, handoffCalls);
      const polled = await handoffs(cluster.server.url, false, handoffCalls);
      const watchedGaps = summarize(watched.gaps);
      const polledGaps = summarize(polled.gaps);
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
          in_process_handoff_ms: watchedGaps,
          in_process_nats_messages_per_call: watched.messagesPerCall,
        },
        baseline: {
          in_process_handoff_ms_polling_only: polledGaps,
          in_process_nats_messages_per_call_polling_only: polled.messagesPerCall,
        },
        target: `never more than N = ${LIMIT} calls of the key at the provider at once, and N reached`,
        headline: `max ${max} of N ${LIMIT}; freed slot reused p50 ${gaps.p50} ms, p99 ${gaps.p99} ms`,
        baselineHeadline: `in process, N 1: watch p50 ${watchedGaps.p50} / p99 ${watchedGaps.p99} ms, ${watched.messagesPerCall} NATS msgs a call; polling only p50 ${polledGaps.p50} / p99 ${polledGaps.p99} ms, ${polled.messagesPerCall} msgs`,
        pass,
        params: {
          runs,
          daemons: DAEMONS,
          limit: LIMIT,
          model_call_ms: 40,
          daemon: "process",
          in_process_calls: handoffCalls,
          in_process_hold_ms: HANDOFF_HOLD_MS,
        },
        notes: [
          "Concurrency is read from the simulator's log (arrival and end of each request), not from the limiter's own entry.",
          "A freed slot's reuse: for each request that ended while all N slots were taken, the time to the next request's arrival at the simulator (each arrival answers the oldest such end). It includes the client's release, the compare-and-set that gives the slot back, the KV watch waking the waiting daemon, its read and compare-and-set, and its HTTP request.",
          "Polling stays as a fallback: every 500 ms with a live watch, 40 ms without one.",
          `In process (the baseline): 4 limiters on 4 connections to the same nats-server share a limit of 1; ${handoffCalls} calls of four parents, each holding the slot ${HANDOFF_HOLD_MS} ms; each limiter makes its calls one after the other, so the longest waiting (the fair order's pick) is always on another limiter. The hand-over is one call's end to the next one's start; the messages are what the 4 connections sent (reads, writes, watch flow control) per call. Once with the KV watch, once polling only (40 ms): the limiter as it was before the watch.`,
        ],
      };
    } finally {
      await cluster.stop();
    }
  },
};
