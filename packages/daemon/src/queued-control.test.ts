import { describe, expect, it } from "vitest";
import {
  MAX_SPEC_OWNERS,
  MAX_SPEC_READS_IN_FLIGHT,
  SPEC_OWNER_TTL_MS,
  SpecOwners,
  type StoredOwnership,
} from "./queued-control.js";

/** A stored spec's owner as the reader would find it. */
function ownership(runId: string, seq = 1): StoredOwnership {
  return { spec: { v: 1, run_id: runId, owner_token: `token-${runId}` } as StoredOwnership["spec"], seq };
}

/** A reader whose reads end when the test says, counting the reads it was asked for. */
function heldReader() {
  const pending: { runId: string; finish: (value: StoredOwnership | null) => void }[] = [];
  let reads = 0;
  const read = (runId: string) =>
    new Promise<StoredOwnership | null>((finish) => {
      reads++;
      pending.push({ runId, finish });
    });
  return {
    read,
    pending,
    reads: () => reads,
    finishOldest: () => {
      const next = pending.shift()!;
      next.finish(ownership(next.runId));
    },
  };
}

/** Lets every promise callback that is ready run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("SpecOwners", () => {
  it("answers for a run's owner up to exactly SPEC_OWNER_TTL_MS after the read, then no longer", async () => {
    let now = 1_000;
    const owners = new SpecOwners(
      async (runId) => ownership(runId),
      () => now,
    );
    const read = owners.read("run-a");
    expect(owners.recent("run-a")).toBe(read);
    now += SPEC_OWNER_TTL_MS;
    expect(await owners.recent("run-a")).toEqual(ownership("run-a"));
    now += 1;
    expect(owners.recent("run-a")).toBeUndefined();
    expect(owners.recent("run-never-read")).toBeUndefined();
  });

  it("shares a read in flight with the controls that come before it ends", async () => {
    const reader = heldReader();
    const owners = new SpecOwners(reader.read);
    const first = owners.read("run-a");
    expect(owners.recent("run-a")).toBe(first);
    await settle();
    expect(reader.reads()).toBe(1);
    reader.finishOldest();
    expect(await first).toEqual(ownership("run-a"));
  });

  it(`has at most ${MAX_SPEC_READS_IN_FLIGHT} reads in flight; the next starts as one ends`, async () => {
    const reader = heldReader();
    const owners = new SpecOwners(reader.read);
    const reads = Array.from({ length: MAX_SPEC_READS_IN_FLIGHT + 2 }, (_, i) => owners.read(`run-${i}`));
    await settle();
    expect(reader.reads()).toBe(MAX_SPEC_READS_IN_FLIGHT);
    reader.finishOldest();
    await settle();
    expect(reader.reads()).toBe(MAX_SPEC_READS_IN_FLIGHT + 1);
    expect(reader.pending.map((p) => p.runId)).toEqual(["run-1", "run-2", "run-3", "run-4"]);
    while (reader.pending.length > 0) {
      reader.finishOldest();
      await settle();
    }
    expect(reader.reads()).toBe(MAX_SPEC_READS_IN_FLIGHT + 2);
    expect((await Promise.all(reads)).map((o) => o?.spec.run_id)).toEqual(
      Array.from({ length: MAX_SPEC_READS_IN_FLIGHT + 2 }, (_, i) => `run-${i}`),
    );
    // Every place was handed back: as many reads as the limit start at once again.
    for (let i = 0; i <= MAX_SPEC_READS_IN_FLIGHT; i++) owners.read(`again-${i}`);
    await settle();
    expect(reader.reads()).toBe(2 * MAX_SPEC_READS_IN_FLIGHT + 2);
  });

  it(`lets ${MAX_SPEC_OWNERS} reads wait for a place, and answers the next at once with none stored`, async () => {
    const reader = heldReader();
    const owners = new SpecOwners(reader.read);
    for (let i = 0; i < MAX_SPEC_READS_IN_FLIGHT + MAX_SPEC_OWNERS; i++) void owners.read(`run-${i}`);
    await settle();
    expect(await owners.read("one-too-many")).toBeNull();
    expect(reader.reads()).toBe(MAX_SPEC_READS_IN_FLIGHT);
    reader.finishOldest();
    await settle();
    // The first waiting read took the place, not the one refused.
    expect(reader.pending.at(-1)?.runId).toBe(`run-${MAX_SPEC_READS_IN_FLIGHT}`);
  });

  it(`keeps the owners of the last ${MAX_SPEC_OWNERS} runs read, dropping the oldest first`, async () => {
    const owners = new SpecOwners(
      async (runId) => ownership(runId),
      () => 0,
    );
    for (let i = 0; i < MAX_SPEC_OWNERS; i++) owners.read(`run-${i}`);
    expect(owners.recent("run-0")).toBeDefined();
    owners.read("run-next");
    expect(owners.recent("run-0")).toBeUndefined();
    expect(owners.recent("run-1")).toBeDefined();
    expect(owners.recent("run-next")).toBeDefined();
  });

  it("counts a run read again as read last: the size limit drops runs read before it", async () => {
    const owners = new SpecOwners(
      async (runId) => ownership(runId),
      () => 0,
    );
    owners.read("run-a");
    owners.read("run-b");
    owners.read("run-a");
    for (let i = 0; i < MAX_SPEC_OWNERS - 1; i++) owners.read(`other-${i}`);
    expect(owners.recent("run-b")).toBeUndefined();
    expect(owners.recent("run-a")).toBeDefined();
  });

  it("drops owners read longer ago than SPEC_OWNER_TTL_MS at the next read, and reads a run again anew", async () => {
    let now = 0;
    let reads = 0;
    const owners = new SpecOwners(
      async (runId) => {
        reads++;
        return ownership(runId, reads);
      },
      () => now,
    );
    await owners.read("run-a");
    now = SPEC_OWNER_TTL_MS;
    await owners.read("run-b");
    expect(owners.recent("run-a")).toBeDefined();
    now = SPEC_OWNER_TTL_MS + 1;
    expect((await owners.read("run-a"))?.seq).toBe(3);
    expect((await owners.recent("run-a"))?.seq).toBe(3);
  });
});
