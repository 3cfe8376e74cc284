// A parent's `queued` registration against a real nats-server, no daemon: written a moment after the
// spec is stored (so that a free daemon's claim registers the run), and at once when this process asks
// for the run's state, controls it, or closes the subagent; not at all once the parent has heard one of
// the run's events (its claim registered it).
import { createForkPrefix } from "@forkd/core";
import { type RunState, runStateCodec } from "@forkd/protocol";
import { loadFixture, type NatsServerHandle, startNatsServer, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsForkSubagent } from "./nats-fork-subagent.js";
import { getRunState } from "./run-registry.js";
import { publishAccepted } from "./test-support/claimed.js";

let server: NatsServerHandle;
let nc: NatsConnection;
let observer: NatsConnection;
let prefix: ReturnType<typeof createForkPrefix>;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  observer = await connect({ servers: server.url });
  const fixture = await loadFixture("4k");
  prefix = createForkPrefix(fixture.request, fixture.response);
});

afterAll(async () => {
  await observer?.close();
  await nc?.close();
  await server?.stop();
});

/** Every registry write of `runId` from now on, decoded (a KV put is a message on its key's subject). */
async function registryWrites(forks: NatsForkSubagent, runId: string): Promise<RunState[]> {
  const writes: RunState[] = [];
  const bucket = forks.resources.subjects.buckets.runs;
  observer.subscribe(`$KV.${bucket}.${runId}`, {
    callback: (_error, message) => {
      if (message.data.length > 0) writes.push(runStateCodec.decode(message.data));
    },
  });
  await observer.flush();
  return writes;
}

describe("a parent's queued registration", () => {
  it("waits its moment, and is written at once when this process reads the run's state", async () => {
    const forks = await NatsForkSubagent.create(nc, { queuedRegistrationDelayMs: 60_000 });
    try {
      const runId = "deferred-state-1";
      const writes = await registryWrites(forks, runId);
      const handle = forks.fork({ runId, prefix, directive: "Wait.", parent: { agent_id: "parent-q" } });
      await handle.published();
      await observer.flush();
      expect(writes).toEqual([]);
      const state = await forks.state(runId);
      expect(state).toMatchObject({ status: "queued", parent_agent_id: "parent-q" });
      expect(state?.spec_seq).toBeGreaterThan(0);
      await observer.flush();
      expect(writes.map((write) => write.status)).toEqual(["queued"]);
    } finally {
      await forks.close();
    }
  });

  it("is written before an abort's flag, which lands on the parent's entry", async () => {
    const forks = await NatsForkSubagent.create(nc, { queuedRegistrationDelayMs: 60_000 });
    try {
      const runId = "deferred-abort-1";
      const writes = await registryWrites(forks, runId);
      const handle = forks.fork({ runId, prefix, directive: "Wait.", parent: { agent_id: "parent-q" } });
      await handle.published();
      await handle.abort("changed my mind");
      await observer.flush();
      expect(writes.map((write) => [write.status, write.abort?.reason])).toEqual([
        ["queued", undefined],
        ["queued", "changed my mind"],
      ]);
      expect(writes[1]).toMatchObject({ parent_agent_id: "parent-q", spec_seq: writes[0]!.spec_seq });
    } finally {
      await forks.close();
    }
  });

  it("is written when the subagent closes", async () => {
    const forks = await NatsForkSubagent.create(nc, { queuedRegistrationDelayMs: 60_000 });
    const runId = "deferred-close-1";
    const handle = forks.fork({ runId, prefix, directive: "Wait.", parent: { agent_id: "parent-q" } });
    await handle.published();
    expect(await getRunState(forks.resources, runId)).toBeNull();
    await forks.close();
    expect((await getRunState(forks.resources, runId))?.state.status).toBe("queued");
  });

  it("is written by itself after the default moment", async () => {
    const forks = await NatsForkSubagent.create(nc);
    try {
      const runId = "deferred-default-1";
      const handle = forks.fork({ runId, prefix, directive: "Wait.", parent: { agent_id: "parent-q" } });
      await handle.published();
      const entry = await waitFor(() => getRunState(forks.resources, runId));
      expect(entry.state.status).toBe("queued");
    } finally {
      await forks.close();
    }
  });

  it("is not written once the parent has heard one of the run's events, even when the subagent closes", async () => {
    const forks = await NatsForkSubagent.create(nc, { queuedRegistrationDelayMs: 60_000 });
    const runId = "deferred-heard-1";
    const writes = await registryWrites(forks, runId);
    const handle = forks.fork({ runId, prefix, directive: "Wait.", parent: { agent_id: "parent-q" } });
    const waiting = new AbortController();
    const outcome = handle.result({ signal: waiting.signal }).catch((error: unknown) => error);
    await handle.published();
    // A daemon's `accepted` (it publishes one only once its claim is stored), heard by result()'s hints:
    // the server sends it to `nc` before its PONG.
    await publishAccepted(forks.resources, runId);
    await nc.flush();
    await forks.close(); // writes every registration still waiting
    await observer.flush();
    expect(writes).toEqual([]);
    expect(await getRunState(forks.resources, runId)).toBeNull();
    waiting.abort("done");
    expect(await outcome).toBe("done");
  });

  it("is not made when the event is heard before the spec is stored", async () => {
    const forks = await NatsForkSubagent.create(nc, { queuedRegistrationDelayMs: 60_000 });
    // A warm-first follower's spec waits for its leader's claim, while result() already listens.
    const [leader, follower] = forks.fanOut({ prefix, parent: { agent_id: "parent-q" } }, [
      { directive: "one" },
      { directive: "two" },
    ]);
    const writes = await registryWrites(forks, follower!.runId);
    const waiting = new AbortController();
    const outcome = follower!.result({ signal: waiting.signal }).catch((error: unknown) => error);
    await leader!.published();
    await nc.flush(); // the follower's hint subscription is at the server
    await publishAccepted(forks.resources, follower!.runId);
    await nc.flush();
    await publishAccepted(forks.resources, leader!.runId); // releases the follower's spec
    await follower!.published();
    await forks.close();
    await observer.flush();
    expect(writes).toEqual([]);
    waiting.abort("done");
    expect(await outcome).toBe("done");
  });

  it("is written when nobody listens for the run's events, or none was heard", async () => {
    const forks = await NatsForkSubagent.create(nc, { queuedRegistrationDelayMs: 60_000 });
    const heard = forks.fork({ prefix, directive: "Wait.", parent: { agent_id: "parent-q" } });
    const unheard = forks.fork({ prefix, directive: "Wait.", parent: { agent_id: "parent-q" } });
    const waiting = new AbortController();
    const outcome = heard.result({ signal: waiting.signal }).catch((error: unknown) => error);
    await Promise.all([heard.published(), unheard.published()]);
    await publishAccepted(forks.resources, unheard.runId); // nobody waits on it: no hint
    await nc.flush();
    await forks.close();
    expect((await getRunState(forks.resources, heard.runId))?.state.status).toBe("queued");
    expect((await getRunState(forks.resources, unheard.runId))?.state.status).toBe("queued");
    waiting.abort("done");
    expect(await outcome).toBe("done");
  });
});
