// The deployed permissions under the real programs: a daemon (configured from the environment the
// compose file and the Kubernetes Secret give it: NATS_USER=daemon, NATS_PASSWORD), a parent
// (NatsForkSubagent as `parent`) and an observer (as `observer`) against a nats-server running
// deploy/nats/accounts.conf, with the simulator as the LLM. Every fork path — tools, permission
// requests, tool hosts, a prefix bigger than max_payload, an abort — must work, and the server must
// log no permission violation while they do.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bucketKeys, NatsForkSubagent, readRetentionLease, serveTools } from "@forkd/client";
import { runsKeySubject } from "@forkd/client/internal";
import { createForkPrefix } from "@forkd/core";
import { createDaemonLogger, loadDaemonConfig, type RunningDaemon, startDaemon } from "@forkd/daemon";
import { AnthropicLlmClient } from "@forkd/llm";
import type { ForkEvent } from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { loadFixture, type NatsServerHandle, startNatsServer, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prefixWithParentTool } from "../harness/prefixes.js";
import { passwordEnv, type Role, readRepoFile, TEST_PASSWORDS } from "./support.js";

let server: NatsServerHandle;
let sim: Sim;
let workspace: string;
let daemon: RunningDaemon;
let parentNc: NatsConnection;
let parent: NatsForkSubagent;
const connections: NatsConnection[] = [];
const savedEnv = new Map<string, string | undefined>();

async function connectAs(role: Role): Promise<NatsConnection> {
  const nc = await connect({ servers: server.url, user: role, pass: TEST_PASSWORDS[role], reconnect: false });
  connections.push(nc);
  return nc;
}

