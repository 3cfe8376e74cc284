// Five forks of the 48k fixture across three daemons, launched warm-first: the provider (the
// simulator, over real HTTP) sees children that are byte-identical up to their directive blocks
// and identical to the parent over its whole prefix, and the cache serves them as designed.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import { createDaemonLogger, loadDaemonConfig, type RunningDaemon, startDaemon } from "@forkd/daemon";
import { AnthropicLlmClient } from "@forkd/llm";
import { type RequestLogEntry, type Sim, startSim } from "@forkd/sim";
import { loadFixture, type NatsServerHandle, type ParentTurnFixture, startNatsServer } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const API_KEY = "sk-forkd-e2e";
let server: NatsServerHandle;
let sim: Sim;
let nc: NatsConnection;
let forks: NatsForkSubagent;
let workspace: string;
let fixture: ParentTurnFixture;
const daemons: RunningDaemon[] = [];

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

function stripCacheControl(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (key, inner) => (key === "cache_control" ? undefined : inner));
}

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "forkd-fanout-"));
  fixture = await loadFixture("48k");
  server = await startNatsServer();
  // A time to first token opens the window in which a cache entry is written but not yet readable.
  sim = await startSim({ latency: { ttftMs: 150 } });
  nc = await connect({ servers: server.url });
  forks = await NatsForkSubagent.create(nc);
  for (const id of ["fan-a", "fan-b", "fan-c"]) {
    const config = loadDaemonConfig({
      env: {},
      overrides: { daemonId: id, nats: { servers: [server.url] }, workspace, concurrency: 2 },
    });
    daemons.push(
      await startDaemon(config, {
        logger: createDaemonLogger({ level: "silent", format: "json", daemonId: id }),
        llm: new AnthropicLlmClient({ baseURL: sim.url, apiKey: API_KEY, retry: { maxRetries: 0 } }),
      }),
    );
  }
});

afterAll(async () => {
  for (const daemon of daemons) await daemon.stop({ graceMs: 0 }).catch(() => undefined);
  await forks?.close();
  await nc?.close();
  await sim?.close();
  await server?.stop();
  await rm(workspace, { recursive: true, force: true });
});

describe("warm-first fan-out of the 48k fixture", () => {
  it("shares the parent's cache and the siblings' delta across three daemons", async () => {
    // The parent's own turn: it writes the cache at its breakpoints, as it did in reality.
    const parentClient = new AnthropicLlmClient({
      baseURL: sim.url,
      apiKey: API_KEY,
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
