// A chaos run: a real three-node NATS cluster, daemon processes reaching it through relays a fault
// can cut, the simulator failing a share of model calls, and a parent forking all along — while
// faults are mixed in at random, one at a time: a daemon SIGKILLed (and a new one started), a daemon
// frozen (SIGSTOP, then SIGCONT), a daemon partitioned from NATS (healed, with or without a reset),
// a NATS node SIGKILLed (and restarted). Afterwards every accepted run must end, and the checker
// reads every stored log and the tool ledger (checker.ts).
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClientError, type NatsForkHandle, NatsForkSubagent } from "@forkd/client";
import { readStoredEvents } from "@forkd/client/internal";
import { createForkPrefix } from "@forkd/core";
import type { ForkEvent } from "@forkd/protocol";
import { mulberry32, startSim } from "@forkd/sim";
import { loadFixture, startNatsCluster, waitFor } from "@forkd/testing";
import { connect } from "@nats-io/transport-node";
import { type DaemonProcess, spawnDaemon } from "../harness/daemons.js";
import { type PartitionRelay, startPartitionRelay } from "../harness/partition.js";
import { type ChaosViolation, checkChaosEvidence } from "./checker.js";

/** The faults a chaos run mixes. */
export const CHAOS_FAULTS = [
  "daemon_sigkill",
  "daemon_sigstop",
  "daemon_partition",
  "nats_node_kill",
] as const;
export type ChaosFault = (typeof CHAOS_FAULTS)[number];

/** Options of {@link runChaos}. */
export interface ChaosOptions {
  /** How long faults are injected while the parent forks. @unit ms */
  durationMs: number;
  /** Seeds the choice of faults, their targets and durations, and the simulator's faults. @default 1 */
  seed?: number;
  /** Daemon processes. @default 3 */
  daemons?: number;
  /** Forks the parent keeps in flight. @default 8 */
  inflight?: number;
  /** Share of model calls the simulator fails (429 with retry-after, 529, 500, a cut stream). @default 0.05 */
  providerFaultRate?: number;
  /** How long accepted runs may take to end once faults stop. @unit ms @default 150_000 */
  settleMs?: number;
  /** Progress lines. */
  log?: (line: string) => void;
}

/** What a chaos run did and what the checker found. */
export interface ChaosReport {
  seed: number;
  durationMs: number;
  /** Specs JetStream acknowledged, and forks refused with a typed error before that. */
  forks: { accepted: number; refused: Record<string, number> };
  /** How the accepted runs ended: `completed`, `failed:<code>`, `aborted`, or `not_ended`. */
  outcomes: Record<string, number>;
  faults: Record<ChaosFault, number>;
  /** Model calls the simulator answered, and how many of them it failed on purpose. */
  provider: { requests: number; faulted: number };
  /** Events stored across the accepted runs' logs, and attempts beyond the first. */
  events: number;
  resumedAttempts: number;
  /** From the last fault's end until every accepted run had ended. @unit ms */
  settledInMs: number;
  violations: ChaosViolation[];
}

/** How long the parent waits after a refused fork before the next. @unit ms */
const REFUSAL_PAUSE_MS = 250;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One daemon place: its relays to every node (cut together for a partition) and its current process. */
interface DaemonSlot {
  relays: PartitionRelay[];
  process: DaemonProcess;
  generation: number;
}

