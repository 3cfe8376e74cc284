// Finding 18 of issue #11: a spec chooses its model, max_tokens and max_turns, and a model stream
// that trickles one token at a time never trips an idle timer. The daemon's ceilings bound all of
// them whatever the spec asks: run time from the first claim, turns, output tokens.
import { createForkPrefix } from "@forkd/core";
import { loadFixture } from "@forkd/testing";
import { describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";

const MAX_RUN_MS = 1_500;
const MAX_TURNS = 2;
const MAX_OUTPUT_TOKENS = 1_000;
const stack = useForkdStack({
  sim: { logLimit: 100 },
  daemonConfig: {
    ceilings: { maxRunMs: MAX_RUN_MS, maxTurns: MAX_TURNS, maxOutputTokens: MAX_OUTPUT_TOKENS },
  },
});

const threeToolTurns = [
  "Look around.",
  '@sim tool Glob {"pattern":"*"}',
  "@sim turn",
  '@sim tool Glob {"pattern":"*"}',
  "@sim turn",
  '@sim tool Glob {"pattern":"*"}',
  "@sim turn",
  "@sim text 5",
].join("\n");

describe("daemon ceilings", () => {
  it("a model stream trickling one token every half second ends at the run-time ceiling", async () => {
    const { forks } = stack();
    const started = Date.now();
    const handle = forks.fork({
      prefix: null,
      directive: "Trickle.\n@sim tps 2\n@sim text 400",
      parent: { agent_id: "trickler" },
      limits: { max_turns: 10, timeout_ms: 3_600_000 },
    });
    const outcome = await handle.result();
    expect(outcome.status).toBe("timeout");
    // Ended by the ceiling, not by the stream (400 tokens at 2/s would take 200 s).
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it("max_turns is lowered to the ceiling: exactly MAX_TURNS turns, however many the spec allows", async () => {
    const { forks } = stack();
    const handle = forks.fork({
      prefix: null,
      directive: threeToolTurns,
      parent: { agent_id: "many-turns" },
      limits: { max_turns: 50 },
    });
    const outcome = await handle.result();
    expect(outcome).toMatchObject({ status: "completed" });
    expect(outcome.status === "completed" && [outcome.result.turns, outcome.result.stop]).toEqual([
      MAX_TURNS,
      "max_turns",
    ]);
  });

  it("max_tokens is lowered to the ceiling in the request the provider gets", async () => {
    const { forks, sim } = stack();
    const fixture = await loadFixture("4k");
    const prefix = createForkPrefix(fixture.request, fixture.response);
    expect(prefix.params.max_tokens).toBeGreaterThan(MAX_OUTPUT_TOKENS);
    const handle = forks.fork({
      prefix,
      directive: "Answer briefly.\n@sim text 5",
      parent: { agent_id: "greedy" },
      overrides: { max_tokens: 64_000 },
    });
    expect((await handle.result()).status).toBe("completed");
    const sent = sim
      .requests()
      .filter((entry) => entry.path === "/v1/messages" && entry.body.includes(handle.runId))
      .map((entry) => (JSON.parse(entry.body) as { max_tokens: number }).max_tokens);
    expect(sent).toEqual([MAX_OUTPUT_TOKENS]);
  });
});
