// The daemon against a real nats-server and the simulator over real HTTP: runs, malformed specs,
// aborts, tools, drain, permissions and specs without cache-safe params.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lastLoggedEvent, NatsForkSubagent } from "@forkd/client";
import { readStoredEvents } from "@forkd/client/internal";
import { createForkPrefix, type LlmCallOptions, type LlmClient, type LlmRequest } from "@forkd/core";
import { AnthropicLlmClient } from "@forkd/llm";
import {
  type ForkEvent,
  forkSpecCodec,
  forkSubjects,
  PROTOCOL_VERSION,
  queuedRunState,
  runStateCodec,
} from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { loadFixture, type NatsServerHandle, startNatsServer, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDaemonConfig } from "./config.js";
import { createDaemonLogger } from "./logger.js";
import { type RunningDaemon, startDaemon } from "./run-daemon.js";

let server: NatsServerHandle;
let sim: Sim;
let nc: NatsConnection;
let forks: NatsForkSubagent;
let workspace: string;
const daemons: RunningDaemon[] = [];

const silent = createDaemonLogger({ level: "silent", format: "json", daemonId: "test" });

/** Every model call the daemons made, as the turn loop asked for it (the SDK may not have sent it). */
const modelCalls: { request: LlmRequest; signal: AbortSignal | undefined }[] = [];

/** The model calls whose request holds `text` (a directive). */
function callsWith(text: string): typeof modelCalls {
  return modelCalls.filter((call) => JSON.stringify(call.request.messages).includes(text));
}

async function startTestDaemon(id: string, overrides: Record<string, unknown> = {}): Promise<RunningDaemon> {
  const config = loadDaemonConfig({
    env: {},
    overrides: {
      daemonId: id,
      nats: { servers: [server.url] },
      workspace,
      concurrency: 4,
      heartbeatMs: 1000,
      tools: { bash: "full" },
      ...overrides,
    },
  });
  const anthropic = new AnthropicLlmClient({
    baseURL: sim.url,
    apiKey: "sk-test-daemon",
    retry: { maxRetries: 0 },
  });
  const llm: LlmClient = {
    createMessage: (request: LlmRequest, options?: LlmCallOptions) => {
      modelCalls.push({ request, signal: options?.signal });
      return anthropic.createMessage(request, options);
    },
  };
  const running = await startDaemon(config, { logger: silent, llm });
  daemons.push(running);
  return running;
}

function seqs(events: ForkEvent[]): number[] {
  return events.map((event) => event.seq);
}

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "forkd-daemon-it-"));
  await writeFile(join(workspace, "README.md"), "forkd test workspace\nsecond line\n");
  server = await startNatsServer();
  sim = await startSim({ port: 0 });
  nc = await connect({ servers: server.url });
  forks = await NatsForkSubagent.create(nc, { onPermission: permissionHandler });
  await startTestDaemon("daemon-a");
});

afterAll(async () => {
  for (const daemon of daemons.splice(0)) await daemon.stop({ graceMs: 0 }).catch(() => undefined);
  await forks?.close();
  await nc?.close();
  await sim?.close();
  await server?.stop();
  await rm(workspace, { recursive: true, force: true });
});

let permissionDecision: "allow" | "deny" | "silent" | "long-reason" = "allow";
function permissionHandler() {
  if (permissionDecision === "silent") return new Promise<never>(() => undefined);
  // A reason one character over the protocol's 4,096: an allow the protocol cannot carry.
  if (permissionDecision === "long-reason")
    return { v: 1 as const, decision: "allow" as const, reason: "x".repeat(4097) };
  return { v: 1 as const, decision: permissionDecision, reason: `test says ${permissionDecision}` };
}

/**
 * Completes a fork, changes its registry entry with `alter`, publishes a spec for the run again and
 * expects the daemon to record the end the log holds and run nothing: no model call, no event. A spec
 * that claims a fresh run id (`fresh_run_id`, false here: a hostile or broken parent) may have its
 * first model call sent ahead of the claim; the refused claim must then abort it and store nothing.
 */
