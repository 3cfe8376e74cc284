// A provider's "slow down" shared by the daemons of one account: when the simulator answers one
// daemon's request with 429 and retry-after, another daemon's request for the same model waits for
// that time instead of being sent (and refused) at once.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import type { ForkPrefix } from "@forkd/protocol";
import { type Sim, startSim } from "@forkd/sim";
import { loadFixture } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DaemonProcess, spawnDaemon, stopDaemons } from "../harness/daemons.js";
import { useNatsServer } from "../harness/nats.js";

const nats = useNatsServer();
let sim: Sim;
let nc: NatsConnection;
let forks: NatsForkSubagent;
let workspace: string;
let prefix: ForkPrefix;
const daemons: DaemonProcess[] = [];

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "forkd-throttle-"));
  const fixture = await loadFixture("4k");
  prefix = createForkPrefix(fixture.request, fixture.response);
  sim = await startSim();
  nc = await connect({ servers: nats().url });
  forks = await NatsForkSubagent.create(nc);
  // One slot each: while the first run waits out its 429, the second can only go to the other daemon.
  for (const id of ["throttle-1", "throttle-2"]) {
    daemons.push(
      await spawnDaemon({
        id,
        natsUrls: [nats().url],
        simUrl: sim.url,
        workspace,
        concurrency: 1,
        extraEnv: { FORKD_LLM_MAX_RETRIES: "2" },
      }),
    );
  }
});

afterAll(async () => {
  await stopDaemons(daemons);
  await forks?.close();
  await nc?.close();
  await sim?.close();
  if (workspace) await rm(workspace, { recursive: true, force: true });
});

describe("a 429 with retry-after seen by one daemon", () => {
  it("holds the other daemon's request for the same model until the time it named", async () => {
    const refused = sim.next("request", { filter: (entry) => entry.status === 429 });
    const first = forks.fork({
      prefix,
      parent: { agent_id: "parent-throttle" },
      directive: "Refused once.\n@sim fault-once 429 retry-after=2\n@sim text 5",
    });
    const refusal = await refused;
    // The refused daemon has taken the 429 in (and told the others) once it logs its retry.
    const refusedDaemon = await Promise.race(
      daemons.map((daemon) =>
        daemon.waitForLog((line) => line.msg === "llm attempt failed; retrying").then(() => daemon),
      ),
    );
    const answered = sim.next("request", {
      filter: (entry) => entry.status === 200 && entry.body.includes("Held back."),
    });
    const second = forks.fork({
      prefix,
      parent: { agent_id: "parent-throttle" },
      directive: "Held back.\n@sim text 5",
    });
    const [firstOutcome, secondOutcome] = await Promise.all([first.result(), second.result()]);
    expect([firstOutcome.status, secondOutcome.status]).toEqual(["completed", "completed"]);
    const held = await answered;
    // Sent no earlier than the two seconds the provider named (less the time the notice took).
    expect(held.receivedAt - refusal.endedAt).toBeGreaterThanOrEqual(1_850);
    // And by the other daemon: the hold crossed daemons.
    const secondAccepted = (await forks.state(second.runId))?.daemon_id;
    expect(secondAccepted).not.toBe(refusedDaemon.id);
    // Nothing else was refused: the second daemon did not find out by a 429 of its own.
    expect(sim.requests().filter((entry) => entry.status === 429)).toHaveLength(1);
  });
});
