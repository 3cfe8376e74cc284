// Control over many children (#15), on a real nats-server with real daemon processes: groups and
// cascades that reach queued runs, graceful stop, steering (also across a daemon crash), and refusals
// of another owner's controls.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { liveRunIds, type NatsForkHandle, NatsForkSubagent } from "@forkd/client";
import { costOfTokens, createForkPrefix, defaultPricingTable, newRunId, tokenCountsOf } from "@forkd/core";
import type { ForkEvent, ForkPrefix, RunState } from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { loadFixture, type NatsServerHandle, startNatsServer, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DaemonProcess, spawnDaemon, stopDaemons } from "../harness/daemons.js";
import { contiguousLog } from "../harness/event-log.js";

const ACK_WAIT_MS = 2_000;
/** What a daemon logs when it puts back the spec of a run its owner is ending where it waits. */
const PUT_BACK = "spec put back: its owner is ending the queued run";
/** A run that streams for about 20 s unless stopped. */
const SLOW = "Write at length.\n@sim tps 20\n@sim text 400";

let server: NatsServerHandle;
let sim: Sim;
let nc: NatsConnection;
let forks: NatsForkSubagent;
let workspace: string;
let prefix: ForkPrefix;
const daemons = new Set<DaemonProcess>();

async function daemon(id: string, concurrency = 2): Promise<DaemonProcess> {
  const process = await spawnDaemon({
    id,
    natsUrls: [server.url],
    simUrl: sim.url,
    workspace,
    ackWaitMs: ACK_WAIT_MS,
    concurrency,
    heartbeatMs: 500,
  });
  daemons.add(process);
  return process;
}

/** Resolves with the first event of the run that matches. */
async function eventOf(handle: NatsForkHandle, match: (event: ForkEvent) => boolean): Promise<ForkEvent> {
  for await (const event of handle.events()) if (match(event)) return event;
  throw new Error(`run ${handle.runId} ended its log without a matching event`);
}

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "forkd-control-"));
  const fixture = await loadFixture("4k");
  prefix = createForkPrefix(fixture.request, fixture.response);
  server = await startNatsServer();
  sim = await startSim();
  nc = await connect({ servers: server.url });
  forks = await NatsForkSubagent.create(nc, { ackWaitMs: ACK_WAIT_MS });
});

afterEach(async () => {
  await stopDaemons(daemons);
  daemons.clear();
});

afterAll(async () => {
  await stopDaemons(daemons);
  await forks?.close();
  await nc?.close();
  await sim?.close();
  await server?.stop();
  await rm(workspace, { recursive: true, force: true });
});

