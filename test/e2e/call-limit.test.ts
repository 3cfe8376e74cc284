// Cluster-wide limits on concurrent model calls (#15): four daemon processes on one nats-server share
// limits per provider key and per model. The simulator's request log is the independent witness: the
// calls it holds at once never pass the limit, and reach it (tested at N, not N+1). Also: fairness
// across parents, OpenAI's calls counted like Anthropic's, an aborted waiting run leaving the queue,
// `forkd ps` showing a run that waits for a slot, and the slots of a SIGKILLed daemon coming back
// after their lease.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bucketKeys, ensureForkResources, NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import { type CallSlots, callSlotsCodec } from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { type NatsServerHandle, startNatsServer, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { cleanEnv, runCli } from "../cli/support.js";
import { maxConcurrent } from "../harness/concurrency.js";
import { type DaemonProcess, spawnDaemon, stopDaemons } from "../harness/daemons.js";

interface Cluster {
  server: NatsServerHandle;
  sim: Sim;
  nc: NatsConnection;
  forks: NatsForkSubagent;
  daemons: DaemonProcess[];
  workspace: string;
}

/** A nats-server, a simulator and four daemons with `env`; stopped by the describe's afterAll. */
function useCluster(env: Record<string, string>): () => Cluster {
  let cluster: Cluster | undefined;
  beforeAll(async () => {
    const workspace = await mkdtemp(join(tmpdir(), "forkd-call-limit-"));
    const server = await startNatsServer();
    const sim = await startSim({ logLimit: 1_000 });
    const nc = await connect({ servers: server.url });
    const forks = await NatsForkSubagent.create(nc);
    const daemons: DaemonProcess[] = [];
    cluster = { server, sim, nc, forks, daemons, workspace };
    for (let i = 1; i <= 4; i++)
      daemons.push(
        await spawnDaemon({
          id: `limit-${i}`,
          natsUrls: [server.url],
          simUrl: sim.url,
          workspace,
          concurrency: 60,
          extraEnv: { ANTHROPIC_API_KEY: "sk-forkd-limit", OPENAI_API_KEY: "sk-forkd-openai", ...env },
        }),
      );
  }, 60_000);
  afterAll(async () => {
    if (cluster === undefined) return;
    await stopDaemons(cluster.daemons);
    await cluster.forks.close();
    await cluster.nc.close();
    await cluster.sim.close();
    await cluster.server.stop();
    await rm(cluster.workspace, { recursive: true, force: true });
  });
  return () => cluster!;
}

/** The entries `limit.>` of the daemons bucket, by scope. */
async function readLimits(nc: NatsConnection): Promise<Map<string, CallSlots>> {
  const resources = await ensureForkResources(nc);
  const limits = new Map<string, CallSlots>();
  // Not `kv.keys()`: its consumer can wait for ever on entries rewritten or expired before it delivers
  // them — the daemons rewrite these several times a second — and that hung this file's waits (in CI,
  // 3 runs of 7; here, with step logs, a single read that never returned). forkd itself lists keys
  // this way since #23.
  for (const key of await bucketKeys(resources, "daemons", "limit.>")) {
    const entry = await resources.daemons.get(key);
    if (entry?.operation !== "PUT" || entry.length === 0) continue;
    const slots = callSlotsCodec.decode(entry.value);
    limits.set(slots.scope ?? key, slots);
  }
  return limits;
}

