// Retention on nats-server 2.9 (docs/operations.md, "Retention"): the daemon holding the retention
// lease removes a finished run's registry entry, parent index key and events once it has been
// finished for the window; a running or queued run is never touched, however old; the lease moves to
// another daemon when its holder stops.
import { type NatsForkHandle, parentIndexKey, readRetentionLease } from "@forkd/client";
import { readStoredEvents } from "@forkd/client/internal";
import { createForkPrefix } from "@forkd/core";
import { loadFixture, waitFor } from "@forkd/testing";
import { describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";

const RETENTION_MS = 1_500;
const stack = useForkdStack({
  daemons: ["keeper-a", "keeper-b"],
  daemonConfig: { retentionMs: RETENTION_MS, concurrency: 1 },
});

describe("retention of finished runs", () => {
  it("removes a finished run's entry, index key and events after the window and leaves live runs whole", async () => {
    const { forks } = stack();
    const fixture = await loadFixture("4k");
    const prefix = createForkPrefix(fixture.request, fixture.response);
    const parent = { agent_id: "retention-parent" };

    const finished = forks.fork({ prefix, directive: "Quick one.\n@sim text 5", parent });
    expect((await finished.result()).status).toBe("completed");
    expect(await forks.resources.runs.get(parentIndexKey(parent.agent_id, finished.runId))).not.toBeNull();
    expect((await readStoredEvents(forks.resources, finished.runId)).length).toBeGreaterThan(2);

    // Two runs that hold both daemons' only slots (their model never answers) and one queued behind them.
    const running: NatsForkHandle[] = [
      forks.fork({ prefix, directive: "Hang.\n@sim ttft 600000", parent }),
      forks.fork({ prefix, directive: "Hang too.\n@sim ttft 600000", parent }),
    ];
    await waitFor(async () => {
      const states = await Promise.all(running.map((run) => forks.state(run.runId)));
      return states.every((state) => state?.status === "running");
    });
    const queued = forks.fork({ prefix, directive: "Wait in line.\n@sim text 5", parent });
    await waitFor(async () => (await forks.state(queued.runId))?.status === "queued");
    const liveSince = Date.now();

    await waitFor(async () => (await forks.resources.runs.get(finished.runId)) === null, {
      timeoutMs: 20_000,
    });
    expect(await forks.resources.runs.get(parentIndexKey(parent.agent_id, finished.runId))).toBeNull();
    expect(await readStoredEvents(forks.resources, finished.runId)).toEqual([]);

    // A sweep that began a whole window after the live runs were last written has passed over them.
    await waitFor(
      async () =>
        ((await readRetentionLease(forks.resources))?.last_sweep?.at ?? 0) > liveSince + RETENTION_MS,
      { timeoutMs: 20_000 },
    );
    for (const run of [...running, queued]) {
      expect(await forks.resources.runs.get(run.runId)).not.toBeNull();
      expect(await forks.resources.runs.get(parentIndexKey(parent.agent_id, run.runId))).not.toBeNull();
    }
    for (const run of running) {
      const events = await readStoredEvents(forks.resources, run.runId);
      expect(events.map((logged) => logged.event.type)).toContain("started");
    }
    expect((await forks.state(queued.runId))?.status).toBe("queued");

    for (const run of running) await run.abort("test over");
    await queued.abort("test over");
    await Promise.all([...running, queued].map((run) => run.result()));
  });

  it("hands the lease to another daemon when its holder stops", async () => {
    const { forks, daemons } = stack();
    const lease = await waitFor(async () => readRetentionLease(forks.resources));
    expect(lease.retention_ms).toBe(RETENTION_MS);
    const holder = daemons.find((daemon) => daemon.daemon.id === lease.holder)!;
    const other = daemons.find((daemon) => daemon !== holder)!;
    await holder.stop({ graceMs: 0 });
    const next = await waitFor(async () => {
      const current = await readRetentionLease(forks.resources);
      return current?.holder === other.daemon.id ? current : undefined;
    });
    expect(next.holder).toBe(other.daemon.id);
  });
});
