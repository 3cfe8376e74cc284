// A Gemini fan-out launched all at once, without warm-first, on three daemon processes: the daemons
// agree through their bucket on one explicit cache (one creation between them), and every child
// names it and reads it whole. Without the lock, each daemon that finds no cache when it lists
// makes its own (bench #13's naive parallel row).
import type { RequestLogEntry } from "@forkd/sim";
import { describe, expect, it } from "vitest";
import { useFaultDaemons, useFaultParent } from "../harness/fault-parent.js";

// Some time to first byte, so that the three children are under way at once.
const stack = useFaultParent("gemini-lock", { sim: { latency: { ttftMs: 300 } } });
const API_KEY = "gemini-lock-key";
// One run at a time each: three children at once go to three daemons.
useFaultDaemons(stack, ["gemini-lock-1", "gemini-lock-2", "gemini-lock-3"], {
  concurrency: 1,
  extraEnv: { GEMINI_API_KEY: API_KEY },
});

const accepted = (entries: RequestLogEntry[], method: string, path: (p: string) => boolean) =>
  entries.filter((e) => e.method === method && path(e.path) && e.status === 200);

describe("a Gemini fan-out on several daemons without warm-first", () => {
  it("makes one explicit cache between the daemons, and every child names it", {
    timeout: 60_000,
  }, async () => {
    const { forks, sim, prefix } = stack();
    sim.reset();
    const geminiPrefix = { ...prefix, params: { ...prefix.params, model: "gemini-2.5-flash" } };
    const handles = forks.fanOut(
      { prefix: geminiPrefix, parent: { agent_id: "gemini-lock" }, provider: { api: "gemini" } },
      [1, 2, 3].map((i) => ({ directive: `[lock-${i}] Audit slice ${i}.\n@sim say done ${i}` })),
      { warmFirst: false },
    );
    const ran = new Set<string>();
    for (const handle of handles) {
      const outcome = await handle.result();
      expect(outcome.status, JSON.stringify(outcome)).toBe("completed");
      ran.add((await forks.state(handle.runId))?.daemon_id ?? "");
    }
    // The children really ran on several daemons: the lock crossed processes.
    expect(ran.size).toBeGreaterThanOrEqual(2);
    const entries = sim.requests();
    const creations = accepted(entries, "POST", (p) => p === "/v1beta/cachedContents");
    expect(creations).toHaveLength(1);
    const written = creations[0]!.usage?.cache_creation_input_tokens ?? 0;
    expect(written).toBeGreaterThan(1024);
    const children = accepted(entries, "POST", (p) => p.includes(":streamGenerateContent")).filter((e) =>
      e.body.includes("[lock-"),
    );
    expect(children).toHaveLength(3);
    const name = JSON.parse(children[0]!.body).cachedContent as string;
    expect(name).toMatch(/^cachedContents\//);
    for (const child of children) {
      expect(JSON.parse(child.body).cachedContent).toBe(name);
      expect(child.usage?.cache_read_input_tokens).toBe(written);
    }
  });
});
