// The chaos run's short form, in CI: faults mixed at random for 40 s over a real three-node cluster
// and daemon processes (test/chaos/run-chaos.ts), then every accepted run must have ended and the
// checker must find nothing in the logs and the tool ledger. `pnpm chaos --minutes N` is the long form.
import { describe, expect, it } from "vitest";
import { runChaos } from "../chaos/run-chaos.js";

describe("a chaos run", () => {
  it("leaves every accepted run ended, with a sound log, each tool run once", async () => {
    const report = await runChaos({ durationMs: 40_000, seed: 1 });
    console.info(`chaos: ${JSON.stringify(report)}`);
    expect(report.violations).toEqual([]);
    expect(report.outcomes.not_ended).toBeUndefined();
    expect(report.forks.accepted).toBeGreaterThan(20);
    expect(Object.values(report.faults).reduce((sum, count) => sum + count, 0)).toBeGreaterThan(5);
  }, 300_000);
});