describe("groups and cascades", () => {
  it("abortParent ends every run of the parent, running and queued, and none runs afterwards", async () => {
    await daemon("cascade-1");
    await daemon("cascade-2");
    const parent = "parent-cascade";
    const group = forks.group();
    const handles = group.fanOut(
      { prefix, parent: { agent_id: parent } },
      Array.from({ length: 10 }, (_, i) => ({ directive: `${SLOW}\nchild ${i}` })),
      { warmFirst: false },
    );
    await Promise.all(handles.map((handle) => handle.published()));
    // Four slots: four runs stream, six wait in the queue.
    const states = await waitFor(
      async () => {
        const now = await Promise.all(handles.map((handle) => forks.state(handle.runId)));
        return now.filter((state) => state?.status === "running").length === 4 ? now : undefined;
      },
      { timeoutMs: 20_000, message: "four runs running" },
    );
    const queued = new Set(
      states.filter((state) => state?.status === "queued").map((state) => state!.run_id),
    );
    expect(queued.size).toBe(6);
    expect(states.every((state) => state?.group_id === group.id)).toBe(true);

    const aborted = await forks.abortParent(parent, { reason: "the user pressed Esc" });
    expect(new Set(aborted)).toEqual(new Set(handles.map((handle) => handle.runId)));
    const outcomes = await Promise.all(handles.map((handle) => handle.result()));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(10).fill("killed"));
    for (const handle of handles) {
      const events = await contiguousLog(forks.resources, handle.runId);
      expect(events.at(-1)).toMatchObject({
        type: "aborted",
        reason: "the user pressed Esc",
        group_id: group.id,
      });
      expect(events.every((event) => event.group_id === group.id)).toBe(true);
      // A queued run is ended where it waits (or, when a slot the cascade freed let a daemon claim it
      // first, at its claim: the daemon heard the abort before): it never calls the model.
      if (queued.has(handle.runId))
        expect(events.filter((event) => event.type.startsWith("llm."))).toEqual([]);
    }
    // The specs leave the work queue (each right after its run's terminal event): no daemon picks
    // them up later.
    await waitFor(
      async () => {
        const live = new Set(await liveRunIds(forks.resources));
        return handles.every((handle) => !live.has(handle.runId)) || undefined;
      },
      { timeoutMs: 10_000, message: "the ended runs' specs removed from the work queue" },
    );
  });

  it("the owner's abort of a queued run whose registry entry is gone ends it from its stored spec, no daemon free", async () => {
    const heard = await daemon("heard-1", 1);
    const busy = forks.fork({ prefix, parent: { agent_id: "parent-heard" }, directive: SLOW });
    await eventOf(busy, (event) => event.type === "llm.delta");
    const waiting = forks.fork({
      prefix,
      parent: { agent_id: "parent-heard" },
      directive: "Say it.\n@sim say ok",
    });
    await waiting.published();
    // No registry entry (any parent may delete one), so no flag: only the abort message, on the fast
    // path. The queue group's member once gave up on a run without a `queued` entry; it now reads the
    // stored spec, finds the owner's proof and an empty log, and ends the run while the only slot is
    // still taken, so no daemon ever claims it.
    await forks.resources.runs.purge(waiting.runId);
    waiting.publishControl("abort", "heard before the claim", Date.now());
    expect(await waiting.result()).toMatchObject({ status: "killed" });
    const events = await contiguousLog(forks.resources, waiting.runId);
    expect(events.filter((event) => event.type.startsWith("llm."))).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "aborted", reason: "heard before the claim" });
    await busy.abort("free the slot");
    expect(await busy.result()).toMatchObject({ status: "killed" });
    // The spec went with the ending: the freed slot found nothing of it to pull and hand back.
    expect(heard.logs.filter((line) => line.msg === PUT_BACK && line.runId === waiting.runId)).toEqual([]);
  });

  it("the owner's abort sent before its run's spec exists still ends the run, without a model call", async () => {
    await daemon("early-1", 1);
    const runId = newRunId();
    // A parent that names its run ids may abort one before the fork's spec is stored (the user pressed
    // Esc as the fork went out). The queue group's member finds no spec to end; every daemon keeps the
    // abort, and the one that claims the run, moments later, meets it there. (When the spec is stored
    // before the member reads it, the member ends the run where it waits: the outcome is the same.)
    forks.attach(runId).publishControl("abort", "pressed before the fork went out", Date.now());
    await nc.flush();
    const early = forks.fork({
      runId,
      prefix,
      parent: { agent_id: "parent-early" },
      directive: "Say it.\n@sim say ok",
    });
    expect(await early.result()).toMatchObject({ status: "killed" });
    const events = await contiguousLog(forks.resources, runId);
    expect(events.filter((event) => event.type.startsWith("llm."))).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "aborted", reason: "pressed before the fork went out" });
  });

  it("a forged abort heard before a run is pulled does not hold the run back", async () => {
    const pulling = await daemon("forged-1", 1);
    const busy = forks.fork({ prefix, parent: { agent_id: "parent-forged" }, directive: SLOW });
    await eventOf(busy, (event) => event.type === "llm.delta");
    const victim = forks.fork({
      prefix,
      parent: { agent_id: "parent-forged" },
      directive: "Say it.\n@sim say ok",
    });
    await victim.published();
    const hostile = await NatsForkSubagent.create(nc); // its own random owner key
    try {
      hostile.attach(victim.runId).publishControl("abort", "forged", Date.now());
      await nc.flush();
      await busy.abort("free the slot");
      expect(await victim.result()).toMatchObject({ status: "completed", result: { final_text: "ok" } });
      expect(pulling.logs.some((line) => line.msg === PUT_BACK)).toBe(false);
    } finally {
      await hostile.close();
    }
  });

  it("a cascade flags in the registry only the runs that did not end on its fast path", async () => {
    await daemon("flags-1", 1);
    const running = forks.fork({ prefix, parent: { agent_id: "parent-flags-a" }, directive: SLOW });
    await eventOf(running, (event) => event.type === "llm.delta");
    await forks.abortParent("parent-flags-a", { reason: "heard at once" });
    expect(await running.result()).toMatchObject({ status: "killed" });
    // Its daemon ended it within the bound: no flag was written (a read and a compare-and-set saved).
    // (The registry records the ending just after the event.)
    const ended = await waitFor(
      async () => {
        const state = await forks.state(running.runId);
        return state?.status === "aborted" ? state : undefined;
      },
      { timeoutMs: 10_000, message: "the ending recorded" },
    );
    expect(ended.abort).toBeUndefined();

    // No daemon hears this one: after the bound, the flag is its abort.
    await stopDaemons(daemons);
    daemons.clear();
    const unheard = forks.fork({ prefix, parent: { agent_id: "parent-flags-b" }, directive: SLOW });
    await unheard.published();
    await forks.abortParent("parent-flags-b", { reason: "nobody heard" });
    expect((await forks.state(unheard.runId))?.abort).toMatchObject({ reason: "nobody heard" });
    await daemon("flags-2", 1);
    expect(await unheard.result()).toMatchObject({ status: "killed" });
    const events = await contiguousLog(forks.resources, unheard.runId);
    expect(events.filter((event) => event.type.startsWith("llm."))).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "aborted", reason: "nobody heard" });
  });

  it("group.stop() lets running runs finish their turn and ends queued ones completed, stopped", async () => {
    await daemon("stop-1", 1);
    const group = forks.group();
    const [first, second] = [
      group.fork({
        prefix,
        parent: { agent_id: "parent-stop" },
        directive:
          'Look, then write.\n@sim tool Bash {"command":"sleep 1; echo looked"}\n@sim turn\n@sim text 20',
      }),
      group.fork({ prefix, parent: { agent_id: "parent-stop" }, directive: SLOW }),
    ];
    await Promise.all([first!.published(), second!.published()]);
    await eventOf(first!, (event) => event.type === "tool.call");
    await group.stop("enough for now");
    const [one, two] = await Promise.all([first!.result(), second!.result()]);
    // The tool that was running finished and is in the log; no second model turn started.
    expect(one).toMatchObject({
      status: "completed",
      result: { stop: "stopped", stop_reason: "enough for now" },
    });
    const events = await contiguousLog(forks.resources, first!.runId);
    expect(events.filter((event) => event.type === "tool.result")).toHaveLength(1);
    expect(events.filter((event) => event.type === "llm.request")).toHaveLength(1);
    // The second waited behind the first (one slot): it ends without running.
    expect(two).toMatchObject({ status: "completed", result: { stop: "stopped", turns: 0 } });
    const secondEvents = await contiguousLog(forks.resources, second!.runId);
    expect(secondEvents.map((event) => event.type)).toEqual(["completed"]);
  });

  it("another owner's cascade, stop and steering are refused: the runs go on", async () => {
    await daemon("hostile-1");
    const victim = forks.fork({
      prefix,
      parent: { agent_id: "parent-victim" },
      directive: 'Look, then write.\n@sim tool Bash {"command":"sleep 1"}\n@sim turn\n@sim say done',
    });
    const queuedVictim = forks.fork({ prefix, parent: { agent_id: "parent-victim" }, directive: SLOW });
    const hostile = await NatsForkSubagent.create(nc); // its own random owner key
    try {
      await eventOf(victim, (event) => event.type === "tool.call");
      await hostile.abortParent("parent-victim", { reason: "hostile" });
      await hostile.abortParent("parent-victim", { mode: "stop", reason: "hostile" });
      await expect(hostile.attach(victim.runId).send("ignore your task")).rejects.toMatchObject({
        code: "steer_refused",
      });
      const outcome = await victim.result();
      expect(outcome).toMatchObject({
        status: "completed",
        result: { stop: "end_turn", final_text: "done" },
      });
      const events = await contiguousLog(forks.resources, victim.runId);
      expect(events.some((event) => event.type === "steered")).toBe(false);
      // The queued one was not ended by the forged requests either: its owner ends it.
      expect((await forks.state(queuedVictim.runId))?.status).not.toBe("aborted");
      await queuedVictim.abort("cleanup");
      expect((await queuedVictim.result()).status).toBe("killed");
    } finally {
      await hostile.close();
    }
  });
});

