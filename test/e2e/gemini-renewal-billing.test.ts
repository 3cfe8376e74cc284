// A Gemini fan-out that outlives the renewal margin, on two daemons in this process whose Gemini
// clients and the simulator read one manual clock: the renewal's storage (the cache's tokens × the
// seconds it added) is in exactly one run's usage totals, and in its cost.
import { createForkPrefix, GEMINI_CACHE_RENEW_BELOW_SECONDS, GEMINI_CACHE_TTL_SECONDS } from "@forkd/core";
import { GeminiLlmClient } from "@forkd/llm";
import { ManualClock } from "@forkd/sim";
import { loadFixture } from "@forkd/testing";
import { describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";

const clock = new ManualClock(1_800_000_000_000);
const stack = useForkdStack({
  daemons: ["renew-a", "renew-b"],
  sim: { clock },
  apiKey: "gemini-renewal-key",
  gemini: (sim, apiKey) =>
    new GeminiLlmClient({ baseURL: sim.url, apiKey, retry: { maxRetries: 0 }, now: () => clock.now() }),
});

describe("a Gemini fan-out longer than the renewal margin", () => {
  it("bills the renewal's storage once, in one run's totals and cost", { timeout: 60_000 }, async () => {
    const { forks } = stack();
    const fixture = await loadFixture("4k");
    const prefix = createForkPrefix(fixture.request, fixture.response);
    const base = {
      prefix: { ...prefix, params: { ...prefix.params, model: "gemini-2.5-flash" } },
      parent: { agent_id: "renewal" },
      provider: { api: "gemini" as const },
    };
    const first = await forks.fork({ ...base, directive: "[renew-1] first.\n@sim say one" }).result();
    expect(first.status).toBe("completed");
    if (first.status !== "completed") return;
    const tokens = first.result.usage.cache_write_5m_tokens;
    expect(tokens).toBeGreaterThan(1024);
    expect(first.result.usage).not.toHaveProperty("cache_storage_token_seconds");
    // 1 ms past the margin: the next children renew the cache (one of them) before naming it.
    const elapsed = (GEMINI_CACHE_TTL_SECONDS - GEMINI_CACHE_RENEW_BELOW_SECONDS) * 1000 + 1;
    clock.advance(elapsed);
    const later = await Promise.all(
      forks
        .fanOut(
          base,
          [2, 3, 4].map((i) => ({ directive: `[renew-${i}] next.\n@sim say ${i}` })),
          {
            warmFirst: false,
          },
        )
        .map((handle) => handle.result()),
    );
    const stored = later.map((o) =>
      o.status === "completed" ? (o.result.usage.cache_storage_token_seconds ?? 0) : -1,
    );
    expect(stored.filter((s) => s > 0)).toHaveLength(1);
    expect(stored.filter((s) => s === 0)).toHaveLength(2);
    expect(Math.max(...stored)).toBeCloseTo((tokens * elapsed) / 1000, 6);
    // Its cost includes the storage: 1.00 USD per million tokens per hour on 2.5 Flash.
    const renewing = later[stored.indexOf(Math.max(...stored))]!;
    const storageUsd = (tokens * (elapsed / 1000)) / 3600 / 1_000_000;
    if (renewing.status !== "completed") throw new Error("the renewing run did not complete");
    const others = later.filter((o) => o !== renewing && o.status === "completed");
    for (const other of others)
      if (other.status === "completed")
        expect(renewing.result.usage.cost_usd! - other.result.usage.cost_usd!).toBeGreaterThan(
          storageUsd * 0.9,
        );
  });
});
