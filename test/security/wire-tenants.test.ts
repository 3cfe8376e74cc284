// Findings 5 and 12 of issue #11 across tenants: deploy/nats/tenants.conf on a real nats-server,
// tenant A running a fork that asks for permission and calls its tool host, and tenant B — its
// parent and even its admin — trying every attack of those findings on A's run. The server keeps
// the accounts apart: nothing B sends reaches A, nothing of A reaches B, and A's run ends as A asked.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsForkSubagent, serveTools } from "@forkd/client";
import { readStoredEvents } from "@forkd/client/internal";
import { createDaemonLogger, loadDaemonConfig, type RunningDaemon, startDaemon } from "@forkd/daemon";
import { AnthropicLlmClient } from "@forkd/llm";
import { type ForkEvent, forkSubjects, PROTOCOL_VERSION, permissionResponseCodec } from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { type NatsServerHandle, startNatsServer, waitFor } from "@forkd/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyEnv, passwordEnv, readRepoFile, TEST_PASSWORDS } from "../deploy/support.js";
import { prefixWithParentTool } from "../harness/prefixes.js";

const TENANT_B_PASSWORDS = {
  FORKD_B_PARENT_PASSWORD: "b-parent-secret",
  FORKD_B_DAEMON_PASSWORD: "b-daemon-secret",
  FORKD_B_OBSERVER_PASSWORD: "b-observer-secret",
  FORKD_B_ADMIN_PASSWORD: "b-admin-secret",
};
const subjects = forkSubjects("agent");
let restoreEnv: (() => void) | undefined;
const connections: NatsConnection[] = [];
let server: NatsServerHandle;
let sim: Sim;
let workspace: string;
let daemonA: RunningDaemon;

// tenants.conf includes accounts.conf; the harness takes one config text, so the include is inlined.
function tenantsConfig(): string {
  const tenants = readRepoFile("deploy/nats/tenants.conf");
  expect(tenants).toMatch(/^include accounts\.conf$/m);
  return tenants.replace(/^include accounts\.conf$/m, readRepoFile("deploy/nats/accounts.conf"));
}

async function connectAs(user: string, pass: string): Promise<NatsConnection> {
  const nc = await connect({ servers: server.url, user, pass, reconnect: false, name: `tenants-${user}` });
  connections.push(nc);
  return nc;
}

beforeAll(async () => {
  // nats-server reads the passwords from its environment; the harness spawns it with ours.
  restoreEnv = applyEnv({ ...passwordEnv(), ...TENANT_B_PASSWORDS });
  server = await startNatsServer({ name: "tenants", config: tenantsConfig() });
  sim = await startSim();
  workspace = await mkdtemp(join(tmpdir(), "forkd-tenants-"));
  await writeFile(join(workspace, "README.md"), "tenant A's workspace\n");
  const config = loadDaemonConfig({
    env: {},
    overrides: {
      daemonId: "tenant-a-daemon",
      nats: { servers: [server.url], user: "daemon", pass: TEST_PASSWORDS.daemon },
      workspace,
      heartbeatMs: 300,
    },
  });
  daemonA = await startDaemon(config, {
    logger: createDaemonLogger({ level: "silent", format: "json", daemonId: config.daemonId }),
    llm: new AnthropicLlmClient({ baseURL: sim.url, apiKey: "sk-tenant-a", retry: { maxRetries: 0 } }),
  });
});

afterAll(async () => {
  await daemonA?.stop({ graceMs: 0 });
  await Promise.allSettled(connections.map((nc) => nc.close()));
  await Promise.allSettled([sim?.close(), server?.stop()]);
  if (workspace) await rm(workspace, { recursive: true, force: true });
  restoreEnv?.();
});

