// The daemon's pull loop against a real nats-server that stops answering for a moment (SIGSTOP): a
// pull request that heard nothing, not even its idle heartbeats, is asked again at once — specs may be
// waiting for this daemon's slots alone — and is not a failure logged and waited out.
import { Writable } from "node:stream";
import { NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import { AnthropicLlmClient } from "@forkd/llm";
import { type Sim, startSim } from "@forkd/sim";
import { loadFixture, type NatsServerHandle, startNatsServer, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadDaemonConfig } from "./config.js";
import { createDaemonLogger } from "./logger.js";
import { type RunningDaemon, startDaemon } from "./run-daemon.js";

let server: NatsServerHandle;
let sim: Sim;
let nc: NatsConnection;
let forks: NatsForkSubagent;
let daemon: RunningDaemon | undefined;
let paused = false;
const logged: { level: number; msg: string }[] = [];

beforeAll(async () => {
  server = await startNatsServer();
  sim = await startSim({ port: 0 });
  nc = await connect({ servers: server.url });
  forks = await NatsForkSubagent.create(nc);
  const lines = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line !== "") logged.push(JSON.parse(line));
      done();
    },
  });
  const config = loadDaemonConfig({
    env: {},
    overrides: { daemonId: "puller", nats: { servers: [server.url] }, concurrency: 2 },
  });
  daemon = await startDaemon(config, {
    logger: createDaemonLogger({ level: "debug", format: "json", daemonId: "puller", destination: lines }),
    llm: new AnthropicLlmClient({ baseURL: sim.url, apiKey: "sk-test-puller", retry: { maxRetries: 0 } }),
  });
});

afterAll(async () => {
  if (paused && server?.pid !== undefined) process.kill(server.pid, "SIGCONT");
  await daemon?.stop({ graceMs: 0 }).catch(() => undefined);
  await forks?.close();
  await nc?.close();
  await sim?.close();
  await server?.stop();
});

const lostRequests = () =>
  logged.filter((line) => line.msg === "a pull request went unanswered; pulling again");
const failedPulls = () => logged.filter((line) => line.msg === "pulling specs failed; retrying");

it("asks again at once for a pull request that went unanswered, and runs the next spec", async () => {
  expect(server.pid).toBeDefined();
  process.kill(server.pid!, "SIGSTOP");
  paused = true;
  // Two heartbeat intervals without a byte from the server: nats.js ends the fetch.
  await waitFor(() => lostRequests().length > 0, { timeoutMs: 10_000 });
  process.kill(server.pid!, "SIGCONT");
  paused = false;
  expect(lostRequests()[0]?.level).toBe(20); // debug: nothing failed
  expect(failedPulls()).toEqual([]);

  const fixture = await loadFixture("4k");
  const handle = forks.fork({
    prefix: createForkPrefix(fixture.request, fixture.response),
    directive: "Answer in one line.",
    parent: { agent_id: "parent-pull" },
  });
  const outcome = await handle.result();
  expect(outcome.status).toBe("completed");
  expect((await forks.state(handle.runId))?.daemon_id).toBe("puller");
});
