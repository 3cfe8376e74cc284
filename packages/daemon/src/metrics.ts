// Prometheus metrics of one daemon, served on /metrics.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Counter, Gauge, Histogram, Registry } from "prom-client";

/** The daemon's metrics. */
export interface DaemonMetrics {
  readonly registry: Registry;
  /** URL of the /metrics endpoint once served. */
  url?: string;
  readonly runsActive: Gauge;
  readonly runsEnded: Counter<"outcome">;
  readonly queueWait: Histogram;
  readonly llmLatency: Histogram<"phase">;
  readonly tokens: Counter<"kind">;
  readonly cacheReadShare: Histogram;
  readonly abortLatency: Histogram;
  readonly redeliveries: Counter;
  /** Runs of a silent daemon this daemon handed back to the queue (failover.ts). */
  readonly handoffs: Counter;
  /** 1 while JetStream stores this daemon's writes (events, heartbeats), 0 from its first failure to its next success (storage-health.ts). */
  readonly storageAvailable: Gauge;
  readonly toolCalls: Counter<"result">;
  /** Control messages refused: `abort` (no owner's proof), or a protocol error code (`invalid_message`, `payload_too_large`, …). */
  readonly refusedControls: Counter<"kind">;
  /** Calls at once a cluster-wide limit allows, per scope (`key:<hash>`, `model:<name>`, `tenant:<id>`). */
  readonly callLimit: Gauge<"scope">;
  /** Model calls of this daemon holding a slot of a cluster-wide limit (`held`), or waiting for one, per scope. */
  readonly callSlots: Gauge<"scope" | "state">;
  /** Time from a call's request for a slot to its slot, per scope (`_count`: slots given). */
  readonly callSlotWait: Histogram<"scope">;
  /** Calls that found no free slot and queued for one, per scope. */
  readonly callSlotWaits: Counter<"scope">;
  /** Specs with an inline prefix, by how they were decoded: `tail` (a kept prefix's bytes ended the spec), `hash`, `whole`. */
  readonly inlinePrefixSpecs: Counter<"decoded">;
}

/** Creates the metrics on a fresh registry. */
export function createDaemonMetrics(): DaemonMetrics {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    refusedControls: new Counter({
      name: "forkd_refused_controls_total",
      help: "Control messages refused: kind abort (an abort without the run owner's proof), or the protocol error code of a malformed abort or max-deliveries advisory",
      labelNames: ["kind"],
      registers,
    }),
    runsActive: new Gauge({ name: "forkd_runs_active", help: "Runs in progress on this daemon", registers }),
    inlinePrefixSpecs: new Counter({
      name: "forkd_inline_prefix_specs_total",
      help: "Specs carrying their prefix inline, by how they were decoded: tail (ended with a kept prefix's bytes: only the spec's own fields parsed), hash (parsed whole, the prefix then found kept), whole (parsed and validated whole, the prefix kept)",
      labelNames: ["decoded"],
      registers,
    }),
    callLimit: new Gauge({
      name: "forkd_call_limit",
      help: "Model calls at once a cluster-wide limit allows, per scope (key:<hash>, model:<name>, tenant:<id>)",
      labelNames: ["scope"],
      registers,
    }),
    callSlots: new Gauge({
      name: "forkd_call_slots",
      help: "Model calls of this daemon holding a slot of a cluster-wide limit (state held), or waiting for one (state waiting), per scope",
      labelNames: ["scope", "state"],
      registers,
    }),
    callSlotWait: new Histogram({
      name: "forkd_call_slot_wait_seconds",
      help: "Time from a model call's request for a slot of a cluster-wide limit to its slot, per scope",
      labelNames: ["scope"],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30],
      registers,
    }),
    callSlotWaits: new Counter({
      name: "forkd_call_slot_waits_total",
      help: "Model calls that found no free slot of a cluster-wide limit and queued for one, per scope",
      labelNames: ["scope"],
      registers,
    }),
    runsEnded: new Counter({
      name: "forkd_runs_ended_total",
      help: "Runs that ended here, by outcome (completed, failed, aborted, released, fenced, refused: a spec taken out of the queue unrun, claim_refused: a first request ahead of a refused claim, the spec handed back)",
      labelNames: ["outcome"],
      registers,
    }),
    queueWait: new Histogram({
      name: "forkd_queue_wait_seconds",
      help: "Time from a spec's creation to its pickup",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers,
    }),
    llmLatency: new Histogram({
      name: "forkd_llm_latency_seconds",
      help: "LLM call latency: ttft (to first byte) and total",
      labelNames: ["phase"],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    }),
    tokens: new Counter({
      name: "forkd_tokens_total",
      help: "Tokens by kind: input, cache_write_5m, cache_write_1h, cache_read, output",
      labelNames: ["kind"],
      registers,
    }),
    cacheReadShare: new Histogram({
      name: "forkd_cache_read_share",
      help: "Share of each prompt read from the cache",
      buckets: [0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1],
      registers,
    }),
    abortLatency: new Histogram({
      name: "forkd_abort_latency_seconds",
      help: "Time from an abort request to the run's stop on this daemon",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
      registers,
    }),
    redeliveries: new Counter({
      name: "forkd_redeliveries_total",
      help: "Specs picked up again after another attempt (crash, drain, lost claim)",
      registers,
    }),
    handoffs: new Counter({
      name: "forkd_handoffs_total",
      help: "Runs of a daemon gone silent that this daemon handed back to the queue",
      registers,
    }),
    storageAvailable: new Gauge({
      name: "forkd_jetstream_available",
      help: "1 while JetStream stores this daemon's event publishes and heartbeats; 0 from a failure (no quorum, this node cut from the others) to the next success",
      registers,
    }),
    toolCalls: new Counter({
      name: "forkd_tool_calls_total",
      help: "Tool calls by result: ok, error, denied",
      labelNames: ["result"],
      registers,
    }),
  };
}

/** Serves `/metrics` on `host:port` (port 0 picks a free one). */
export async function serveMetrics(
  metrics: DaemonMetrics,
  options: { port: number; host?: string },
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    if (request.url !== "/metrics") {
      response.writeHead(404).end();
      return;
    }
    metrics.registry.metrics().then(
      (body) => response.writeHead(200, { "content-type": metrics.registry.contentType }).end(body),
      (error: Error) => response.writeHead(500).end(error.message),
    );
  });
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolveListen, reject) => {
    server.once("error", reject);
    server.listen(options.port, host, () => resolveListen());
  });
  const url = `http://${host}:${(server.address() as AddressInfo).port}/metrics`;
  metrics.url = url;
  return {
    url,
    close: () => new Promise((resolveClose) => server.close(() => resolveClose())),
  };
}
