import { describe, expect, it } from "vitest";
import { StorageHealth, type StorageTransition } from "./storage-health.js";

describe("StorageHealth", () => {
  it("is available until a failure, and counts from the first failure, not the last", () => {
    const health = new StorageHealth();
    expect(health.available).toBe(true);
    expect(health.unavailableForMs(1_000)).toBe(0);
    health.failed(1_000, new Error("timeout"));
    health.failed(3_000, new Error("timeout"));
    expect(health.available).toBe(false);
    expect(health.unavailableForMs(6_000)).toBe(5_000);
  });

  it("reports each transition once, with how long storage was gone", () => {
    const transitions: StorageTransition[] = [];
    const health = new StorageHealth((transition) => transitions.push(transition));
    health.succeeded(500);
    const cause = new Error("no quorum");
    health.failed(1_000, cause);
    health.failed(1_500, new Error("again"));
    health.succeeded(4_000);
    health.succeeded(4_100);
    expect(transitions).toEqual([
      { kind: "unavailable", since: 1_000, error: cause },
      { kind: "available", unavailableForMs: 3_000 },
    ]);
    expect(health.available).toBe(true);
    expect(health.unavailableForMs(9_000)).toBe(0);
  });
});
