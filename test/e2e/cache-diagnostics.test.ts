// Cache diagnostics end to end: a parent that opted in to the provider's cache diagnostics sends its
// turn to the simulator (over real HTTP), then forks on real NATS to a daemon. A child whose model or
// recorded tools differ from the parent's request misses the parent's cache entry; its cache.break
// names the layer (forkd's layer hashes, the provider's cache_miss_reason), the tokens it missed and
// what they cost. A child that reads the whole prefix gets no diagnostic.
import { createForkPrefix } from "@forkd/core";
import { AnthropicLlmClient } from "@forkd/llm";
import type { ForkEvent, ForkPrefix } from "@forkd/protocol";
import { loadFixture } from "@forkd/testing";
import { describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";

const stack = useForkdStack({ daemons: ["diag-a"], sim: { latency: { ttftMs: 20 } } });

async function eventsOf(handle: { events(): AsyncIterable<ForkEvent> }): Promise<ForkEvent[]> {
  const events: ForkEvent[] = [];
  for await (const event of handle.events()) {
    events.push(event);
    if (event.type === "completed" || event.type === "failed" || event.type === "aborted") break;
  }
  return events;
}

describe("cache diagnostics of forks", () => {
  it("names the layer a child changed, with the provider's reason and the miss's cost; a faithful child gets none", async () => {
    const { forks, sim, apiKey } = stack();
    const fixture = await loadFixture("48k");
    const { stream: _stream, ...recorded } = fixture.request as Record<string, unknown>;
    // The parent opts in: the provider keeps its request's fingerprint under its response's id.
    const parentRequest = { ...recorded, diagnostics: { previous_message_id: null } };
    const parentClient = new AnthropicLlmClient({ baseURL: sim.url, apiKey, retry: { maxRetries: 0 } });
    const parentResponse = await parentClient.createMessage(parentRequest as never);
    const parentCached =
      (parentResponse.usage.cache_creation_input_tokens ?? 0) +
      (parentResponse.usage.cache_read_input_tokens ?? 0);
    expect(parentCached).toBeGreaterThan(40_000);

    // The prefix as a recorder hands it over: the parent's request, its reply with the provider's id and usage.
    const faithful = createForkPrefix(parentRequest, {
      ...fixture.response,
      id: parentResponse.id,
      usage: parentResponse.usage,
    });
    // A recorder that re-serialised one tool's description: not the bytes the parent sent.
    const tools = faithful.params.tools as { name: string; description?: string }[];
    const reworded: ForkPrefix = {
      ...faithful,
      params: {
        ...faithful.params,
        tools: tools.map((tool, i) =>
          i === 0 ? { ...tool, description: `${tool.description ?? ""} ` } : tool,
        ),
      },
    };
    const parent = { agent_id: "parent-diag" };

    // 1. A faithful child reads the parent's whole prefix: no diagnostic.
    const [hit] = forks.fanOut({ prefix: faithful, parent }, [{ directive: "Child 1: read the codec." }]);
    const hitEvents = await eventsOf(hit!);
    expect(hitEvents.at(-1)?.type).toBe("completed");
    expect(hitEvents.filter((event) => event.type === "cache.break")).toEqual([]);
    const hitMessage = hitEvents.find((event) => event.type === "llm.message");
    expect(
      hitMessage?.type === "llm.message" && hitMessage.usage.cache_read_input_tokens,
    ).toBeGreaterThanOrEqual(parentCached);

    // 2. A child on another model, 3. a child whose recorded tools differ from the parent's request.
    const [otherModel] = forks.fanOut({ prefix: faithful, parent, overrides: { model: "claude-opus-4-6" } }, [
      { directive: "Child 2: review on a bigger model." },
    ]);
    const [otherTools] = forks.fanOut({ prefix: reworded, parent }, [
      { directive: "Child 3: read the tests." },
    ]);
    const [modelEvents, toolsEvents] = await Promise.all([eventsOf(otherModel!), eventsOf(otherTools!)]);

    const modelBreak = modelEvents.find((event) => event.type === "cache.break");
    expect(modelBreak, JSON.stringify(modelEvents.map((e) => e.type))).toMatchObject({
      turn: 1,
      layer: "model",
      cause: "model",
      expected_read_tokens: parentCached,
      cache_read_tokens: 0,
      missed_tokens: parentCached,
      provider_reason: { type: "model_changed" },
    });
    expect(modelBreak?.type === "cache.break" && modelBreak.miss_cost_usd).toBeGreaterThan(0);

    const toolsBreak = toolsEvents.find((event) => event.type === "cache.break");
    // forkd's own hashes see the prefix it was given; the provider compares with what the parent sent.
    expect(toolsBreak, JSON.stringify(toolsEvents.map((e) => e.type))).toMatchObject({
      layer: "tools",
      cause: "tools",
      expected_read_tokens: parentCached,
      cache_read_tokens: 0,
      provider_reason: { type: "tools_changed" },
    });
    expect(toolsBreak?.type === "cache.break" && toolsBreak.miss_cost_usd).toBeGreaterThan(0);
    expect(toolsBreak?.type === "cache.break" && toolsBreak.detail).toContain(
      "provider says the tools layer",
    );
    // Sonnet 4.6 at $3/MTok: the missed tokens were written at 1.25× instead of read at 0.1×.
    expect(toolsBreak?.type === "cache.break" && toolsBreak.miss_cost_usd).toBeCloseTo(
      (parentCached * 3 * (1.25 - 0.1)) / 1e6,
      4,
    );
  });
});