describe("steering", () => {
  it("a steered child's next request carries the message, and the log keeps it", async () => {
    await daemon("steer-1");
    const handle = forks.fork({
      prefix,
      parent: { agent_id: "parent-steer" },
      directive:
        'Look, then write.\n@sim tool Bash {"command":"sleep 1; echo looked"}\n@sim turn\n@sim say unsteered',
    });
    await eventOf(handle, (event) => event.type === "tool.call");
    await handle.send("Change of plan: check the codec too.\n@sim say steered reply", { by: "tester" });
    const outcome = await handle.result();
    // The scripted model answers the newest user text: the steered message.
    expect(outcome).toMatchObject({ status: "completed", result: { final_text: "steered reply" } });
    const events = await contiguousLog(forks.resources, handle.runId);
    const steered = events.find((event) => event.type === "steered");
    expect(steered).toMatchObject({ turn: 2, by: "tester" });
    const requests = events.filter((event) => event.type === "llm.request");
    expect(requests).toHaveLength(2);
    expect(steered!.seq).toBeLessThan(requests[1]!.seq);
    const carrying = sim
      .requests()
      .filter((entry) => entry.body.includes("Change of plan: check the codec too."));
    expect(carrying).toHaveLength(1);
  });

  it("a steered run resumed on another daemon after a crash still carries the message", async () => {
    const victim = await daemon("steer-victim");
    const handle = forks.fork({
      prefix,
      parent: { agent_id: "parent-steer-crash" },
      directive: 'Look, then write.\n@sim tool Bash {"command":"sleep 1"}\n@sim turn\n@sim say unsteered',
    });
    await eventOf(handle, (event) => event.type === "tool.call");
    const marker = `resume-marker-${handle.runId}`;
    await handle.send(`${marker}\n@sim tps 20\n@sim text 60`);
    // Kill it while the steered turn streams; another daemon resumes from the log.
    await eventOf(handle, (event) => event.type === "llm.delta" && event.turn === 2);
    await victim.kill("SIGKILL");
    await daemon("steer-survivor");
    const outcome = await handle.result();
    expect(outcome.status).toBe("completed");
    const events = await contiguousLog(forks.resources, handle.runId);
    expect(events.filter((event) => event.type === "steered")).toHaveLength(1);
    expect(events.filter((event) => event.type === "accepted").map((event) => event.attempt)).toEqual([1, 2]);
    // The resumed attempt's request (after the second `accepted`) carried the message again.
    const resumedRequests = sim.requests().filter((entry) => entry.body.includes(marker));
    expect(resumedRequests.length).toBeGreaterThanOrEqual(2);
  });
});