async function collect(events: AsyncIterable<ForkEvent>): Promise<ForkEvent[]> {
  const all: ForkEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

/** Lines where the server reports a permission violation (it logs every one). */
function violations(): string[] {
  return server
    .log()
    .split("\n")
    .filter((line) => /violation/i.test(line));
}

let permissionRequests = 0;

beforeAll(async () => {
  // nats-server reads `$FORKD_*_PASSWORD` from its environment; the harness spawns it with ours.
  for (const [name, value] of Object.entries(passwordEnv())) {
    savedEnv.set(name, process.env[name]);
    process.env[name] = value;
  }
  server = await startNatsServer({
    name: "deploy-roles-e2e",
    config: readRepoFile("deploy/nats/accounts.conf"),
  });
  sim = await startSim();
  workspace = await mkdtemp(join(tmpdir(), "forkd-deploy-roles-"));
  await writeFile(join(workspace, "README.md"), "deployed workspace\n");

  // The daemon, configured as the deployment configures it: credentials from the environment.
  const config = loadDaemonConfig({
    env: {
      FORKD_NATS_URL: server.url,
      NATS_USER: "daemon",
      NATS_PASSWORD: TEST_PASSWORDS.daemon,
      FORKD_DAEMON_ID: "deployed-daemon-1",
      FORKD_WORKSPACE: workspace,
      FORKD_CONCURRENCY: "4",
      FORKD_BASH_POLICY: "read-only",
      FORKD_HEARTBEAT_MS: "1000",
    },
  });
  expect(config.nats).toMatchObject({ user: "daemon", pass: TEST_PASSWORDS.daemon });
  daemon = await startDaemon(config, {
    logger: createDaemonLogger({ level: "silent", format: "json", daemonId: config.daemonId }),
    llm: new AnthropicLlmClient({ baseURL: sim.url, apiKey: "sk-deploy-roles", retry: { maxRetries: 0 } }),
  });

  parentNc = await connectAs("parent");
  parent = await NatsForkSubagent.create(parentNc, {
    onPermission: () => {
      permissionRequests += 1;
      return { v: 1 as const, decision: "allow", reason: "the deployment test allows it" };
    },
  });
});

afterAll(async () => {
  await daemon?.stop({ graceMs: 0 });
  await parent?.close();
  await Promise.allSettled(connections.map((nc) => nc.close()));
  await sim?.close();
  await server?.stop();
  if (workspace) await rm(workspace, { recursive: true, force: true });
  for (const [name, value] of savedEnv) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe("forkd under deploy/nats/accounts.conf", () => {
  it("a parent forks, the daemon runs tools and asks the parent for permission, the run completes", async () => {
    const fixture = await loadFixture("4k");
    const handle = parent.fork({
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive:
        'Look around, then write.\n@sim tool Glob {"pattern":"**/*"}\n@sim turn\n@sim tool Write {"file_path":"notes.txt","content":"x"}',
      parent: { agent_id: "deployed-parent" },
      permissions: { mode: "ask", timeout_ms: 5_000 },
    });
    const outcome = await handle.result();
    expect(outcome.status).toBe("completed");
    const events = await collect(parent.attach(handle.runId).events());
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.find((event) => event.type === "permission.resolved")).toMatchObject({ decision: "allow" });
    expect(permissionRequests).toBe(1);
    expect(events.filter((event) => event.type === "tool.result")).toHaveLength(2);
    await waitFor(async () => (await parent.state(handle.runId))?.status === "completed");
  });

  it("a prefix larger than max_payload crosses through the object store", async () => {
    const fixture = await loadFixture("300k");
    const prefix = createForkPrefix(fixture.request, fixture.response, { betas: fixture.betas ?? [] });
    expect(JSON.stringify(prefix).length).toBeGreaterThan(parentNc.info!.max_payload);
    const handles = parent.fanOut({ prefix, parent: { agent_id: "deployed-parent" } }, [
      { directive: "First child of the big parent." },
      { directive: "Second child of the big parent." },
    ]);
    const outcomes = await Promise.all(handles.map((handle) => handle.result()));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["completed", "completed"]);
  });

  it("a tool served by the parent answers the remote fork", async () => {
    const host = serveTools(parentNc, {
      hostId: "deployed-host",
      tools: { ParentNotes: () => "notes from the deployed parent" },
    });
    const hosted = await NatsForkSubagent.create(parentNc, { toolHost: host.ref });
    try {
      const handle = hosted.fork({
        prefix: await prefixWithParentTool("4k", "ParentNotes"),
        directive: 'Ask the parent.\n@sim tool ParentNotes {"topic":"deploy"}',
        parent: { agent_id: "deployed-parent" },
      });
      expect((await handle.result()).status).toBe("completed");
      const events = await collect(hosted.attach(handle.runId).events());
      expect(events.find((event) => event.type === "tool.result")).toMatchObject({
        content: "notes from the deployed parent",
        is_error: false,
      });
    } finally {
      await hosted.close();
      await host.stop();
    }
  });

  it("a parent aborts a run in the middle of its LLM stream", async () => {
    const fixture = await loadFixture("4k");
    const handle = parent.fork({
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive: "Write a long essay.\n@sim tps 20\n@sim text 2000",
      parent: { agent_id: "deployed-parent" },
    });
    for await (const event of handle.events()) if (event.type === "llm.delta") break;
    await handle.abort("stopped by the deployed parent");
    expect(await handle.result()).toMatchObject({
      status: "killed",
      reason: "stopped by the deployed parent",
    });
    // The registry records the end right after the terminal event: wait for it.
    await waitFor(async () => (await parent.state(handle.runId))?.status === "aborted");
  });

  it("an observer replays every run and reads the registry, and may not abort", async () => {
    const observerNc = await connectAs("observer");
    const observer = await NatsForkSubagent.create(observerNc);
    const runIds: string[] = [];
    // One-token keys are runs (parent index keys have three, docs/architecture.md "Registry index").
    for await (const key of await observer.resources.runs.keys("*")) runIds.push(key);
    expect(runIds.length).toBeGreaterThanOrEqual(5);
    for (const runId of runIds) {
      const events = await collect(observer.attach(runId).events());
      expect(events.at(-1)?.type).toMatch(/^(completed|aborted)$/);
      await waitFor(async () => /^(completed|aborted)$/.test((await observer.state(runId))?.status ?? ""));
    }
    const daemons: string[] = [];
    // One-token keys are daemons (the retention lease is `lease.retention`).
    for await (const key of await observer.resources.daemons.keys("*")) daemons.push(key);
    expect(daemons).toEqual(["deployed-daemon-1"]);
    expect(violations()).toEqual([]);
    // The abort's core publish is dropped by the server, and its registry write is refused.
    await expect(observer.attach("observer-abort").abort("an observer tries")).rejects.toThrow(
      /Permissions Violation/,
    );
    expect(violations().some((line) => line.includes("agent.fork.observer-abort.abort"))).toBe(true);
    expect(await observer.state("observer-abort")).toBeNull();
    await observer.close();
  });

  it("a daemon sweeps finished runs and collects unused prefixes with the daemon's rights alone", async () => {
    // Every spec acked first: a finished run's spec the first daemon had not acked yet would come back
    // only after ack_wait (30 s), to the sweeper, and keep its run until then.
    await waitFor(
      async () =>
        (await parent.resources.jsm.streams.info(parent.resources.subjects.streams.specs)).state.messages ===
        0,
    );
    // The first daemon hands its lease over when it stops; one with windows of a second takes it.
    await daemon.stop({ graceMs: 0 });
    const config = loadDaemonConfig({
      env: {
        FORKD_NATS_URL: server.url,
        NATS_USER: "daemon",
        NATS_PASSWORD: TEST_PASSWORDS.daemon,
        FORKD_DAEMON_ID: "deployed-sweeper",
        FORKD_WORKSPACE: workspace,
        FORKD_BASH_POLICY: "read-only",
        FORKD_RETENTION_MS: "1000",
        FORKD_PREFIX_RETENTION_MS: "1000",
      },
    });
    daemon = await startDaemon(config, {
      logger: createDaemonLogger({ level: "silent", format: "json", daemonId: config.daemonId }),
      llm: new AnthropicLlmClient({ baseURL: sim.url, apiKey: "sk-deploy-roles", retry: { maxRetries: 0 } }),
    });
    const stored = async () => {
      // The registry's keys as `forkd ps` lists them: the stream's own list of subjects. Not
      // `kv.keys()`, whose last-per-subject consumer on nats-server 2.9.10 was seen in CI to list keys
      // that a get and the stream's per-subject count both said were gone.
      const keys = await bucketKeys(parent.resources, "runs", ">");
      const prefixes: string[] = [];
      for await (const info of await parent.resources.prefixes.list()) prefixes.push(info.name);
      return { keys, prefixes };
    };
    expect((await stored()).prefixes.length).toBeGreaterThan(0);
    await waitFor(
      async () => {
        const { keys, prefixes } = await stored();
        if (keys.length === 0 && prefixes.length === 0) return true;
        // What is left (each run's entry as the sweeper reads it), and who holds the lease, is what a
        // timeout reports (its cause).
        const lease = await readRetentionLease(parent.resources);
        const runs = await Promise.all(
          keys
            .filter((key) => !key.includes("."))
            .slice(0, 5)
            .map(async (key) => {
              const state = await parent.state(key).catch((error: unknown) => String(error));
              if (typeof state !== "string" && state !== null)
                return { key, status: state.status, ended_at: state.ended_at, updated_at: state.updated_at };
              // A key listed but read as absent (seen once in CI): what the server's last-by-subject
              // read and its per-subject count say of it tells a stale index from a lost write.
              const resources = parent.resources;
              const stream = resources.subjects.bucketStreams.runs;
              const subject = runsKeySubject(resources, key);
              const entry = await resources.runs.get(key).catch((error: unknown) => String(error));
              const counted = await resources.jsm.streams
                .info(stream, { subjects_filter: subject })
                .then((info) => info.state.subjects?.[subject] ?? 0)
                .catch((error: unknown) => String(error));
              return {
                key,
                state,
                get:
                  entry === null || typeof entry === "string"
                    ? entry
                    : { op: entry.operation, length: entry.length, revision: entry.revision },
                counted,
              };
            }),
        );
        throw new Error(
          `left: ${keys.length} registry keys (${keys.slice(0, 5).join(", ")}; runs ${JSON.stringify(runs)}), ${prefixes.length} prefixes; retention lease ${JSON.stringify(lease)} at ${Date.now()}`,
        );
      },
      { timeoutMs: 30_000 },
    );
  });

  it("logged no permission violation for the parent or the daemon", () => {
    // e.g. `[ERR] … - Publish Violation - User "observer", Subject "agent.fork.observer-abort.abort"`
    const users = new Set(violations().map((line) => /User "([^"]+)"/.exec(line)?.[1]));
    expect([...users]).toEqual(["observer"]);
  });
});
