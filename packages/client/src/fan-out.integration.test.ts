// A warm-first fan-out's specs against a real nats-server, no daemon: the leader's goes at once, the
// followers' only once the leader is claimed (its log's first event), each naming it as its
// cache_leader — with `wait_ms` only when it is not the default.
import { createForkPrefix } from "@forkd/core";
import { type ForkSpec, forkSpecCodec } from "@forkd/protocol";
import { loadFixture, type NatsServerHandle, startNatsServer, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsForkSubagent } from "./nats-fork-subagent.js";
import { publishAccepted } from "./test-support/claimed.js";

let server: NatsServerHandle;
let nc: NatsConnection;
let observer: NatsConnection;
let forks: NatsForkSubagent;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  observer = await connect({ servers: server.url });
  forks = await NatsForkSubagent.create(nc);
});

afterAll(async () => {
  await forks?.close();
  await observer?.close();
  await nc?.close();
  await server?.stop();
});

/** The specs published from now on, decoded, in order, and their `cache_leader` as sent. */
async function specsSeen(): Promise<{ specs: ForkSpec[]; sent: unknown[]; stop: () => void }> {
  const specs: ForkSpec[] = [];
  const sent: unknown[] = [];
  const subscription = observer.subscribe("agent.fork.*", {
    callback: (_error, message) => {
      specs.push(forkSpecCodec.decode(message.data));
      sent.push(message.json<{ cache_leader?: unknown }>().cache_leader);
    },
  });
  await observer.flush();
  return { specs, sent, stop: () => subscription.unsubscribe() };
}

/** What a daemon's claim leaves in the run's log first: its `accepted` event. */
const claim = (runId: string): Promise<void> => publishAccepted(forks.resources, runId);

describe("warm-first fan-out, parent side", () => {
  it("publishes the followers once the leader is claimed, naming it; wait_ms only when not the default", async () => {
    const fixture = await loadFixture("4k");
    const prefix = createForkPrefix(fixture.request, fixture.response);
    for (const warmTimeoutMs of [undefined, 5_000]) {
      const seen = await specsSeen();
      try {
        const handles = forks.fanOut(
          { prefix, parent: { agent_id: "parent-specs" } },
          [{ directive: "one" }, { directive: "two" }, { directive: "three" }],
          warmTimeoutMs === undefined ? {} : { warmTimeoutMs },
        );
        await handles[0]!.published();
        await nc.flush();
        await observer.flush();
        expect(seen.specs.map((spec) => spec.run_id)).toEqual([handles[0]!.runId]);
        expect(seen.specs[0]!.cache_leader).toBeUndefined();
        await claim(handles[0]!.runId);
        await Promise.all(handles.map((handle) => handle.published()));
        await waitFor(() => seen.specs.length === 3);
        const leader = handles[0]!.runId;
        for (const spec of seen.specs.slice(1))
          expect(spec.cache_leader).toEqual({ run_id: leader, wait_ms: warmTimeoutMs ?? 120_000 });
        // As sent: the default wait is left out of the bytes.
        expect(seen.sent.slice(1)).toEqual(
          Array(2).fill(
            warmTimeoutMs === undefined ? { run_id: leader } : { run_id: leader, wait_ms: warmTimeoutMs },
          ),
        );
      } finally {
        seen.stop();
      }
    }
  });

  it("without warm-first, every spec goes at once and names no leader", async () => {
    const fixture = await loadFixture("4k");
    const prefix = createForkPrefix(fixture.request, fixture.response);
    const seen = await specsSeen();
    try {
      const handles = forks.fanOut(
        { prefix, parent: { agent_id: "parent-all-at-once" } },
        [{ directive: "one" }, { directive: "two" }],
        { warmFirst: false },
      );
      await Promise.all(handles.map((handle) => handle.published()));
      await waitFor(() => seen.specs.length === 2);
      expect(seen.specs.map((spec) => spec.cache_leader)).toEqual([undefined, undefined]);
    } finally {
      seen.stop();
    }
  });
});