async function expectEndedRunNotRunAgain(
  alter: (resources: NatsForkSubagent["resources"], runId: string) => Promise<void>,
  options: {
    claimsFresh?: boolean;
    parent?: NatsForkSubagent;
    /** False where the run is claimed before its first call: a daemon or a spec that does not call ahead. */
    callsAhead?: boolean;
    /**
     * False: the provider answers at once, so a call made ahead may be answered before the claim's
     * refusal arrives (the answer is then dropped). Default: it holds the answer until aborted.
     */
    providerHolds?: boolean;
    groupId?: string;
  } = {},
): Promise<void> {
  const parent = options.parent ?? forks;
  const fixture = await loadFixture("4k");
  const handle = parent.fork({
    prefix: createForkPrefix(fixture.request, fixture.response),
    directive: "Summarise the codec module.",
    parent: { agent_id: "parent-1" },
  });
  expect((await handle.result()).status).toBe("completed");
  const resources = parent.resources;
  const logged = await readStoredEvents(resources, handle.runId);
  await waitFor(async () => (await parent.state(handle.runId))?.status === "completed");
  await alter(resources, handle.runId);
  const requestsBefore = sim.requests().length;
  const spec = forkSpecCodec.encode({
    v: PROTOCOL_VERSION,
    run_id: handle.runId,
    parent: { agent_id: "parent-1", lineage: [] },
    // The provider holds the answer (a long time to first token): a call made ahead of the claim can
    // end only by the refusal's abort, which the test then waits for.
    directive: `Summarise the codec module again (${handle.runId}).${options.providerHolds === false ? "" : "\n@sim ttft 600000"}`,
    prefix: { kind: "none" },
    created_at: Date.now(),
    ...(options.claimsFresh ? { fresh_run_id: true as const } : {}),
    ...(options.groupId ? { group_id: options.groupId } : {}),
  });
  await resources.js.publish(resources.subjects.spec(handle.runId), spec, {
    msgID: `again-${handle.runId}`,
  });
  await waitFor(async () => (await parent.state(handle.runId))?.status === "completed");
  await waitFor(
    async () => (await resources.jsm.streams.info(resources.subjects.streams.specs)).state.messages === 0,
  );
  const calledAgain = callsWith(`again (${handle.runId})`);
  if (options.claimsFresh && options.callsAhead !== false) {
    // The call went ahead (everything between the spec's decoding and the call is microtasks, and the
    // claim goes out on the next turn, so its refusal cannot be read before it), and the refusal
    // aborted it.
    expect(calledAgain).toHaveLength(1);
    if (options.providerHolds !== false) await waitFor(() => calledAgain[0]!.signal?.aborted);
    expect(sim.requests().length).toBeLessThanOrEqual(requestsBefore + 1);
  } else {
    expect(calledAgain).toEqual([]);
    expect(sim.requests().length).toBe(requestsBefore);
  }
  // The log's last event is still the one that ended it (readStoredEvents stops at the terminal one).
  expect(await lastLoggedEvent(resources, handle.runId)).toEqual(logged.at(-1));
  expect((await parent.state(handle.runId))?.last_seq).toBe(logged.at(-1)?.event.seq);
}

/** Writes `runId`'s registry entry as its parent registers a queued run (no owning spec named). */
async function registerQueued(
  resources: NatsForkSubagent["resources"],
  runId: string,
  abort?: { reason: string; requested_at: number },
): Promise<void> {
  const queued = queuedRunState({ runId, createdAt: Date.now(), now: Date.now(), parentAgentId: "parent-1" });
  await resources.runs.put(runId, runStateCodec.encode(abort ? { ...queued, abort } : queued));
}

/** Publishes a spec for `runId` that says its parent made the id (`fresh_run_id`), as forkd's client does. */
async function publishFreshSpec(runId: string, directive: string): Promise<void> {
  const spec = forkSpecCodec.encode({
    v: PROTOCOL_VERSION,
    run_id: runId,
    parent: { agent_id: "parent-1", lineage: [] },
    directive,
    prefix: { kind: "none" },
    created_at: Date.now(),
    fresh_run_id: true,
  });
  await forks.resources.js.publish(forks.resources.subjects.spec(runId), spec, { msgID: runId });
}

