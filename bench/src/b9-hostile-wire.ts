// #9 Hostile wire (issue #11): 10,000 hostile messages on every subject a daemon listens to (aborts,
// spec subjects, the max-deliveries advisory), sent as fast as NATS takes them to a daemon process.
// The daemon must stay up, give each malformed message its typed refusal (counted on /metrics),
// fail each hostile spec's own run, run a normal fork afterwards, and stay under 300 MB of RSS.
import { freePort } from "@forkd/testing";
import { hostileMessages, refusedControlCounts } from "../../test/harness/hostile-wire.js";
import { memoryOf } from "./b8-memory.js";
import { startCluster, within } from "./cluster.js";
import { overBy, round } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

/** The target, in megabytes (10^6 bytes). */
const TARGET_MB = 300;
const SAMPLE_EVERY_MS = 10;

export const hostileWireBenchmark: Benchmark = {
  id: 9,
  name: "hostile wire: 10,000 hostile messages to one daemon",
  async run(context: BenchContext) {
    const count = context.quick ? 1_000 : 10_000;
    const cluster = await startCluster({ daemons: 0 });
    try {
      const port = await freePort();
      const daemon = await cluster.spawnDaemon("bench-hostile", {
        concurrency: 8,
        extraEnv: { FORKD_METRICS_PORT: String(port) },
      });
      const pid = daemon.child.pid!;
      const metricsUrl = `http://127.0.0.1:${port}/metrics`;
      const forks = await cluster.subagent();
      const idle = memoryOf(pid);
      let sampledPeak = idle.rss;
      const sampler = setInterval(() => {
        sampledPeak = Math.max(sampledPeak, memoryOf(pid).rss);
      }, SAMPLE_EVERY_MS);
      const messages = hostileMessages(count, { tag: "bench-fz" });
      const expected: Record<string, number> = {};
      let bytes = 0;
      const started = performance.now();
      let refused: Record<string, number> = {};
      let specsEnded = 0;
      try {
        for (const message of messages) {
          bytes += message.payload.byteLength;
          if (message.channel === "spec") {
            await forks.resources.js.publish(message.subject, message.payload);
          } else {
            cluster.nc.publish(message.subject, message.payload);
            if (message.expected !== "none")
              expected[message.expected] = (expected[message.expected] ?? 0) + 1;
          }
        }
        await cluster.nc.flush();
        const sentMs = performance.now() - started;
        context.log(`${count} messages (${round(bytes / 1e6, 1)} MB) sent in ${round(sentMs)} ms`);
        const specs = messages.filter((message) => message.channel === "spec" && message.runId !== undefined);
        await within(
          (async () => {
            for (;;) {
              refused = await refusedControlCounts(metricsUrl);
              if (Object.entries(expected).every(([code, n]) => refused[code] === n)) return;
              await new Promise((resolve) => setTimeout(resolve, 100));
            }
          })(),
          120_000,
          "the daemon's refusals",
        );
        const ends = await within(
          Promise.all(specs.map((spec) => cluster.watch.terminal(spec.runId!))),
          120_000,
          "the hostile specs' failures",
        );
        specsEnded = ends.filter(
          (end, i) => end.event.type === "failed" && end.event.error.code === specs[i]!.expected,
        ).length;
      } finally {
        clearInterval(sampler);
      }
      const handledMs = performance.now() - started;
      const after = memoryOf(pid);
      const alive = daemon.child.exitCode === null;
      const probe = forks.fork({
        prefix: null,
        directive: "Still there?",
        parent: { agent_id: "bench-after" },
      });
      const probeStatus = (await within(probe.result(), 60_000, "a fork after the hostile messages")).status;
      await daemon.kill("SIGKILL");

      const specCount = messages.filter(
        (message) => message.channel === "spec" && message.runId !== undefined,
      ).length;
      const refusalsMatch = Object.entries(expected).every(([code, n]) => refused[code] === n);
      const peakMB = round(after.hwm, 1);
      const pass =
        alive &&
        probeStatus === "completed" &&
        refusalsMatch &&
        specsEnded === specCount &&
        peakMB < TARGET_MB;
      const notes = [
        `One daemon process (packages/daemon/bin/forkd-daemon: the shipped launcher and its runtime settings, concurrency 8). The messages come from test/harness/hostile-wire.ts (seeded): on abort subjects, 126-deep arrays up to the 32 KiB control limit, one level too deep, 1 MB payloads, broken UTF-8, truncated JSON, escaped __proto__ keys, v2, wrong shapes, bad run ids and well-formed aborts of runs nobody runs; one in ten on spec subjects (undecodable, too deep, mismatched run id, v2, empty directive, subject tokens that are no run id); one in fifty a forged max-deliveries advisory.`,
        `Peak = the kernel's VmHWM of the daemon (/proc/<pid>/status) after every message was handled; RSS sampled every ${SAMPLE_EVERY_MS} ms agrees (${round(Math.max(sampledPeak, after.rss), 1)} MB). Idle before: ${round(idle.rss, 1)} MB.`,
        `Refusals are read from forkd_refused_controls_total on the daemon's /metrics and compared code by code with what each message must get; each hostile spec's run must end \`failed\` with its expected code.`,
      ];
      if (peakMB >= TARGET_MB)
        notes.push(`MISSED: peak ${peakMB} MB, over ${TARGET_MB} MB by ${overBy(peakMB, TARGET_MB)}.`);
      return {
        figures: {
          messages: count,
          payload_mb: round(bytes / 1e6, 1),
          peak_rss_mb: peakMB,
          idle_rss_mb: round(idle.rss, 1),
          handled_ms: round(handledMs),
          daemon_alive: alive,
          fork_after: probeStatus,
          refused_controls: refused,
          hostile_specs_failed_as_expected: `${specsEnded}/${specCount}`,
        },
        baseline: {},
        target: `daemon up, every message refused with its code, peak RSS < ${TARGET_MB} MB after ${count === 10_000 ? "10,000" : `${count} (quick; full: 10,000)`} hostile messages`,
        headline: `${count} hostile messages: peak RSS ${peakMB} MB, ${alive ? "daemon up" : "DAEMON DIED"}, refusals ${refusalsMatch ? "all typed" : "MISMATCH"}, specs ${specsEnded}/${specCount} failed as expected`,
        baselineHeadline: "audit before the fix: six 1 MiB deep aborts took a daemon from 123 MB to 1.4 GB",
        pass,
        params: { messages: count, spec_share: "1/10", advisory_share: "1/50", seed: 11 },
        notes,
      };
    } finally {
      await cluster.stop();
    }
  },
};
