// The daemons' shared consumer on the specs stream is every parent's queue. nats-server treats a
// create of an existing durable with another config as an update, so a parent holding the right to
// create it could rewrite it for everyone: max_ack_pending 1 (one run at a time in the whole
// account), max_deliver 1 (a run whose spec is put back once is given up and failed), ack_wait 1 s
// (every run redelivered while it runs). deploy/nats/accounts.conf leaves that right to daemons only;
// a parent that starts before any daemon still forks, and its run waits in the queue for one.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import { createDaemonLogger, loadDaemonConfig, type RunningDaemon, startDaemon } from "@forkd/daemon";
import { AnthropicLlmClient } from "@forkd/llm";
import { forkSubjects } from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { loadFixture, type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { AckPolicy, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyEnv, passwordEnv, readRepoFile, TEST_PASSWORDS } from "../deploy/support.js";

const subjects = forkSubjects("agent");
const connections: NatsConnection[] = [];
let restoreEnv: (() => void) | undefined;
let server: NatsServerHandle;
let sim: Sim;
let workspace: string;
let daemon: RunningDaemon | undefined;

async function connectAs(role: "parent" | "daemon" | "admin"): Promise<NatsConnection> {
  const nc = await connect({ servers: server.url, user: role, pass: TEST_PASSWORDS[role], reconnect: false });
  connections.push(nc);
  return nc;
}

beforeAll(async () => {
  restoreEnv = applyEnv(passwordEnv());
  server = await startNatsServer({
    name: "wire-consumer",
    config: readRepoFile("deploy/nats/accounts.conf"),
  });
  sim = await startSim();
  workspace = await mkdtemp(join(tmpdir(), "forkd-wire-consumer-"));
});

afterAll(async () => {
  await daemon?.stop({ graceMs: 0 });
  await Promise.allSettled(connections.map((nc) => nc.close()));
  await Promise.allSettled([sim?.close(), server?.stop()]);
  if (workspace) await rm(workspace, { recursive: true, force: true });
  restoreEnv?.();
});

describe("the daemons' consumer under deploy/nats/accounts.conf", () => {
  it("a parent forks before any daemon runs, and cannot create or change the daemons' consumer", async () => {
    // The parent comes first: the streams are its to create, the consumer is not.
    const forks = await NatsForkSubagent.create(await connectAs("parent"));
    const fixture = await loadFixture("4k");
    const handle = forks.fork({
      prefix: createForkPrefix(fixture.request, fixture.response),
      directive: "Say done.\n@sim text 20",
      parent: { agent_id: "early-parent" },
    });
    await handle.published();
    const admin = await jetstreamManager(await connectAs("admin"));
    await expect(admin.consumers.info(subjects.streams.specs, subjects.specsConsumer)).rejects.toThrow(
      /consumer not found/,
    );

    const config = loadDaemonConfig({
      env: {},
      overrides: {
        daemonId: "wire-consumer-daemon",
        nats: { servers: [server.url], user: "daemon", pass: TEST_PASSWORDS.daemon },
        workspace,
      },
    });
    daemon = await startDaemon(config, {
      logger: createDaemonLogger({ level: "silent", format: "json", daemonId: config.daemonId }),
      llm: new AnthropicLlmClient({ baseURL: sim.url, apiKey: "sk-wire-consumer", retry: { maxRetries: 0 } }),
    });
    expect((await handle.result()).status).toBe("completed");

    // A hostile parent creates the daemons' consumer again with the config of its choice, by the
    // client's API and by both API subjects nats-server 2.9 answers.
    const before = (await admin.consumers.info(subjects.streams.specs, subjects.specsConsumer)).config;
    const hostile = await connectAs("parent");
    const hostileConfig = {
      durable_name: subjects.specsConsumer,
      ack_policy: AckPolicy.Explicit,
      max_ack_pending: 1,
      max_deliver: 1,
      ack_wait: 1_000_000_000,
    };
    await expect(
      (await jetstreamManager(hostile)).consumers.add(subjects.streams.specs, hostileConfig),
    ).rejects.toThrow(/Permissions Violation/);
    for (const subject of [
      `$JS.API.CONSUMER.CREATE.${subjects.streams.specs}.${subjects.specsConsumer}`,
      `$JS.API.CONSUMER.DURABLE.CREATE.${subjects.streams.specs}.${subjects.specsConsumer}`,
    ]) {
      await expect(
        hostile.request(
          subject,
          JSON.stringify({ stream_name: subjects.streams.specs, config: hostileConfig }),
        ),
      ).rejects.toThrow(/Permissions Violation/);
    }
    const after = (await admin.consumers.info(subjects.streams.specs, subjects.specsConsumer)).config;
    expect(after).toEqual(before);
    expect(after.max_deliver).toBe(config.maxDeliver);
    await forks.close();
  });
});
