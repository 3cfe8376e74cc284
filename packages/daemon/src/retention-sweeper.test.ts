import { describe, expect, it } from "vitest";
import { sweepIntervalMs } from "./retention-sweeper.js";

describe("sweepIntervalMs", () => {
  it("is a tenth of the window", () => {
    expect(sweepIntervalMs(30_000, 30_000)).toBe(3_000);
  });

  it("renews the lease well inside the daemons bucket's TTL, however long the window", () => {
    expect(sweepIntervalMs(6 * 60 * 60 * 1000, 30_000)).toBe(10_000);
  });

  it("ticks at most once a second", () => {
    expect(sweepIntervalMs(1_000, 30_000)).toBe(1_000);
    expect(sweepIntervalMs(5_000, 900)).toBe(1_000);
  });
});
