// Warm-first followers held by their daemons: with fewer slots than children, the followers claimed
// during the leader's time to first token wait for its response, the others run when a slot frees,
// and every one reads the cache entry the leader wrote; a group abort ends held and queued followers
// without a single request of theirs reaching the provider.
import { createForkPrefix } from "@forkd/core";
import { loadFixture, waitFor } from "@forkd/testing";
import { describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";

// One daemon, two slots: the leader and one follower at a time.
const stack = useForkdStack({
  daemons: ["held-a"],
  sim: { latency: { ttftMs: 150 } },
  daemonConfig: { concurrency: 2 },
});

describe("warm-first followers on a daemon with fewer slots than children", () => {
  it("every follower reads the leader's cache entry, those queued behind the held one too", async () => {
    const { forks, sim } = stack();
    const fixture = await loadFixture("4k");
    const prefix = createForkPrefix(fixture.request, fixture.response);
    const before = sim.requests().length;
    const handles = forks.fanOut(
      { prefix, parent: { agent_id: "parent-held" } },
      Array.from({ length: 5 }, (_, i) => ({ directive: `Held child ${i + 1}: one line.` })),
    );
    const outcomes = await Promise.all(handles.map((handle) => handle.result()));
    expect(outcomes.map((o) => o.status)).toEqual(Array(5).fill("completed"));
    const usages = sim
      .requests()
      .slice(before)
      .map((entry) => entry.usage!);
    expect(usages).toHaveLength(5);
    const [leader, ...followers] = usages;
    expect(leader!.cache_creation_input_tokens).toBeGreaterThan(0);
    const entry = leader!.cache_read_input_tokens! + leader!.cache_creation_input_tokens!;
    for (const usage of followers) {
      expect(usage.cache_read_input_tokens).toBe(entry);
      expect(usage.cache_creation_input_tokens).toBe(0);
    }
  });

  it("a group abort ends the held and the queued followers; none of them reaches the provider", async () => {
    const { forks, sim } = stack();
    const fixture = await loadFixture("4k");
    const prefix = createForkPrefix(fixture.request, fixture.response);
    const group = forks.group();
    const handles = group.fanOut({ prefix, parent: { agent_id: "parent-held-abort" } }, [
      // The leader's response does not begin within the test: its followers stay held.
      { directive: "Leader: think long.\n@sim ttft 60000" },
      ...Array.from({ length: 4 }, (_, i) => ({ directive: `Follower ${i + 1}: one line.` })),
    ]);
    const before = sim.requests().length;
    // The held follower is claimed (one slot is the leader's, the other its); the rest stay queued.
    const held = handles.slice(1);
    await waitFor(
      async () =>
        (await Promise.all(held.map((handle) => forks.state(handle.runId)))).some(
          (state) => state?.status === "running",
        ),
      { message: "a follower claimed and held" },
    );
    await group.abort("the user pressed Esc");
    const outcomes = await Promise.all(handles.map((handle) => handle.result()));
    expect(outcomes.map((o) => o.status)).toEqual(Array(5).fill("killed"));
    // Only the leader's request was ever sent (before this test's count began, or just after).
    const followerRequests = sim
      .requests()
      .slice(before)
      .filter((entry) => String(entry.body).includes("Follower "));
    expect(followerRequests).toEqual([]);
  });
});