describe("a budget shared by a group", () => {
  it("pauses the group's runs at the cap, loses nothing across a daemon crash, and finishes them once the cap is raised", async () => {
    const first = await daemon("budget-1", 5);
    await daemon("budget-2", 5);
    const cap = 0.02;
    const group = forks.group();
    await group.setBudget({ max_cost_usd: cap });
    const turns = 6;
    const script = [
      ...Array.from(
        { length: turns - 1 },
        (_, i) => `@sim tool Bash {"command":"echo step ${i}"}\n@sim turn`,
      ),
      "@sim say done",
    ].join("\n");
    const handles = group.fanOut(
      { prefix, parent: { agent_id: "parent-budget" }, overrides: { max_tokens: 200 } },
      // Each call takes 300 ms: the ten runs' calls are in flight together, as the reservations must handle.
      Array.from({ length: 10 }, (_, i) => ({
        directive: `Work in steps (child ${i}).\n@sim ttft 300\n${script}`,
      })),
      { warmFirst: false },
    );
    // Every run pauses at the cap, unless it finished its work within the budget first: on a loaded
    // machine the runs do not go in step, and one may take all six turns while the others are
    // still being admitted (the cap bounds the group's spend, not who spends it).
    const settled = (state: RunState | null) => state?.status === "paused" || state?.status === "completed";
    const pausedAtCap = await waitFor(
      async () => {
        const states = await Promise.all(handles.map((handle) => forks.state(handle.runId)));
        if (!states.every(settled)) return undefined;
        return handles.filter((_, i) => states[i]?.status === "paused");
      },
      { timeoutMs: 60_000, message: "every run of the group paused (or done within the budget)" },
    );
    // Ten runs of six calls cost far more than the cap: most of them wait.
    expect(pausedAtCap.length).toBeGreaterThanOrEqual(5);
    // What the group really spent, from the logs: within one model call of the cap.
    const spend = async () => {
      const costs: number[] = [];
      for (const handle of handles) {
        const events = await contiguousLog(forks.resources, handle.runId);
        for (const event of events)
          if (event.type === "llm.message")
            costs.push(
              costOfTokens(defaultPricingTable.lookup(prefix.params.model)!, tokenCountsOf(event.usage)),
            );
      }
      return costs;
    };
    const costs = await spend();
    const total = costs.reduce((sum, cost) => sum + cost, 0);
    console.log(
      `group budget: spent $${total.toFixed(6)} against a $${cap} cap in ${costs.length} calls (the dearest $${Math.max(...costs).toFixed(6)}); ${pausedAtCap.length} of 10 runs paused`,
    );
    expect(total).toBeGreaterThanOrEqual(cap);
    expect(total).toBeLessThan(cap + Math.max(...costs));
    // The daemons' count agrees with the logs, and no call holds a reservation.
    const spent = await forks.groupSpend(group.id);
    expect(spent!.reservations).toEqual([]);
    expect(spent!.spent.cost_usd).toBeCloseTo(total, 6);
    for (const handle of pausedAtCap) {
      const events = await contiguousLog(forks.resources, handle.runId);
      expect(events.filter((event) => event.type !== "heartbeat").at(-1)).toMatchObject({ type: "paused" });
    }

    // The daemon holding half of them dies; another takes them over, still paused.
    await first.kill("SIGKILL");
    await daemon("budget-3", 5);
    await waitFor(
      async () => {
        const states = await Promise.all(pausedAtCap.map((handle) => forks.state(handle.runId)));
        return (
          states.every(
            (state) =>
              (state?.status === "paused" && state.daemon_id !== "budget-1") || state?.status === "completed",
          ) || undefined
        );
      },
      { timeoutMs: 60_000, message: "the dead daemon's runs paused again elsewhere" },
    );

    await group.setBudget({ max_cost_usd: 5 });
    const outcomes = await Promise.all(handles.map((handle) => handle.result()));
    for (const outcome of outcomes)
      expect(outcome).toMatchObject({ status: "completed", result: { final_text: "done", turns } });
    for (const handle of handles) {
      const events = await contiguousLog(forks.resources, handle.runId);
      expect(events.filter((event) => event.type === "tool.result")).toHaveLength(turns - 1);
      if (pausedAtCap.includes(handle)) expect(events.some((event) => event.type === "resumed")).toBe(true);
    }
  });

  it("a cap signed with another owner key pauses the group instead of raising it", async () => {
    await daemon("budget-hostile", 2);
    const group = forks.group();
    await group.setBudget({ max_cost_usd: 0 });
    const handle = group.fork({
      prefix,
      parent: { agent_id: "parent-budget-2" },
      directive: "Say it.\n@sim say ok",
    });
    await waitFor(async () => (await forks.state(handle.runId))?.status === "paused" || undefined, {
      timeoutMs: 20_000,
      message: "run paused at a zero cap",
    });
    const hostile = await NatsForkSubagent.create(nc);
    try {
      await hostile.setGroupBudget(group.id, { max_cost_usd: 100 });
      // The forged cap is read (the run polls its group's entry) and not obeyed: no model call.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect((await forks.state(handle.runId))?.status).toBe("paused");
      const events = await contiguousLog(forks.resources, handle.runId);
      expect(events.some((event) => event.type === "llm.request" || event.type === "resumed")).toBe(false);
      await group.setBudget({ max_cost_usd: 1 });
      expect(await handle.result()).toMatchObject({ status: "completed", result: { final_text: "ok" } });
    } finally {
      await hostile.close();
    }
  });

  it("a raised cap resumes paused runs on a daemon that has a free slot, not over a full one's", async () => {
    const full = await daemon("budget-full", 1);
    const group = forks.group();
    await group.setBudget({ max_cost_usd: 0 });
    const paused = [0, 1].map((i) =>
      group.fork({
        prefix,
        parent: { agent_id: "parent-handoff" },
        directive: `Say it (${i}).\n@sim say ok`,
      }),
    );
    await waitFor(
      async () =>
        (await Promise.all(paused.map((handle) => forks.state(handle.runId)))).every(
          (state) => state?.status === "paused" && state.daemon_id === "budget-full",
        ) || undefined,
      { timeoutMs: 20_000, message: "both runs paused on the one-slot daemon" },
    );
    // Paused runs hold no slot: the daemon takes other work into its one slot.
    const busy = forks.fork({ prefix, parent: { agent_id: "parent-busy" }, directive: SLOW });
    await eventOf(busy, (event) => event.type === "llm.delta");
    const spare = await daemon("budget-spare", 2);
    await group.setBudget({ max_cost_usd: 1 });
    for (const handle of paused) {
      expect(await handle.result()).toMatchObject({ status: "completed", result: { final_text: "ok" } });
      const events = await contiguousLog(forks.resources, handle.runId);
      const accepted = events.filter((event) => event.type === "accepted");
      expect(accepted.map((event) => [event.attempt, event.daemon_id])).toEqual([
        [1, "budget-full"],
        [2, spare.id],
      ]);
      // The pause's end is in the log once, from the attempt that went on, with the whole pause.
      const resumed = events.filter((event) => event.type === "resumed");
      expect(resumed).toHaveLength(1);
      expect(resumed[0]!.attempt).toBe(2);
    }
    expect((await forks.state(busy.runId))?.daemon_id).toBe(full.id);
    await busy.abort("done");
  });

  it("a parent can neither delete the cap nor replay an older one to spend more", async () => {
    await daemon("budget-replay", 2);
    const group = forks.group();
    // The owner once allowed $100, then lowered the cap to nothing: the old entry is what a hostile
    // parent keeps to write back.
    await group.setBudget({ max_cost_usd: 100 });
    const generous = await forks.resources.runs.get(`budget.${group.id}`);
    await group.setBudget({ max_cost_usd: 0 });
    const handle = group.fork({
      prefix,
      parent: { agent_id: "parent-budget-3" },
      directive: "Say it.\n@sim say ok",
    });
    await waitFor(async () => (await forks.state(handle.runId))?.status === "paused" || undefined, {
      timeoutMs: 20_000,
      message: "run paused at a zero cap",
    });
    // The daemon recorded the version it obeyed.
    expect((await forks.groupSpend(group.id))?.cap_version).toBe(2);
    await forks.resources.runs.put(`budget.${group.id}`, generous!.value);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await forks.state(handle.runId))?.status).toBe("paused");
    await forks.resources.runs.delete(`budget.${group.id}`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await forks.state(handle.runId))?.status).toBe("paused");
    let events = await contiguousLog(forks.resources, handle.runId);
    expect(events.some((event) => event.type === "llm.request" || event.type === "resumed")).toBe(false);
    // The owner's next cap is above every version obeyed, and is obeyed.
    expect((await group.setBudget({ max_cost_usd: 1 })).cap_version).toBe(3);
    expect(await handle.result()).toMatchObject({ status: "completed", result: { final_text: "ok" } });
    events = await contiguousLog(forks.resources, handle.runId);
    expect(events.filter((event) => event.type === "llm.request")).toHaveLength(1);
  });
});
