// Findings 10 and 14 of issue #11: nothing bounded storage, and a full JetStream left a run with no
// terminal event and its spec stuck in the queue. Every stream, bucket and object store now has
// limits, and a write JetStream has no room for is a typed, visible outcome.
import { ClientError, ensureForkResources, NatsForkSubagent } from "@forkd/client";
import { readStoredEvents } from "@forkd/client/internal";
import { waitFor } from "@forkd/testing";
import { describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";

const stack = useForkdStack();
const nanos = (ms: number) => ms * 1_000_000;

describe("storage limits", () => {
  it("every stream, bucket and object store forkd makes has an age and a size limit", async () => {
    const { nc } = stack();
    const resources = await ensureForkResources(nc, { prefix: "limits" });
    const { options, jsm, subjects } = resources;
    const config = async (stream: string) => (await jsm.streams.info(stream)).config;
    expect(await config(subjects.streams.specs)).toMatchObject({
      max_age: nanos(options.specsMaxAgeMs),
      max_bytes: options.specsMaxBytes,
      discard: "new",
      max_msgs_per_subject: 1,
    });
    expect(await config(subjects.streams.events)).toMatchObject({
      max_age: nanos(options.eventsMaxAgeMs),
      max_bytes: options.eventsMaxBytes,
      discard: "old",
    });
    expect(await config(`KV_${subjects.buckets.runs}`)).toMatchObject({
      max_age: nanos(options.runsTtlMs),
      max_bytes: options.runsMaxBytes,
    });
    expect((await config(`KV_${subjects.buckets.daemons}`)).max_age).toBe(nanos(options.daemonTtlMs));
    expect(await config(`OBJ_${subjects.buckets.prefixes}`)).toMatchObject({
      max_age: nanos(options.prefixesTtlMs),
      max_bytes: options.prefixesMaxBytes,
    });
  });

  it("a full specs stream refuses a spec with a typed error; nothing is queued", async () => {
    const { nc } = stack();
    const parent = await NatsForkSubagent.create(nc, { prefix: "fullspecs", specsMaxBytes: 4_096 });
    try {
      const fits = parent.fork({ prefix: null, directive: "x".repeat(1_000), parent: { agent_id: "p" } });
      await fits.published();
      const over = parent.fork({ prefix: null, directive: "x".repeat(3_500), parent: { agent_id: "p" } });
      const refused = await over.published().catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ClientError);
      expect((refused as ClientError).code).toBe("spec_refused");
      const info = await parent.resources.jsm.streams.info(parent.resources.subjects.streams.specs);
      expect(info.state.messages).toBe(1);
    } finally {
      await parent.close();
    }
  });

  it("a claim JetStream has no room for fails the run visibly and takes its spec out of the queue", async () => {
    const { nc, startDaemon } = stack();
    const parent = await NatsForkSubagent.create(nc, { prefix: "fullruns", runsMaxBytes: 4_096 });
    try {
      // Fill the run registry to its limit.
      for (let i = 0; ; i++) {
        const stored = await parent.resources.runs.put(`filler-${i}`, new Uint8Array(200)).then(
          () => true,
          () => false,
        );
        if (!stored) break;
      }
      await startDaemon("fullruns-daemon", { prefix: "fullruns" });
      const handle = parent.fork({ prefix: null, directive: "Go.", parent: { agent_id: "p" } });
      const outcome = await handle.result();
      expect(outcome.status).toBe("failed");
      expect(outcome.status === "failed" && outcome.error.code).toBe("storage_full");
      const log = await readStoredEvents(parent.resources, handle.runId);
      expect(log.map((stored) => stored.event.type)).toEqual(["failed"]);
      await waitFor(
        async () =>
          (await parent.resources.jsm.streams.info(parent.resources.subjects.streams.specs)).state
            .messages === 0,
      );
    } finally {
      await parent.close();
    }
  });
});
