// Observability of a daemon: the parent's trace continues on the daemon (W3C trace context carried
// from the parent's fork to the run's turns), and /metrics reports what the runs did.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsForkSubagent } from "@forkd/client";
import { createForkPrefix } from "@forkd/core";
import { AnthropicLlmClient } from "@forkd/llm";
import { type Sim, startSim } from "@forkd/sim";
import { loadFixture, type NatsServerHandle, startNatsServer, waitFor } from "@forkd/testing";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { context, type Span, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDaemonConfig } from "./config.js";
import { createDaemonLogger } from "./logger.js";
import { type RunningDaemon, startDaemon } from "./run-daemon.js";

let server: NatsServerHandle;
let sim: Sim;
let nc: NatsConnection;
let forks: NatsForkSubagent;
let workspace: string;
let daemon: RunningDaemon;
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(async () => {
  context.setGlobalContextManager(contextManager.enable());
  trace.setGlobalTracerProvider(provider);
  workspace = await mkdtemp(join(tmpdir(), "forkd-observability-"));
  server = await startNatsServer();
  sim = await startSim();
  nc = await connect({ servers: server.url });
  forks = await NatsForkSubagent.create(nc);
  const config = loadDaemonConfig({
    env: {},
    overrides: { daemonId: "observed-a", nats: { servers: [server.url] }, workspace, metricsPort: 0 },
  });
  daemon = await startDaemon(config, {
    logger: createDaemonLogger({ level: "silent", format: "json", daemonId: "observed-a" }),
    llm: new AnthropicLlmClient({ baseURL: sim.url, apiKey: "sk-observability", retry: { maxRetries: 0 } }),
  });
});

afterAll(async () => {
  await daemon?.stop({ graceMs: 0 });
  await forks?.close();
  await nc?.close();
  await sim?.close();
  await server?.stop();
  await rm(workspace, { recursive: true, force: true });
  trace.disable();
  context.disable();
  await provider.shutdown();
});

describe("observability", () => {
  it("continues the parent's trace: the run and its turns are children of the parent's fork span", async () => {
    const fixture = await loadFixture("4k");
    const prefix = createForkPrefix(fixture.request, fixture.response);
    const tracer = trace.getTracer("test-parent");
    let parentSpan!: Span;
    const handle = tracer.startActiveSpan("parent.fork", (span) => {
      parentSpan = span;
      const forked = forks.fork({
        prefix,
        directive: 'Traced work.\n@sim tool Read {"file_path":"missing.txt"}',
        parent: { agent_id: "parent-traced" },
      });
      span.end();
      return forked;
    });
    expect((await handle.result()).status).toBe("completed");
    // The run span ends just after the terminal event is published: wait for it to be exported.
    const run = await waitFor(() =>
      exporter
        .getFinishedSpans()
        .find((span) => span.name === "forkd.run" && span.attributes["forkd.run_id"] === handle.runId),
    );
    const spans = exporter.getFinishedSpans();
    expect(run!.spanContext().traceId).toBe(parentSpan.spanContext().traceId);
    expect(run!.parentSpanContext?.spanId).toBe(parentSpan.spanContext().spanId);
    const children = spans.filter((span) => span.parentSpanContext?.spanId === run!.spanContext().spanId);
    expect(children.map((span) => span.name).sort()).toEqual([
      "forkd.llm.turn",
      "forkd.llm.turn",
      "forkd.tool",
    ]);
    expect(run!.attributes["forkd.outcome"]).toBe("completed");
  });

  it("serves Prometheus metrics of the runs", async () => {
    // Counted when the run ends, just after its terminal event: scrape until the count shows.
    const body = await waitFor(async () => {
      const response = await fetch(daemon.metricsUrl!);
      expect(response.status).toBe(200);
      const text = await response.text();
      return /^forkd_runs_ended_total\{outcome="completed"\} [1-9]/m.test(text) ? text : undefined;
    });
    const value = (pattern: RegExp) => Number(body.match(pattern)?.[1] ?? Number.NaN);
    expect(value(/^forkd_runs_ended_total\{outcome="completed"\} (\d+)/m)).toBeGreaterThanOrEqual(1);
    expect(value(/^forkd_tokens_total\{kind="input"\} (\d+)/m)).toBeGreaterThan(0);
    expect(value(/^forkd_tool_calls_total\{result="error"\} (\d+)/m)).toBe(1);
    expect(body).toMatch(/^forkd_llm_latency_seconds_count\{phase="total"\} \d+/m);
    expect(body).toMatch(/^forkd_queue_wait_seconds_count \d+/m);
    expect(value(/^forkd_runs_active (\d+)/m)).toBe(0);
  });

  it("counts the inline specs recognised by their prefix's bytes", async () => {
    const fixture = await loadFixture("4k"); // small enough to travel inline
    const prefix = createForkPrefix(fixture.request, fixture.response);
    const handles = ["First sibling.", "Second sibling."].map((directive) =>
      forks.fork({ prefix, directive, parent: { agent_id: "parent-inline" } }),
    );
    for (const handle of handles) expect((await handle.result()).status).toBe("completed");
    const response = await fetch(daemon.metricsUrl!);
    const body = await response.text();
    const count = (how: string) =>
      Number(
        body.match(new RegExp(`^forkd_inline_prefix_specs_total\\{decoded="${how}"\\} (\\d+)`, "m"))?.[1] ??
          0,
      );
    // The client writes the prefix's bytes last in each spec: after the first, only the specs' own
    // fields are parsed.
    expect(count("tail")).toBeGreaterThanOrEqual(1);
    expect(count("hash")).toBe(0);
    expect(count("tail") + count("whole")).toBeGreaterThanOrEqual(2);
  });
});
