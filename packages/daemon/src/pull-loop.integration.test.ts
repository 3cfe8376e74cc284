// The daemon's pull loop against a real nats-server that stops answering for a moment (SIGSTOP): a
// pull request that heard nothing, not even its idle heartbeats, is asked again at once — specs may be
// waiting for this daemon's slots alone — and is not a failure logged and waited out; a consumer
// lookup that fails as the daemon starts is retried, not the end of its pulling.
import { readFileSync } from "node:fs";
import { Writable } from "node:stream";
import { NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import { AnthropicLlmClient } from "@forkd/llm";
import { daemonPresenceCodec, forkSubjects } from "@forkd/protocol";
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
  daemon = await startPuller("puller", lines);
});

/** A daemon with two slots whose JSON log lines go to `destination`. */
function startPuller(daemonId: string, destination: Writable): Promise<RunningDaemon> {
  const config = loadDaemonConfig({
    env: {},
    overrides: { daemonId, nats: { servers: [server.url] }, concurrency: 2 },
  });
  return startDaemon(config, {
    logger: createDaemonLogger({ level: "debug", format: "json", daemonId, destination }),
    llm: new AnthropicLlmClient({ baseURL: sim.url, apiKey: "sk-test-puller", retry: { maxRetries: 0 } }),
  });
}

/** Forks the 4k fixture and returns the id of the daemon that completed it. */
async function forkAndRun(agentId: string): Promise<string | undefined> {
  const fixture = await loadFixture("4k");
  const handle = forks.fork({
    prefix: createForkPrefix(fixture.request, fixture.response),
    directive: "Answer in one line.",
    parent: { agent_id: agentId },
  });
  const outcome = await handle.result();
  expect(outcome.status).toBe("completed");
  return (await forks.state(handle.runId))?.daemon_id;
}

afterAll(async () => {
  if (paused && server?.pid !== undefined) process.kill(server.pid, "SIGCONT");
  await daemon?.stop({ graceMs: 0 }).catch(() => undefined);
  await forks?.close();
  await nc?.close();
  await sim?.close();
  await server?.stop();
});

/**
 * SIGSTOPs the server and returns once it is stopped. The signal takes effect when the kernel next
 * interrupts each of its threads, which on a virtual machine may come after this process has written
 * its next request and the server has answered it; /proc says when it has (state `T`).
 */
function stopServerNow(): void {
  const pid = server.pid!;
  process.kill(pid, "SIGSTOP");
  paused = true;
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    // `pid (comm) S …`: the state follows the command's closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("T")) return;
  }
  throw new Error(`nats-server ${pid} did not stop within 5 s of SIGSTOP`);
}

const lostRequests = () =>
  logged.filter((line) => line.msg === "a pull request went unanswered; pulling again");
const failedPulls = () => logged.filter((line) => line.msg === "pulling specs failed; retrying");

it("asks again at once for a pull request that went unanswered, and runs the next spec", async () => {
  expect(server.pid).toBeDefined();
  // Stopped while a pull request is open, not while the daemon still looks its consumer up (a slow
  // start): the daemon beats after each request, saying how long it stays open.
  const beats = nc.subscribe(forkSubjects().presence("puller"));
  for await (const beat of beats) {
    if ((daemonPresenceCodec.decode(beat.data).pull_ms ?? 0) > 0) break;
  }
  beats.unsubscribe();
  stopServerNow();
  // Two heartbeat intervals without a byte from the server: nats.js ends the fetch.
  await waitFor(() => lostRequests().length > 0, { timeoutMs: 10_000 });
  process.kill(server.pid!, "SIGCONT");
  paused = false;
  expect(lostRequests()[0]?.level).toBe(20); // debug: nothing failed
  expect(failedPulls()).toEqual([]);
  expect(await forkAndRun("parent-pull")).toBe("puller");
});

it("keeps pulling when its consumer lookup fails as it starts: the next spec runs on it", async () => {
  await daemon?.stop({ graceMs: 0 });
  daemon = undefined;
  const lookupFailed: string[] = [];
  // The server is stopped as the daemon says it runs: its pull loop has just asked for the consumer
  // lookup, not yet written to the socket, so no answer can come before the request times out.
  const lines = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) {
        if (line === "") continue;
        const { msg } = JSON.parse(line) as { msg: string };
        if (msg === "daemon running" && !paused) stopServerNow();
        if (msg === "pulling specs failed; retrying") lookupFailed.push(msg);
      }
      done();
    },
  });
  daemon = await startPuller("late-puller", lines);
  expect(paused).toBe(true);
  await waitFor(() => lookupFailed.length > 0, { timeoutMs: 15_000 });
  process.kill(server.pid!, "SIGCONT");
  paused = false;
  expect(await forkAndRun("parent-late-pull")).toBe("late-puller");
});
