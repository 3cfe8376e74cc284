import { describe, expect, it } from "vitest";
import { MAX_RECENT_CONTROLS, RECENT_CONTROL_TTL_MS, RecentControls } from "./recent-controls.js";

const abort = (reason: string) => ({ reason, proof: "p".repeat(64) });

describe("RecentControls", () => {
  it("hands a run its controls once, in the order heard", () => {
    const controls = new RecentControls(() => 0);
    controls.remember("run-1", abort("first"));
    controls.remember("run-1", { ...abort("then stop"), mode: "stop" as const });
    controls.remember("run-2", abort("other"));
    expect(controls.take("run-1").map((claim) => claim.reason)).toEqual(["first", "then stop"]);
    expect(controls.take("run-1")).toEqual([]);
    expect(controls.take("run-2")).toHaveLength(1);
  });

  it("keeps a control exactly as long as its time to live, not a millisecond more", () => {
    let now = 1_000;
    const controls = new RecentControls(() => now);
    controls.remember("kept", abort("a"));
    controls.remember("late", abort("b"));
    now += RECENT_CONTROL_TTL_MS;
    expect(controls.take("kept")).toHaveLength(1);
    now += 1;
    expect(controls.take("late")).toEqual([]);
  });

  it("forgets old controls as new ones come, keeping those exactly at their time to live", () => {
    let now = 0;
    const controls = new RecentControls(() => now);
    controls.remember("old", abort("a"));
    now = 1;
    controls.remember("younger", abort("b"));
    now = RECENT_CONTROL_TTL_MS + 1;
    controls.remember("new", abort("c"));
    expect(controls.size).toBe(2);
    expect(controls.take("younger")).toHaveLength(1);
  });

  it("holds at most MAX_RECENT_CONTROLS runs, dropping the oldest, and 4 controls a run", () => {
    const controls = new RecentControls(() => 0);
    for (let i = 0; i <= MAX_RECENT_CONTROLS; i++) controls.remember(`run-${i}`, abort("flood"));
    expect(controls.size).toBe(MAX_RECENT_CONTROLS);
    expect(controls.take("run-0")).toEqual([]);
    expect(controls.take("run-1")).toHaveLength(1);
    for (let i = 0; i < 10; i++) controls.remember("busy", abort(`${i}`));
    expect(controls.take("busy")).toHaveLength(4);
  });

  it("lends a run's controls for one put-back only, and keeps them for its claim", () => {
    const controls = new RecentControls(() => 0);
    expect(controls.deferOnce("unknown")).toEqual([]);
    controls.remember("run-1", abort("owner"));
    expect(controls.deferOnce("run-1").map((claim) => claim.reason)).toEqual(["owner"]);
    // Put back once: the next delivery starts the run, which then takes the same controls.
    expect(controls.deferOnce("run-1")).toEqual([]);
    expect(controls.take("run-1").map((claim) => claim.reason)).toEqual(["owner"]);
  });

  it("lends no control older than its time to live for a put-back", () => {
    let now = 1_000;
    const controls = new RecentControls(() => now);
    controls.remember("kept", abort("a"));
    controls.remember("late", abort("b"));
    now += RECENT_CONTROL_TTL_MS;
    expect(controls.deferOnce("kept")).toHaveLength(1);
    now += 1;
    expect(controls.deferOnce("late")).toEqual([]);
  });
});