describe("deploy/nats/tenants.conf", () => {
  it("tenant B can neither read, take over, abort nor answer for tenant A's run", async () => {
    // Tenant A: a parent that allows the Write and serves a tool.
    const parentA = await connectAs("parent", TEST_PASSWORDS.parent);
    const host = serveTools(parentA, { hostId: "tenant-a-host", tools: { ParentNotes: () => "A's notes" } });
    const forksA = await NatsForkSubagent.create(parentA, {
      toolHost: host.ref,
      onPermission: () => ({ v: PROTOCOL_VERSION, decision: "allow", reason: "A allows" }),
    });

    // Tenant B: its admin (every right inside B) watches everything in B's account; its parent
    // stands ready to answer A's permission requests and serve A's tool host.
    const adminB = await connectAs("b-admin", TENANT_B_PASSWORDS.FORKD_B_ADMIN_PASSWORD);
    const parentB = await connectAs("b-parent", TENANT_B_PASSWORDS.FORKD_B_PARENT_PASSWORD);
    const seenByB: string[] = [];
    adminB.subscribe(">", {
      callback: (_error, message) => {
        seenByB.push(message.subject);
      },
    });
    let answeredByB = 0;
    const answer = (_error: Error | null, message: { respond(data: Uint8Array): boolean }) => {
      answeredByB++;
      message.respond(permissionResponseCodec.encode({ v: PROTOCOL_VERSION, decision: "deny", reason: "B" }));
    };
    parentB.subscribe("agent.fork.*.permission", { callback: answer });
    parentB.subscribe("agent.toolhost.>", { callback: answer });
    await Promise.all([adminB.flush(), parentB.flush()]);
    const forksB = await NatsForkSubagent.create(parentB);

    const handle = forksA.fork({
      prefix: await prefixWithParentTool("4k", "ParentNotes"),
      directive: [
        "Work, then write a file.",
        '@sim tool ParentNotes {"topic":"t"}',
        '@sim tool Write {"file_path":"tenant-a.txt","content":"A"}',
        "@sim turn",
        "@sim tps 80",
        "@sim text 120",
      ].join("\n"),
      parent: { agent_id: "tenant-a" },
      permissions: { mode: "ask", timeout_ms: 20_000 },
    });
    await handle.published();
    const runId = handle.runId;

    // B's attacks, on A's subjects, with A's run id, while A's run goes on.
    const refusedSpecs = await Promise.all(
      [
        "{}",
        JSON.stringify({
          v: 1,
          run_id: runId,
          parent: { agent_id: "B" },
          directive: "mine",
          prefix: { kind: "none" },
          created_at: Date.now(),
        }),
      ].map((payload) =>
        forksB.resources.js.publish(subjects.spec(runId), payload).then(
          (ack) => ack.stream,
          (error: unknown) => error,
        ),
      ),
    );
    await forksB.attach(runId).abort("B aborts A's run");
    adminB.publish(
      subjects.abort(runId),
      JSON.stringify({ v: 1, run_id: runId, reason: "B", requested_at: 1 }),
    );
    expect(await forksB.state(runId)).toMatchObject({ abort: { reason: "B aborts A's run" } }); // B's own bucket
    expect(await forksB.resources.runs.get("never-in-b")).toBeNull();
    // B's admin marks the run completed and empties the prefix store and the events stream: B's own.
    const completedByB = {
      v: 1,
      run_id: runId,
      status: "completed",
      attempt: 9,
      last_seq: 0,
      created_at: 1,
      updated_at: 1,
    };
    await forksB.resources.runs.put(runId, JSON.stringify(completedByB));
    const jsmB = await jetstreamManager(adminB);
    await jsmB.streams.purge(`OBJ_${subjects.buckets.prefixes}`);
    await jsmB.streams.purge(subjects.streams.events);

    // A's run ends as A asked: A's permission answer, A's tool host, one attempt, completed.
    expect((await handle.result()).status).toBe("completed");
    const log: ForkEvent[] = (await readStoredEvents(forksA.resources, runId)).map((stored) => stored.event);
    expect(new Set(log.map((event) => event.attempt))).toEqual(new Set([1]));
    // The registry records the end right after the terminal event: wait for it.
    const stateA = await waitFor(async () => {
      const state = await forksA.state(runId);
      return state?.status === "completed" ? state : null;
    });
    expect(stateA.attempt).toBe(1);
    expect(log.find((event) => event.type === "permission.resolved")).toMatchObject({ decision: "allow" });
    expect(log.find((event) => event.type === "tool.result" && event.name === "ParentNotes")).toMatchObject({
      content: "A's notes",
    });

    // What B stored went to B's own streams; B's reads of A's run find nothing.
    // B's first spec is stored in B's own specs stream, its second refused there (one per run id).
    expect(refusedSpecs[0]).toBe("AGENT_FORK_SPECS");
    expect(refusedSpecs[1]).toMatchObject({ code: 10077 });
    expect(await readStoredEvents(forksB.resources, runId)).toEqual([]);
    // Nothing of A's run (its permission request, tool call, events) ever reached tenant B's account.
    await adminB.flush();
    const ofA = [subjects.events(runId), subjects.permission(runId), subjects.toolHost("tenant-a-host")];
    expect(seenByB.filter((subject) => ofA.includes(subject))).toEqual([]);
    expect(answeredByB).toBe(0);
    await forksA.close();
    await forksB.close();
    await host.stop();
  });

  it("inside one account, a parent can neither purge nor delete what other parents' runs use", async () => {
    const parent = await connectAs("parent", TEST_PASSWORDS.parent);
    const forks = await NatsForkSubagent.create(parent);
    const { jsm } = forks.resources;
    const hash = "b".repeat(64);
    await forks.resources.prefixes.putBlob({ name: hash }, new Uint8Array(10));
    for (const stream of [
      `OBJ_${subjects.buckets.prefixes}`,
      subjects.streams.events,
      subjects.streams.specs,
    ]) {
      await expect(jsm.streams.purge(stream)).rejects.toThrow(/Permissions Violation/);
      await expect(jsm.streams.deleteMessage(stream, 1)).rejects.toThrow(/Permissions Violation/);
    }
    await expect(jsm.streams.delete(subjects.streams.events)).rejects.toThrow(/Permissions Violation/);
    expect((await forks.resources.prefixes.info(hash))?.size).toBe(10);
    await forks.close();
  });
});
