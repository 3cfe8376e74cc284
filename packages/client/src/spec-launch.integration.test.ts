// When a fork's spec goes out, against a real nats-server: with nothing to wait for, in the first
// microtask after fork() returns — before the subscription of a result() called at once is written, so
// both leave in one write — and after the prefix's upload when the spec refers to one not yet stored.
import { createForkPrefix } from "@forkd/core";
import type { ForkPrefix } from "@forkd/protocol";
import { loadFixture, type NatsServerHandle, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsForkSubagent } from "./nats-fork-subagent.js";

let server: NatsServerHandle;
let nc: NatsConnection;
let prefix: ForkPrefix;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  const fixture = await loadFixture("4k");
  prefix = createForkPrefix(fixture.request, fixture.response);
});

afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

/** The subjects `forks` has called JetStream's publish on so far (the real publish still runs). */
function recordPublishes(forks: NatsForkSubagent): string[] {
  const subjects: string[] = [];
  const js = forks.resources.js;
  const publish = js.publish.bind(js);
  js.publish = (subject, ...rest) => {
    subjects.push(subject);
    return publish(subject, ...rest);
  };
  return subjects;
}

const parent = { agent_id: "parent-launch" };

describe("a fork's spec launch", () => {
  it("publishes an inline spec in the first microtask after fork() returns", async () => {
    const forks = await NatsForkSubagent.create(nc, { prefixTransport: "inline" });
    try {
      const published = recordPublishes(forks);
      const handle = forks.fork({ prefix, directive: "Inline.", parent });
      expect(published).toEqual([]);
      await Promise.resolve();
      expect(published).toEqual([forks.resources.subjects.spec(handle.runId)]);
      await handle.published();
    } finally {
      await forks.close();
    }
  });

  it("waits for the upload of a prefix by reference, and not once it is stored", async () => {
    const forks = await NatsForkSubagent.create(nc, { prefixTransport: "ref" });
    try {
      const published = recordPublishes(forks);
      const first = forks.fork({ prefix, directive: "First by reference.", parent });
      await Promise.resolve();
      expect(published).not.toContain(forks.resources.subjects.spec(first.runId));
      await first.published();
      expect(published).toContain(forks.resources.subjects.spec(first.runId));

      const second = forks.fork({ prefix, directive: "Second by reference.", parent });
      await Promise.resolve();
      expect(published.at(-1)).toBe(forks.resources.subjects.spec(second.runId));
      await second.published();
    } finally {
      await forks.close();
    }
  });
});