/** Runs chaos for `options.durationMs`, then waits for every accepted run to end and checks them. */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const seed = options.seed ?? 1;
  const random = mulberry32(seed);
  const between = (min: number, max: number) => Math.round(min + random() * (max - min));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const log = options.log ?? (() => undefined);
  const cluster = await startNatsCluster({ nodes: 3 });
  const sim = await startSim({
    latency: { ttftMs: 30, tokensPerSecond: 400 },
    faults: {
      rate: options.providerFaultRate ?? 0.05,
      seed,
      kinds: ["429 retry-after=1", "529", "500", "cut-after=3"],
    },
  });
  const workspace = await mkdtemp(join(tmpdir(), "forkd-chaos-"));
  const ledger = join(workspace, "ledger.txt");
  await writeFile(ledger, "");
  const slots: DaemonSlot[] = [];
  const nc = await connect({ servers: [...cluster.urls] });
  // A cluster just started can still be settling under a loaded machine: its first R3 stream creation
  // timed out once (CI, whole suite). The resources are created idempotently, so the setup retries.
  const forks = await waitFor(() => NatsForkSubagent.create(nc).catch(() => undefined), {
    timeoutMs: 60_000,
    intervalMs: 500,
    message: "forkd's resources created on the new cluster",
  });
  const fixture = await loadFixture("4k");
  const prefix = createForkPrefix(fixture.request, fixture.response);
  const faults = Object.fromEntries(CHAOS_FAULTS.map((fault) => [fault, 0])) as Record<ChaosFault, number>;
  const refused: Record<string, number> = {};
  const accepted: { tag: string; handle: NatsForkHandle }[] = [];
  const outcomes: Promise<string>[] = [];
  let generations = 0;

  const startDaemon = async (slot: Pick<DaemonSlot, "relays">) => {
    generations += 1;
    const process = await spawnDaemon({
      id: `chaos-${generations}`,
      natsUrls: slot.relays.map((relay) => relay.url),
      simUrl: sim.url,
      workspace,
      concurrency: 4,
      extraEnv: { FORKD_LLM_MAX_RETRIES: "4" },
    });
    return { process, generation: generations };
  };

  try {
    for (let i = 0; i < (options.daemons ?? 3); i++) {
      const relays = await Promise.all(cluster.urls.map((url) => startPartitionRelay(url)));
      slots.push({ relays, ...(await startDaemon({ relays })) });
    }

    // The parent: keeps `inflight` forks going, each a tool call (its line in the ledger) and a turn.
    let producing = true;
    let forked = 0;
    let refusedAt = 0;
    const producer = (async () => {
      const inflight = new Set<Promise<unknown>>();
      while (producing) {
        if (inflight.size >= (options.inflight ?? 8)) {
          await Promise.race(inflight);
          continue;
        }
        // A refusal comes at once while JetStream cannot store: a parent would not spin on it either.
        if (Date.now() - refusedAt < REFUSAL_PAUSE_MS) await sleep(REFUSAL_PAUSE_MS);
        const tag = `chaos-run-${++forked}`;
        const handle = forks.fork({
          prefix,
          parent: { agent_id: "parent-chaos" },
          directive: [
            `${tag}: record, then report.`,
            `@sim tool Bash {"command":"echo ${tag} >> ${ledger}"}`,
            "@sim turn",
            `@sim text ${between(20, 120)}`,
          ].join("\n"),
        });
        const settled = handle.published().then(
          () => {
            accepted.push({ tag, handle });
            const outcome = handle
              .result()
              .then((result) =>
                result.status === "failed" ? `failed:${result.error?.code ?? "unknown"}` : result.status,
              );
            outcomes.push(outcome);
            return outcome;
          },
          (error: unknown) => {
            refusedAt = Date.now();
            const code = error instanceof ClientError ? error.code : "untyped";
            refused[code] = (refused[code] ?? 0) + 1;
          },
        );
        const tracked: Promise<unknown> = settled.finally(() => inflight.delete(tracked));
        inflight.add(tracked);
      }
      // Forks still being published count once they are acknowledged or refused.
      await Promise.allSettled(inflight);
    })();

    const round: ChaosFault[] = [];
    const shuffled = <T>(items: readonly T[]): T[] => {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [copy[i], copy[j]] = [copy[j]!, copy[i]!];
      }
      return copy;
    };
    const deadline = Date.now() + options.durationMs;
    while (Date.now() < deadline) {
      await sleep(between(1_000, 3_000));
      // Each fault once per round, in a random order: a short run still meets every kind.
      if (round.length === 0) round.push(...shuffled(CHAOS_FAULTS));
      const fault = round.pop()!;
      faults[fault] += 1;
      const slot = pick(slots);
      switch (fault) {
        case "daemon_sigkill": {
          log(`fault: SIGKILL chaos-${slot.generation}`);
          await slot.process.kill("SIGKILL");
          Object.assign(slot, await startDaemon(slot));
          break;
        }
        case "daemon_sigstop": {
          const ms = between(1_500, 4_000);
          log(`fault: SIGSTOP chaos-${slot.generation} for ${ms} ms`);
          slot.process.child.kill("SIGSTOP");
          await sleep(ms);
          slot.process.child.kill("SIGCONT");
          break;
        }
        case "daemon_partition": {
          const ms = between(1_500, 8_000);
          const reset = random() < 0.5;
          log(`fault: partition chaos-${slot.generation} for ${ms} ms${reset ? ", then reset" : ""}`);
          for (const relay of slot.relays) relay.cut();
          await sleep(ms);
          for (const relay of slot.relays) relay.heal({ reset });
          break;
        }
        case "nats_node_kill": {
          const node = pick(cluster.nodes);
          const ms = between(2_000, 6_000);
          log(`fault: SIGKILL ${node.name} for ${ms} ms`);
          await node.kill("SIGKILL");
          await sleep(ms);
          await node.restart();
          await cluster.waitForJetStream({ timeoutMs: 60_000 });
          break;
        }
      }
    }
    producing = false;
    await producer;
    const faultsEndedAt = Date.now();
    log(`faults over: ${accepted.length} runs accepted; waiting for them to end`);
    const settleMs = options.settleMs ?? 150_000;
    const ended = await Promise.race([
      Promise.allSettled(outcomes).then((results) =>
        results.map((result) => (result.status === "fulfilled" ? result.value : "result_rejected")),
      ),
      sleep(settleMs).then(() => undefined),
    ]);
    const settledInMs = Date.now() - faultsEndedAt;

    const logs = new Map<string, readonly ForkEvent[]>();
    for (const { handle } of accepted) {
      logs.set(
        handle.runId,
        (await readStoredEvents(forks.resources, handle.runId)).map((logged) => logged.event),
      );
    }
    const lines = (await readFile(ledger, "utf8")).split("\n").filter(Boolean);
    const toolExecutions = new Map<string, number>();
    for (const { tag, handle } of accepted) {
      toolExecutions.set(handle.runId, lines.filter((line) => line === tag).length);
    }
    const violations = checkChaosEvidence({
      acceptedRunIds: accepted.map(({ handle }) => handle.runId),
      logs,
      toolExecutions,
    });
    const outcomeCounts: Record<string, number> = {};
    for (const outcome of ended ?? accepted.map(() => "not_ended")) {
      outcomeCounts[outcome] = (outcomeCounts[outcome] ?? 0) + 1;
    }
    const allEvents = [...logs.values()].flat();
    const stats = sim.stats();
    return {
      seed,
      durationMs: options.durationMs,
      forks: { accepted: accepted.length, refused },
      outcomes: outcomeCounts,
      faults,
      provider: { requests: stats.messages, faulted: stats.faults },
      events: allEvents.length,
      resumedAttempts: allEvents.filter((event) => event.type === "accepted" && event.attempt > 1).length,
      settledInMs: ended ? settledInMs : Number.NaN,
      violations,
    };
  } finally {
    await Promise.allSettled(slots.map((slot) => slot.process.kill("SIGKILL")));
    await Promise.allSettled(slots.flatMap((slot) => slot.relays.map((relay) => relay.close())));
    await forks.close();
    await nc.close();
    await sim.close();
    await cluster.stop();
    await rm(workspace, { recursive: true, force: true });
  }
}
