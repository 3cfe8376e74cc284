// #10 Proxy overhead: what `forkd proxy` adds to an agent's model call. The 48k parent's own request,
// streamed from the simulator (no think time, fast tokens) directly and through the proxy, one after
// the other so both see the same machine: time to the first byte and to the end of the stream.
import { type RunningProxy, startProxy } from "@forkd/proxy";
import { type Sim, startSim } from "@forkd/sim";
import { parentTurn } from "./fixtures.js";
import { now, summarize } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

// The real API's first byte takes hundreds of milliseconds (the model's time to first token): 5 ms is
// under 1 % of it, below what an agent's user could notice.
const TARGET_ADDED_P50_MS = 5;

interface Timing {
  firstByte: number;
  end: number;
}

/** One streamed call: headers and body sent, first body byte, last byte. */
async function timedCall(baseUrl: string, body: string, session: string): Promise<Timing> {
  const started = now();
  const response = await fetch(`${baseUrl}/v1/messages`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-api-key": "sk-bench-proxy",
      "anthropic-version": "2023-06-01",
      "x-claude-code-session-id": session,
    },
    body,
  });
  if (response.status !== 200) throw new Error(`status ${response.status}: ${await response.text()}`);
  const reader = response.body!.getReader();
  let firstByte = Number.NaN;
  for (;;) {
    const { done } = await reader.read();
    if (Number.isNaN(firstByte)) firstByte = now() - started;
    if (done) break;
  }
  return { firstByte, end: now() - started };
}

async function run(context: BenchContext) {
  const iterations = context.quick ? 30 : 300;
  const turn = await parentTurn("48k");
  const body = JSON.stringify({ ...turn.request, stream: true, max_tokens: 256 });
  let sim: Sim | undefined;
  let proxy: RunningProxy | undefined;
  try {
    sim = await startSim({ port: 0, latency: { ttftMs: 0, tokensPerSecond: 100_000 } });
    proxy = await startProxy({ upstream: sim.url });
    // Warm both paths (connections, JIT, the simulator's cache entry for this prompt).
    for (let i = 0; i < 5; i++) {
      await timedCall(sim.url, body, "warm");
      await timedCall(proxy.url, body, "warm");
    }
    const direct: Timing[] = [];
    const proxied: Timing[] = [];
    for (let i = 0; i < iterations; i++) {
      direct.push(await timedCall(sim.url, body, `s${i % 8}`));
      proxied.push(await timedCall(proxy.url, body, `s${i % 8}`));
    }
    const added = (key: keyof Timing) => proxied.map((timing, i) => timing[key] - direct[i]![key]);
    const addedFirstByte = summarize(added("firstByte"));
    const addedEnd = summarize(added("end"));
    const recorded = proxy.turns.sessions().reduce((sum, session) => sum + session.turns, 0);
    context.log(
      `added p50: first byte ${addedFirstByte.p50} ms, end ${addedEnd.p50} ms; ${recorded} turns held`,
    );
    return {
      figures: {
        addedFirstByteMs: addedFirstByte,
        addedEndMs: addedEnd,
        proxiedFirstByteMs: summarize(proxied.map((t) => t.firstByte)),
        proxiedEndMs: summarize(proxied.map((t) => t.end)),
        turnsHeld: recorded,
        bytesHeld: proxy.turns.bytes,
      },
      baseline: {
        directFirstByteMs: summarize(direct.map((t) => t.firstByte)),
        directEndMs: summarize(direct.map((t) => t.end)),
      },
      target: `the proxy adds ≤ ${TARGET_ADDED_P50_MS} ms (p50) to the first byte and to the end of a 48k-token streamed call`,
      headline: `+${addedFirstByte.p50} ms first byte, +${addedEnd.p50} ms end (p50)`,
      baselineHeadline: `direct: first byte ${summarize(direct.map((t) => t.firstByte)).p50} ms, end ${summarize(direct.map((t) => t.end)).p50} ms`,
      pass: addedFirstByte.p50 <= TARGET_ADDED_P50_MS && addedEnd.p50 <= TARGET_ADDED_P50_MS,
      params: { iterations, fixture: "48k", requestBytes: Buffer.byteLength(body), maxTokens: 256 },
      notes: [
        "Direct and proxied calls alternate, so both see the same load; added = proxied − direct of the same pair.",
        "Through the proxy the request is also parsed and the reply reassembled and recorded (8 sessions, ≤ 8 turns each): the overhead measured includes that.",
      ],
    };
  } finally {
    await proxy?.close();
    await sim?.close();
  }
}

export const proxyBenchmark: Benchmark = { id: 10, name: "Proxy overhead", run };
