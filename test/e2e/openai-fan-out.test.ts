// An OpenAI fan-out larger than one prompt_cache_key's rate (15 a minute) is split into shards of
// keys, each with a leader that writes the shard's cache and followers released once its response
// began: every child but the leaders reads the shared prefix; none spills to a cold machine.
import { computeCacheKey, createForkPrefix, derivedPromptCacheKey } from "@forkd/core";
import { describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";

const stack = useForkdStack({ daemons: ["shard-a", "shard-b"], daemonConfig: { concurrency: 20 } });

describe("OpenAI fan-out past one key's rate", () => {
  it("gives children 16 and 17 the second shard's key; only the two leaders miss", {
    timeout: 120_000,
  }, async () => {
    const { forks, sim } = stack();
    sim.reset();
    const prefix = createForkPrefix({
      model: "gpt-5",
      max_tokens: 256,
      system: `You audit code. ${"Context about the repository. ".repeat(400)}`,
      messages: [{ role: "user", content: "Split the audit." }],
    });
    const hash = computeCacheKey(prefix.params, prefix.betas).hash;
    const handles = forks.fanOut(
      { prefix, parent: { agent_id: "shards" }, provider: { api: "openai-chat" } },
      Array.from({ length: 17 }, (_, i) => ({
        directive: `[shard-child-${i + 1}] slice ${i + 1}\n@sim say ok`,
      })),
    );
    for (const handle of handles) expect((await handle.result()).status).toBe("completed");
    const requests = Array.from({ length: 17 }, (_, i) => {
      const entry = sim.requests().find((e) => e.body.includes(`[shard-child-${i + 1}]`));
      if (entry === undefined) throw new Error(`no request of child ${i + 1}`);
      return {
        key: (JSON.parse(entry.body) as { prompt_cache_key?: string }).prompt_cache_key,
        read: entry.usage?.cache_read_input_tokens ?? 0,
      };
    });
    expect(requests.slice(0, 15).map((r) => r.key)).toEqual(Array(15).fill(derivedPromptCacheKey(hash)));
    expect(requests.slice(15).map((r) => r.key)).toEqual(Array(2).fill(derivedPromptCacheKey(hash, 1)));
    const missed = requests.flatMap((r, i) => (r.read === 0 ? [i + 1] : []));
    expect(missed).toEqual([1, 16]);
  });
});
