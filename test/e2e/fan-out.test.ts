// Five forks of the 48k fixture across three daemons, launched warm-first: the provider (the
// simulator, over real HTTP) sees children that are byte-identical up to their directive blocks
// and identical to the parent over its whole prefix, and the cache serves them as designed.
import { type NatsForkSubagent, readEventLog } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import { AnthropicLlmClient } from "@forkd/llm";
import type { ForkEvent } from "@forkd/protocol";
import type { RequestLogEntry } from "@forkd/sim";
import { loadFixture } from "@forkd/testing";
import { describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";

// A time to first token opens the window in which a cache entry is written but not yet readable.
const stack = useForkdStack({
  daemons: ["fan-a", "fan-b", "fan-c"],
  sim: { latency: { ttftMs: 150 } },
  daemonConfig: { concurrency: 2 },
});

type Body = { system: unknown; tools: unknown; messages: { role: string; content: unknown }[] };

function bodyOf(entry: RequestLogEntry): Body {
  return JSON.parse(String(entry.body)) as Body;
}

// The child's last message ends with its directive block; everything before it is shared.
function withoutDirective(body: Body): string {
  const last = body.messages.at(-1)!;
  const content = last.content as { type: string; text?: string }[];
  const shared = content.filter(
    (block) => !(block.type === "text" && block.text?.includes("<fork-boilerplate")),
  );
  return JSON.stringify({ ...body, messages: [...body.messages.slice(0, -1), { ...last, content: shared }] });
}

async function readLog(forks: NatsForkSubagent, runId: string): Promise<ForkEvent[]> {
  const events: ForkEvent[] = [];
  for await (const logged of readEventLog(forks.resources, runId, { follow: false }))
    events.push(logged.event);
  return events;
}

function stripCacheControl(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (key, inner) => (key === "cache_control" ? undefined : inner));
}

describe("warm-first fan-out of the 48k fixture", () => {
  it("shares the parent's cache and the siblings' delta across three daemons", async () => {
    const { forks, sim, apiKey } = stack();
    const fixture = await loadFixture("48k");
    // The parent's own turn: it writes the cache at its breakpoints, as it did in reality.
    const parentClient = new AnthropicLlmClient({
      baseURL: sim.url,
      apiKey,
      retry: { maxRetries: 0 },
    });
    const { stream: _stream, ...parentRequest } = fixture.request as Record<string, unknown>;
    const parentResponse = await parentClient.createMessage(parentRequest as never);
    const parentWrote = parentResponse.usage.cache_creation_input_tokens ?? 0;
    expect(parentWrote).toBeGreaterThan(40_000);

    const prefix = createForkPrefix(fixture.request, fixture.response);
    const toolUses = (fixture.response.content as { type: string; id?: string }[]).filter(
      (b) => b.type === "tool_use",
    );
    const children = Array.from({ length: 5 }, (_, i) => ({
      directive: `Child ${i + 1}: audit part ${i + 1} of the codec.`,
      ...(toolUses[i]?.id
        ? { forkCall: { tool_use_id: toolUses[i]!.id!, description: `slice ${i + 1}` } }
        : {}),
    }));
    const before = sim.requests().length;
    const handles = forks.fanOut({ prefix, parent: { agent_id: "parent-48k" } }, children);
    const outcomes = await Promise.all(handles.map((handle) => handle.result()));
    expect(outcomes.map((o) => o.status)).toEqual(Array(5).fill("completed"));

    // The followers were claimed during the leader's time to first token: their daemons built their
    // requests then, and held only the calls until the leader's response began (cache-leader.ts).
    const logs = await Promise.all(handles.map((handle) => readLog(forks, handle.runId)));
    const leaderResponse = logs[0]!.find((event) => event.type === "llm.delta")!.ts;
    for (const log of logs.slice(1)) {
      expect(log.find((event) => event.type === "accepted")!.ts).toBeLessThanOrEqual(leaderResponse);
      expect(log.find((event) => event.type === "llm.delta")!.ts).toBeGreaterThanOrEqual(leaderResponse);
    }

    // Which daemons ran them: the cluster shared the work.
    const ranOn = new Set(
      (await Promise.all(handles.map((h) => forks.state(h.runId)))).map((s) => s?.daemon_id),
    );
    expect(ranOn.size).toBeGreaterThan(1);

    const childRequests = sim.requests().slice(before);
    expect(childRequests).toHaveLength(5);
    const bodies = childRequests.map(bodyOf);
    const shared = bodies.map(withoutDirective);
    for (const body of shared) expect(body).toBe(shared[0]);

    // Over the parent's whole prefix (tools, system, messages), the children send what the parent sent.
    const parentBody = JSON.parse(JSON.stringify(parentRequest)) as Body;
    for (const body of bodies) {
      expect(stripCacheControl(body.tools)).toEqual(stripCacheControl(parentBody.tools));
      expect(stripCacheControl(body.system)).toEqual(stripCacheControl(parentBody.system));
      expect(stripCacheControl(body.messages.slice(0, parentBody.messages.length))).toEqual(
        stripCacheControl(parentBody.messages),
      );
    }

    // In order of arrival: the first child reads the parent's prefix and writes the small delta;
    // the others, released once its response began, read all of it.
    const usages = childRequests.map((entry) => entry.usage!);
    const [first, ...rest] = usages;
    expect(first!.cache_read_input_tokens).toBeGreaterThanOrEqual(parentWrote);
    expect(first!.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(first!.cache_creation_input_tokens).toBeLessThan(2_000);
    for (const usage of rest) {
      expect(usage.cache_read_input_tokens).toBe(
        first!.cache_read_input_tokens! + first!.cache_creation_input_tokens!,
      );
      expect(usage.cache_creation_input_tokens).toBe(0);
    }
  });
});
