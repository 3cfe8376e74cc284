import { describe, expect, it } from "vitest";
import { useFaultDaemons, useFaultParent } from "../harness/fault-parent.js";

const stack = useFaultParent("throttle");
// One slot each: while the first run waits out its 429, the second can only go to the other daemon.
const daemons = useFaultDaemons(stack, ["throttle-1", "throttle-2"], {
  concurrency: 1,
  extraEnv: { FORKD_LLM_MAX_RETRIES: "2" },
});

describe("a 429 with retry-after seen by one daemon", () => {
  it("holds the other daemon's request for the same model until the time it named", async () => {
    const refused = stack().sim.next("request", { filter: (entry) => entry.status === 429 });
    const first = stack().forks.fork({
      prefix: stack().prefix,
      parent: { agent_id: "parent-throttle" },
      directive: "Refused once.\n@sim fault-once 429 retry-after=2\n@sim text 5",
    });
    const refusal = await refused;
    // The refused daemon has taken the 429 in (and told the others) once it logs its retry.
    const refusedDaemon = await Promise.race(
      daemons.map((daemon) =>
        daemon.waitForLog((line) => line.msg === "llm attempt failed; retrying").then(() => daemon),
      ),
    );
    const answered = stack().sim.next("request", {
      filter: (entry) => entry.status === 200 && entry.body.includes("Held back."),
    });
    const second = stack().forks.fork({
      prefix: stack().prefix,
      parent: { agent_id: "parent-throttle" },
      directive: "Held back.\n@sim text 5",
    });
    const [firstOutcome, secondOutcome] = await Promise.all([first.result(), second.result()]);
    expect([firstOutcome.status, secondOutcome.status]).toEqual(["completed", "completed"]);
    const held = await answered;
    // Sent no earlier than the two seconds the provider named (less the time the notice took).
    expect(held.receivedAt - refusal.endedAt).toBeGreaterThanOrEqual(1_850);
    // And by the other daemon: the hold crossed daemons.
    const secondAccepted = (await stack().forks.state(second.runId))?.daemon_id;
    expect(secondAccepted).not.toBe(refusedDaemon.id);
    // Nothing else was refused: the second daemon did not find out by a 429 of its own.
    expect(
      stack()
        .sim.requests()
        .filter((entry) => entry.status === 429),
    ).toHaveLength(1);
  });
});