describe("a daemon over real NATS", () => {
  it("runs a fork of the 4k fixture to completion with a contiguous event log", async () => {
    const fixture = await loadFixture("4k");
    const prefix = createForkPrefix(fixture.request, fixture.response);
    const handle = forks.fork({
      prefix,
      directive: "Summarise the codec module.",
      parent: { agent_id: "parent-1" },
    });
    const outcome = await handle.result();
    expect(outcome.status).toBe("completed");
    if (outcome.status !== "completed") return;
    expect(outcome.result.final_text).toMatch(/Scope:/);
    expect(outcome.result.cache_shared).toBe(true);
    const events = (await readStoredEvents(forks.resources, handle.runId)).map((l) => l.event);
    expect(seqs(events)).toEqual(events.map((_, i) => i + 1));
    expect(events.map((e) => e.type)).toEqual(
      expect.arrayContaining(["accepted", "started", "llm.request", "llm.message", "completed"]),
    );
    expect(events.at(-1)?.type).toBe("completed");
    // The registry records the end just after the terminal event (the log is the source of truth).
    const state = await waitFor(async () => {
      const current = await forks.state(handle.runId);
      return current?.status === "completed" ? current : undefined;
    });
    expect(state?.daemon_id).toBe("daemon-a");
  });

  it("does not run a run again whose log ended and whose registry entry is gone: a first delivery's one-round-trip claim reads the log too", async () => {
    await expectEndedRunNotRunAgain(async (resources, runId) => {
      const bucket = resources.subjects.buckets.runs;
      await resources.jsm.streams.purge(`KV_${bucket}`, { filter: `$KV.${bucket}.${runId}` });
      expect(await forks.state(runId)).toBeNull();
    });
  });

  it("does not run a run again whose log ended while its registry entry says queued: the claim's create fails, and the log read beside it still counts", async () => {
    await expectEndedRunNotRunAgain(async (resources, runId) => {
      // The registry behind the log (as if the end was never recorded), naming no owning spec.
      await registerQueued(resources, runId);
      expect((await forks.state(runId))?.status).toBe("queued");
    });
  });

  it("stores nothing of a spec that calls a used run id fresh, whose registry entry is gone: the call ahead of the claim is aborted, the log's end recorded", async () => {
    await expectEndedRunNotRunAgain(
      async (resources, runId) => {
        const bucket = resources.subjects.buckets.runs;
        await resources.jsm.streams.purge(`KV_${bucket}`, { filter: `$KV.${bucket}.${runId}` });
      },
      { claimsFresh: true },
    );
  });

  it("stores nothing of a spec that calls a used run id fresh, whose registry entry ended: the claim's create is refused and the call ahead of it aborted", async () => {
    await expectEndedRunNotRunAgain(async () => undefined, { claimsFresh: true });
  });

  it("stores nothing of a spec that calls a used run id fresh when the provider answers before the refusal: the answer is dropped", async () => {
    await expectEndedRunNotRunAgain(async () => undefined, { claimsFresh: true, providerHolds: false });
  });

  it("takes over its parent's queued registration when that got there before the claim: the call ahead goes on, once", async () => {
    const resources = forks.resources;
    const runId = "fresh-but-registered-1";
    const directive = `Registered first (${runId}).`;
    // As the parent writes it a moment after the spec is stored, here before: the claim's create is refused.
    await registerQueued(resources, runId);
    await publishFreshSpec(runId, directive);
    await waitFor(async () => (await forks.state(runId))?.status === "completed");
    const calls = callsWith(directive);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.signal?.aborted).toBe(false);
    const events = (await readStoredEvents(resources, runId)).map((l) => l.event);
    expect(seqs(events)).toEqual(events.map((_, i) => i + 1));
    expect(events[0]).toMatchObject({ type: "accepted", delivery: 1, attempt: 1 });
    expect(events.every((event) => event.attempt === 1)).toBe(true);
  });

  it("does not take over a registration that carries an abort flag: the call ahead is aborted and the run ends aborted", async () => {
    const resources = forks.resources;
    const runId = "fresh-but-aborted-1";
    // Held by the provider, as above: the call ahead can end only by the abort.
    const directive = `Aborted while queued (${runId}).\n@sim ttft 600000`;
    // Only the flag: no abort on the fast path that a daemon could have heard.
    await registerQueued(resources, runId, { reason: "flagged while queued", requested_at: Date.now() });
    await publishFreshSpec(runId, directive);
    await waitFor(async () => (await forks.state(runId))?.status === "aborted");
    const events = (await readStoredEvents(resources, runId)).map((l) => l.event);
    expect(events.filter((event) => event.type.startsWith("llm."))).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "aborted", reason: "flagged while queued" });
    for (const call of callsWith(directive)) expect(call.signal?.aborted).toBe(true);
  });

  it("makes no model call before the claim of a group's run, fresh or not: its budget reserves spend before each call", async () => {
    await expectEndedRunNotRunAgain(async () => undefined, {
      claimsFresh: true,
      groupId: "group-of-a-used-run-id",
      callsAhead: false,
    });
  });

  it("makes no model call before the claim where the operator turned calling ahead off", async () => {
    // A daemon and a parent of their own (subjects under another prefix): daemon-a must not take it.
    await startTestDaemon("daemon-no-call-ahead", { prefix: "noahead", callAheadOfClaim: false });
    const parent = await NatsForkSubagent.create(nc, { prefix: "noahead" });
    try {
      await expectEndedRunNotRunAgain(async () => undefined, {
        claimsFresh: true,
        parent,
        callsAhead: false,
      });
    } finally {
      await parent.close();
    }
  });
  it("registers a run by its claim when a daemon is free: the parent's queued registration waits, and is not made once it hears the run", async () => {
    const parent = await NatsForkSubagent.create(nc, { queuedRegistrationDelayMs: 60_000 });
    try {
      const runId = "claimed-first-1";
      // Every write sent to the run's key (a core subscription hears refused ones too), with the
      // sequence it expects the key to be at: 0 for a create.
      const writes: { status: string; expects: string | undefined }[] = [];
      const bucket = parent.resources.subjects.buckets.runs;
      const subscription = nc.subscribe(`$KV.${bucket}.${runId}`, {
        callback: (_error, message) => {
          writes.push({
            status: runStateCodec.decode(message.data).status,
            expects: message.headers?.get("Nats-Expected-Last-Subject-Sequence"),
          });
        },
      });
      await nc.flush();
      const fixture = await loadFixture("4k");
      const handle = parent.fork({
        runId,
        prefix: createForkPrefix(fixture.request, fixture.response),
        directive: "Summarise the codec module.",
        parent: { agent_id: "parent-1" },
      });
      expect((await handle.result()).status).toBe("completed");
      // The registry records the end just after the terminal event; wait for it, so that the
      // waiting registration is the key's last write and not raced by the daemon's.
      await waitFor(async () => ((await parent.state(runId))?.status === "completed" ? true : undefined));
      await parent.close(); // would write a registration still waiting
      await nc.flush();
      subscription.unsubscribe();
      // The claim is the run's first write, a create; no compare-and-set from a queued entry followed
      // it, and the parent, which heard the run's events, wrote nothing (a create it would be refused).
      expect(writes[0]).toEqual({ status: "running", expects: "0" });
      expect(writes.filter((write) => write.status === "queued")).toEqual([]);
      expect(writes.at(-1)?.status).toBe("completed");
      expect((await parent.state(runId))?.status).toBe("completed");
    } finally {
      await parent.close();
    }
  });

  it("runs a new run whose registry key was deleted: both one-round-trip creates are refused there, and the claim's fallback takes the key over", async () => {
    const runId = "deleted-key-run-1";
    const resources = forks.resources;
    await resources.runs.put(runId, "{}");
    await resources.runs.delete(runId);
    const fixture = await loadFixture("4k");
    const handle = forks.fork({
      runId,
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive: "Summarise the codec module.",
      parent: { agent_id: "parent-1" },
    });
    expect((await handle.result()).status).toBe("completed");
    const state = await waitFor(async () => {
      const current = await forks.state(runId);
      return current?.status === "completed" ? current : undefined;
    });
    expect(state?.daemon_id).toBe("daemon-a");
    expect(state?.attempt).toBe(1);
  });

  it("fails a malformed spec on its own and keeps serving", async () => {
    const subjects = forkSubjects();
    const js = forks.resources.js;
    await js.publish(
      subjects.spec("malformed-1"),
      new TextEncoder().encode('{"v":1,"run_id":"malformed-1"}'),
    );
    const bad = forks.attach("malformed-1");
    const outcome = await bad.result();
    expect(outcome.status).toBe("failed");
    if (outcome.status === "failed") expect(outcome.error.code).toBe("invalid_spec");
    const fixture = await loadFixture("4k");
    const good = forks.fork({
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive: "Still alive?",
      parent: { agent_id: "parent-1" },
    });
    expect((await good.result()).status).toBe("completed");
  });

  it("fails a child whose max_tokens is not above the parent's thinking budget before any model call", async () => {
    const fixture = await loadFixture("4k");
    const request = { ...fixture.request, thinking: { type: "enabled", budget_tokens: 2048 } };
    const requestsBefore = sim.requests().length;
    const handle = forks.fork({
      prefix: createForkPrefix(request, fixture.response),
      directive: "Answer briefly.",
      parent: { agent_id: "parent-1" },
      overrides: { max_tokens: 2048 },
    });
    const outcome = await handle.result();
    expect(outcome.status).toBe("failed");
    if (outcome.status === "failed") {
      expect(outcome.error.code).toBe("invalid_fork_params");
      expect(outcome.error.message).toContain("thinking budget (2048)");
    }
    expect(sim.requests().length).toBe(requestsBefore);
  });

  it("forks onto another model within that model's limits, and fails one that refuses the parent's thinking before any call", async () => {
    const fixture = await loadFixture("4k");
    // The parent asks 32,000 output tokens of claude-sonnet-4-6; claude-3-5-haiku takes at most 8,192.
    const onHaiku = forks.fork({
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive: "[on-haiku] Answer briefly.",
      parent: { agent_id: "parent-1" },
      overrides: { model: "claude-3-5-haiku-20241022" },
    });
    expect((await onHaiku.result()).status).toBe("completed");
    const sent = sim.requests().find((entry) => entry.body.includes("[on-haiku]"));
    expect(sent?.status).toBe(200);
    expect(JSON.parse(sent?.body ?? "{}")).toMatchObject({
      model: "claude-3-5-haiku-20241022",
      max_tokens: 8192,
    });

    const requestsBefore = sim.requests().length;
    const thinking = { type: "enabled", budget_tokens: 2048 };
    const onOpus = forks.fork({
      prefix: createForkPrefix({ ...fixture.request, thinking }, fixture.response),
      directive: "Answer briefly.",
      parent: { agent_id: "parent-1" },
      overrides: { model: "claude-opus-4-7" },
    });
    const outcome = await onOpus.result();
    expect(outcome.status).toBe("failed");
    if (outcome.status === "failed") {
      expect(outcome.error.code).toBe("invalid_fork_params");
      expect(outcome.error.message).toContain(
        'claude-opus-4-7 does not take the parent\'s thinking (type "enabled")',
      );
    }
    expect(sim.requests().length).toBe(requestsBefore);
  });

  it("runs tools, then answers with what they returned", async () => {
    const fixture = await loadFixture("4k");
    const handle = forks.fork({
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive: 'Read the readme.\n@sim tool Read {"file_path":"README.md"}',
      parent: { agent_id: "parent-1" },
    });
    const outcome = await handle.result();
    expect(outcome.status).toBe("completed");
    const events = (await readStoredEvents(forks.resources, handle.runId)).map((l) => l.event);
    const result = events.find((e) => e.type === "tool.result");
    expect(result?.type === "tool.result" && result.content).toMatch(/forkd test workspace/);
  });

  it("aborts a run in the middle of an LLM stream: the simulator sees the disconnect", async () => {
    const fixture = await loadFixture("4k");
    const handle = forks.fork({
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive: "Write a long essay.\n@sim tps 20\n@sim text 2000",
      parent: { agent_id: "parent-1" },
    });
    for await (const event of handle.events()) if (event.type === "llm.delta") break;
    const disconnect = sim.next("disconnect");
    await handle.abort("changed my mind");
    await disconnect;
    const outcome = await handle.result();
    expect(outcome).toMatchObject({ status: "killed", reason: "changed my mind" });
    await waitFor(async () => (await forks.state(handle.runId))?.status === "aborted");
  });

  it("aborts a run in the middle of a tool: the tool process is gone", async () => {
    const fixture = await loadFixture("4k");
    const startedFile = join(workspace, "sleep.started");
    // The tool runs in its own PID namespace, so it is found by a name of its own, not by a pid.
    const tag = `forkd-abort-probe-${process.pid}-${Date.now()}`;
    const handle = forks.fork({
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive: `Wait.\n@sim tool Bash {"command":"echo started > ${startedFile}; exec -a ${tag} sleep 30"}`,
      parent: { agent_id: "parent-1" },
    });
    for await (const event of handle.events()) if (event.type === "tool.call") break;
    // The shell writes the file before sleeping; no event says so, so wait for the file itself.
    await waitFor(() => existsSync(startedFile) && processCount(tag) > 0);
    await handle.abort("stop the tool");
    const outcome = await handle.result();
    expect(outcome.status).toBe("killed");
    await waitFor(() => processCount(tag) === 0);
  });

  it("does not run a spec whose run was aborted before pickup", async () => {
    await daemons[0]!.daemon.shutdown({ graceMs: 0 });
    daemons.shift();
    const fixture = await loadFixture("4k");
    const handle = forks.fork({
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive: "Never runs",
      parent: { agent_id: "parent-1" },
    });
    await handle.abort("too late");
    await startTestDaemon("daemon-b");
    const outcome = await handle.result();
    expect(outcome).toMatchObject({ status: "killed", reason: "too late" });
    const events = (await readStoredEvents(forks.resources, handle.runId)).map((l) => l.event);
    expect(events.some((e) => e.type === "llm.request")).toBe(false);
  });

  it("runs a spec without cache-safe params with the daemon's defaults", async () => {
    const handle = forks.fork({
      prefix: null,
      directive: "First-turn fork",
      parent: { agent_id: "parent-1" },
    });
    const outcome = await handle.result();
    expect(outcome.status).toBe("completed");
    if (outcome.status === "completed") expect(outcome.result.cache_shared).toBe(false);
  });

  it("bubbles a permission request to the parent: allowed, denied and timed out", async () => {
    const fixture = await loadFixture("4k");
    const prefix = createForkPrefix(fixture.request, fixture.response);
    const run = async (decision: typeof permissionDecision) => {
      permissionDecision = decision;
      const handle = forks.fork({
        prefix,
        directive: `Write a file.\n@sim tool Write {"file_path":"perm-${decision}.txt","content":"x"}`,
        parent: { agent_id: "parent-1" },
        permissions: { mode: "ask", timeout_ms: 500 },
      });
      expect((await handle.result()).status).toBe("completed");
      const events = (await readStoredEvents(forks.resources, handle.runId)).map((l) => l.event);
      return events.find((e) => e.type === "permission.resolved");
    };
    expect(await run("allow")).toMatchObject({ decision: "allow" });
    expect(await run("deny")).toMatchObject({ decision: "deny" });
    expect(await run("silent")).toMatchObject({ decision: "timeout" });
    // Not an unhandled rejection in the parent, and not a wait for the timeout: a denial, at once.
    expect(await run("long-reason")).toMatchObject({ decision: "deny" });
  });
});

/** How many processes have `tag` in their command line. */
function processCount(tag: string): number {
  const found = spawnSync("pgrep", ["-f", "-c", tag], { encoding: "utf8" });
  return Number(found.stdout.trim() || 0);
}