describe("a limit per provider key, across 4 daemons", () => {
  const LIMIT = 3;
  const RUNS = 200;
  const cluster = useCluster({ FORKD_CALL_LIMIT_PER_KEY: String(LIMIT), FORKD_METRICS_PORT: "0" });

  it(`never has more than ${LIMIT} calls of the key in flight under ${RUNS} runs, and a parent with 10 runs is not starved by one with 190`, async () => {
    const { forks, sim, daemons } = cluster();
    sim.reset();
    const launch = (parent: string, count: number) =>
      Array.from({ length: count }, (_, i) =>
        forks.fork({
          prefix: null,
          parent: { agent_id: parent },
          directive: `Answer ${parent} ${i}.\n@sim ttft 40\n@sim say ok`,
        }),
      );
    const first = launch("parent-a", RUNS - 10);
    await Promise.all(first.map((handle) => handle.published()));
    const second = launch("parent-b", 10);
    const outcomes = await Promise.all([...first, ...second].map((handle) => handle.result()));
    expect(outcomes.filter((outcome) => outcome.status !== "completed")).toEqual([]);

    const calls = sim.requests().filter((entry) => entry.path === "/v1/messages" && entry.status === 200);
    expect(calls).toHaveLength(RUNS);
    expect(new Set(calls.map((entry) => entry.keyId)).size).toBe(1);
    const max = maxConcurrent(calls);
    console.log(`key limit ${LIMIT}: the simulator held at most ${max} calls at once over ${RUNS} runs`);
    expect(max).toBeLessThanOrEqual(LIMIT);
    expect(max).toBe(LIMIT); // the limit is used, not only respected

    // Fairness: parent-b's 10 runs were queued after parent-a's 190, yet each freed slot goes to the
    // parent holding the fewest: all of b's calls come before half of a's.
    const order = [...calls]
      .sort((a, b) => a.receivedAt - b.receivedAt)
      .map((entry) => (entry.body.includes("parent-b") ? "b" : "a"));
    expect(order.lastIndexOf("b")).toBeLessThan(RUNS / 2);

    // The waiters were woken by their watch on the entry, not only by polling it.
    const unwatched = daemons.flatMap((daemon) =>
      daemon.logs.filter((line) => String(line.msg).includes("no watch on the entry")),
    );
    expect(unwatched).toEqual([]);

    // /metrics: the limit per scope, and the waits.
    const texts = await Promise.all(
      daemons.map(async (daemon) => {
        const started = await daemon.waitForLog((line) => line.msg === "forkd daemon started");
        return (await fetch(String(started.metrics))).text();
      }),
    );
    for (const text of texts) expect(text).toMatch(/^forkd_call_limit\{scope="key:[0-9a-f]{16}"\} 3$/m);
    const waits = texts
      .flatMap((text) => [...text.matchAll(/^forkd_call_slot_waits_total\{scope="key:[^"]+"\} (\d+)$/gm)])
      .reduce((sum, match) => sum + Number(match[1]), 0);
    expect(waits).toBeGreaterThan(RUNS / 2);
    const granted = texts
      .flatMap((text) => [
        ...text.matchAll(/^forkd_call_slot_wait_seconds_count\{scope="key:[^"]+"\} (\d+)$/gm),
      ])
      .reduce((sum, match) => sum + Number(match[1]), 0);
    expect(granted).toBe(RUNS);
  }, 240_000);

  it("counts the calls of runs on OpenAI's API under the OpenAI key's own limit", async () => {
    const { forks, sim } = cluster();
    sim.reset();
    const prefix = createForkPrefix({
      model: "gpt-5",
      max_tokens: 256,
      system: "You answer briefly.",
      messages: [{ role: "user", content: "Go." }],
    });
    const handles = Array.from({ length: 40 }, (_, i) =>
      forks.fork({
        prefix,
        parent: { agent_id: "openai-parent" },
        provider: { api: "openai-chat" },
        directive: `[openai-${i}]\n@sim ttft 40\n@sim say ok`,
      }),
    );
    const outcomes = await Promise.all(handles.map((handle) => handle.result()));
    expect(outcomes.filter((outcome) => outcome.status !== "completed")).toEqual([]);
    const calls = sim.requests().filter((entry) => entry.path === "/v1/chat/completions");
    expect(calls).toHaveLength(40);
    const max = maxConcurrent(calls);
    console.log(`key limit ${LIMIT} on OpenAI: the simulator held at most ${max} calls at once`);
    expect(max).toBe(LIMIT);
  }, 120_000);
});

describe("a limit per model, across 4 daemons", () => {
  const LIMIT = 2;
  const RUNS = 200;
  const cluster = useCluster({ FORKD_CALL_LIMIT_PER_MODEL: String(LIMIT) });

  it(`never has more than ${LIMIT} calls of one model in flight under ${RUNS} runs; other models have their own ${LIMIT}`, async () => {
    const { forks, sim } = cluster();
    sim.reset();
    const models = ["claude-sonnet-4-6", "claude-haiku-4-5"];
    const handles = Array.from({ length: RUNS }, (_, i) =>
      forks.fork({
        prefix: null,
        parent: { agent_id: `parent-${i % 3}` },
        overrides: { model: models[i % 2]! },
        directive: `Answer ${i}.\n@sim ttft 40\n@sim say ok`,
      }),
    );
    const outcomes = await Promise.all(handles.map((handle) => handle.result()));
    expect(outcomes.filter((outcome) => outcome.status !== "completed")).toEqual([]);
    const calls = sim.requests().filter((entry) => entry.path === "/v1/messages" && entry.status === 200);
    expect(calls).toHaveLength(RUNS);
    for (const model of models) {
      const ofModel = calls.filter((entry) => JSON.parse(entry.body).model === model);
      expect(ofModel).toHaveLength(RUNS / 2);
      const max = maxConcurrent(ofModel);
      console.log(`model limit ${LIMIT}: the simulator held at most ${max} calls of ${model} at once`);
      expect(max).toBe(LIMIT);
    }
    // Two models, each with its own slots: together more than one model's limit.
    expect(maxConcurrent(calls)).toBeGreaterThan(LIMIT);
  }, 240_000);
});

describe("slots that come back: an aborted waiter, a killed daemon", () => {
  // Long enough that a waiter's lease (half of it, at most 5 s) cannot be what removes an aborted one.
  const LEASE_MS = 6_000;
  const cluster = useCluster({
    FORKD_CALL_LIMIT_PER_KEY: "1",
    FORKD_CALL_LIMIT_LEASE_MS: String(LEASE_MS),
  });
  const keyScope = (limits: Map<string, CallSlots>) => {
    const scopes = [...limits.keys()].filter((scope) => scope.startsWith("key:"));
    expect(scopes).toHaveLength(1);
    return limits.get(scopes[0]!)!;
  };
  /** A run that holds the one slot (its answer two minutes away) and one that waits for it. */
  const holderAndWaiter = async () => {
    const { forks, nc } = cluster();
    const holder = forks.fork({
      prefix: null,
      parent: { agent_id: "p" },
      directive: "Hold.\n@sim ttft 120000\n@sim say late",
    });
    // A failure here must not leave the slot held for the next test.
    onTestFailed(() => holder.abort("failed"));
    await waitFor(async () => keyScope(await readLimits(nc)).holders.length === 1, { timeoutMs: 20_000 });
    const waiter = forks.fork({
      prefix: null,
      parent: { agent_id: "p" },
      directive: "Wait.\n@sim say ok",
    });
    await waitFor(async () => keyScope(await readLimits(nc)).waiters.some((w) => w.run_id === waiter.runId), {
      timeoutMs: 20_000,
    });
    return { holder, waiter };
  };

  it("an aborted run waiting for a slot leaves the queue; `forkd ps` showed it waiting; an aborted holder frees its slot", async () => {
    const { nc, server } = cluster();
    const { holder, waiter } = await holderAndWaiter();
    const ps = await runCli(["ps"], { env: cleanEnv({ NATS_URL: server.url, NO_COLOR: "1" }) });
    expect(ps.stdout).toMatch(new RegExp(`${waiter.runId}\\s+running, waits for a call slot \\(key:`));
    expect(ps.stdout).toMatch(/key:[0-9a-f]{16}\s+1\/1\s+1/);

    // Removed by the abort, before its lease could have removed it.
    const waiterLease = keyScope(await readLimits(nc)).waiters[0]!.until;
    await waiter.abort("not needed");
    expect((await waiter.result()).status).toBe("killed");
    await waitFor(async () => keyScope(await readLimits(nc)).waiters.length === 0, { timeoutMs: 5_000 });
    expect(Date.now()).toBeLessThan(waiterLease);
    expect(keyScope(await readLimits(nc)).holders).toHaveLength(1);

    const holderLease = keyScope(await readLimits(nc)).holders[0]!.until;
    await holder.abort("done");
    expect((await holder.result()).status).toBe("killed");
    await waitFor(async () => keyScope(await readLimits(nc)).holders.length === 0, { timeoutMs: 5_000 });
    expect(Date.now()).toBeLessThan(holderLease);
  }, 60_000);

  it("a graceful stop of a run waiting for a slot ends it stopped, its call never sent", async () => {
    const { nc, sim } = cluster();
    const { holder, waiter } = await holderAndWaiter();
    const sent = () => sim.requests().filter((entry) => entry.path === "/v1/messages").length;
    const before = sent();
    await waiter.stop("enough");
    // Not after the holder's call (two minutes away): at once, with no turn.
    const outcome = await Promise.race([
      waiter.result(),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error("the stopped run still waits for its slot")), 15_000),
      ),
    ]);
    expect(outcome).toMatchObject({ status: "completed", result: { stop: "stopped", turns: 0 } });
    await waitFor(async () => keyScope(await readLimits(nc)).waiters.length === 0, { timeoutMs: 5_000 });
    expect(sent()).toBe(before);
    await holder.abort("done");
    await waitFor(async () => keyScope(await readLimits(nc)).holders.length === 0, { timeoutMs: 5_000 });
  }, 60_000);

  it("the slot of a daemon SIGKILLed while calling comes back after its lease", async () => {
    const { forks, nc, daemons, sim } = cluster();
    const held = forks.fork({
      prefix: null,
      parent: { agent_id: "p" },
      directive: "Hold.\n@sim ttft 120000\n@sim say late",
    });
    let holding: CallSlots["holders"][number] | undefined;
    await waitFor(
      async () => {
        holding = keyScope(await readLimits(nc)).holders[0];
        return holding !== undefined;
      },
      { timeoutMs: 20_000 },
    );
    // The next runs are queued (waiting for the slot) before the kill: a spec published after it
    // could go to the dead daemon's pull request and wait for its redelivery. Those that landed on
    // the daemon about to die are left to that.
    sim.reset();
    const next: ReturnType<typeof forks.fork>[] = [];
    const victimId = holding!.daemon_id;
    // Until one waits on a daemon that lives (JetStream may hand several specs to one daemon).
    while (next.length < 20) {
      const handle = forks.fork({
        prefix: null,
        parent: { agent_id: "q" },
        directive: `Next ${next.length}.\n@sim say ok`,
      });
      next.push(handle);
      const waiter = await waitFor(
        async () => keyScope(await readLimits(nc)).waiters.find((w) => w.run_id === handle.runId),
        { timeoutMs: 20_000 },
      );
      if (!waiter.id.startsWith(`${victimId}.`)) break;
    }
    const victim = daemons.find((daemon) => daemon.id === victimId)!;
    await victim.kill("SIGKILL");
    const killedAt = Date.now();
    // The lease as the dead daemon last renewed it: nobody else may take the slot before it ends.
    const leaseEnd = keyScope(await readLimits(nc)).holders.find((h) => h.id === holding!.id)!.until;
    // Where the next runs wait, for a failure to say (this test timed out in CI, 3 runs in 7).
    const placements = keyScope(await readLimits(nc))
      .waiters.map((w) => w.id.split(".")[0])
      .join(", ");
    console.log(`killed ${victimId}; ${next.length} next run(s) waiting on: ${placements}`);
    // The held run's spec comes back 30 s after its last delivery: ended then at its claim, it cannot
    // take the slot again for its 120 s call should the next runs still wait — a hang becomes a
    // failure of the assertions below, with their figures. The dead daemon's lease stands.
    await held.abort("its daemon was killed");
    const first = await Promise.race(next.map((handle) => handle.result().then(() => handle)));
    expect((await first.result()).status).toBe("completed");
    const call = sim.requests().find((entry) => entry.path === "/v1/messages" && entry.status === 200);
    expect(call).toBeDefined();
    console.log(
      `a SIGKILLed daemon's slot (lease ${LEASE_MS} ms) was taken again ${Math.round(call!.receivedAt - killedAt)} ms after the kill, ${Math.round(call!.receivedAt - leaseEnd)} ms after its lease ended`,
    );
    expect(call!.receivedAt).toBeGreaterThanOrEqual(leaseEnd);
    // Well before the spec's redelivery (30 s ack wait) could have mattered.
    expect(call!.receivedAt - killedAt).toBeLessThan(LEASE_MS + 3_000);
    await Promise.all(next.map((handle) => handle.abort("done")));
  }, 120_000); // up to 20 forks, each awaited into the queue, then a 6 s lease: slow under a loaded suite
});
