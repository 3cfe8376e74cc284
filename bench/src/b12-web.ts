// #12 The web view (issue #17) in headless chromium: how long the page takes to show 1,000 runs, and
// to replay one run of 10,000 events, and the page's JavaScript heap and DOM size once it has; against
// the same page with no runs. The runs and events are written straight into a real nats-server's
// streams and registry (valid wire messages, through the protocol's codecs), so what is measured is
// the page: WebSocket, decoding, the run tracker, rendering.
/// <reference lib="dom" />
import { ensureForkResources, type ForkResources } from "@forkd/client";
import { ensureProgram, startNatsServer } from "@forkd/local-nats";
import {
  eventMsgId,
  type ForkEvent,
  forkEventCodec,
  PROTOCOL_VERSION,
  queuedRunState,
  runStateCodec,
} from "@forkd/protocol";
import { startWebServer } from "@forkd/web";
import { connect } from "@nats-io/transport-node";
import type { Browser, CDPSession, Page } from "playwright-core";
import { launchChromium } from "../../test/harness/browser.js";
import { now, overBy, round } from "./stats.js";
import type { BenchContext, Benchmark } from "./types.js";

const TARGET_LOAD_MS = 2_000;
const TARGET_LOG_MS = 2_000;
const TARGET_HEAP_MB = 64;
const MODEL = "claude-sonnet-4-5";

type Body = ForkEvent extends infer E
  ? E extends ForkEvent
    ? Omit<E, "v" | "run_id" | "seq" | "attempt" | "ts">
    : never
  : never;

/** The events of one ordinary completed run: six, one turn, most of the prompt read from the cache. */
function ordinaryRun(): Body[] {
  const usage = {
    input_tokens: 400,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 44_000,
    output_tokens: 200,
  };
  return [
    { type: "accepted", daemon_id: "bench-d1", queue_wait_ms: 4, delivery: 1, resumed: false },
    { type: "started", model: MODEL, prefix_hash: null, cache_shared: true },
    { type: "llm.request", turn: 1, model: MODEL, message_count: 3 },
    { type: "llm.delta", turn: 1, text: "Scope: one slice of the work. " },
    {
      type: "llm.message",
      turn: 1,
      message: {
        role: "assistant",
        content: [{ type: "text", text: "Scope: one slice of the work. Result: done." }],
      },
      stop_reason: "end_turn",
      usage,
    },
    {
      type: "completed",
      result: {
        final_text: "Scope: one slice of the work. Result: done.",
        usage: {
          input_tokens: 400,
          cache_write_5m_tokens: 0,
          cache_write_1h_tokens: 0,
          cache_read_tokens: 44_000,
          output_tokens: 200,
          llm_calls: 1,
          cost_usd: 0.01752,
        },
        turns: 1,
        tool_uses: 0,
        duration_ms: 1500,
        cache_shared: true,
        stop: "end_turn",
      },
    },
  ];
}

/** A run of `count` events: streamed text in deltas, then the end. */
function longRun(count: number): Body[] {
  const events = ordinaryRun();
  const deltas: Body[] = Array.from({ length: count - events.length + 1 }, (_, i) => ({
    type: "llm.delta",
    turn: 1,
    text: `token ${i} `,
  }));
  return [...events.slice(0, 3), ...deltas, ...events.slice(4)];
}

async function publishRun(
  resources: ForkResources,
  runId: string,
  parent: string,
  bodies: Body[],
): Promise<void> {
  const at = Date.now();
  await resources.runs.put(
    runId,
    runStateCodec.encode({
      ...queuedRunState({
        runId,
        createdAt: at,
        now: at,
        parentAgentId: parent,
        label: `slice ${runId.slice(-4)}`,
      }),
      status: "completed",
      attempt: 1,
      last_seq: bodies.length,
    }),
  );
  const pending: Promise<unknown>[] = [];
  for (const [index, body] of bodies.entries()) {
    const seq = index + 1;
    const event = { v: PROTOCOL_VERSION, run_id: runId, seq, attempt: 1, ts: at + seq, ...body } as ForkEvent;
    pending.push(
      resources.js.publish(resources.subjects.events(runId), forkEventCodec.encode(event), {
        msgID: eventMsgId(runId, seq),
      }),
    );
    if (pending.length >= 1000) await Promise.all(pending.splice(0));
  }
  await Promise.all(pending);
}

interface PageFigures {
  /** Navigation start to every run shown in the list's summary. @unit ms */
  loadMs: number;
  /** After a garbage collection. @unit MB (10^6 bytes) */
  heapMB: number;
  domNodes: number;
}

async function metrics(cdp: CDPSession): Promise<{ heapMB: number; domNodes: number }> {
  await cdp.send("HeapProfiler.collectGarbage");
  const { metrics: list } = await cdp.send("Performance.getMetrics");
  const value = (name: string) => list.find((metric) => metric.name === name)?.value ?? Number.NaN;
  return { heapMB: round(value("JSHeapUsedSize") / 1e6, 1), domNodes: value("Nodes") };
}

/** Opens the page and waits until its summary says `expected` (e.g. "1001 completed"). */
async function loadPage(
  browser: Browser,
  url: string,
  expected: string,
): Promise<{ page: Page; cdp: CDPSession; figures: PageFigures }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const started = now();
  await page.goto(url);
  await page.waitForFunction((text) => document.getElementById("summary")?.textContent === text, expected, {
    timeout: 120_000,
    polling: "raf",
  });
  const loadMs = round(now() - started, 0);
  return { page, cdp, figures: { loadMs, ...(await metrics(cdp)) } };
}

async function run(context: BenchContext) {
  const runs = context.quick ? 200 : 1_000;
  const longEvents = context.quick ? 2_000 : 10_000;
  const chromium = await ensureProgram("chromium", "chromium");
  if ("missing" in chromium) throw new Error(`the web benchmark needs chromium: ${chromium.missing}`);
  process.env.CHROMIUM_BIN = chromium.path;
  const server = await startNatsServer({ name: "forkd-bench-web", websocket: true });
  const nc = await connect({ servers: server.url, name: "bench-web" });
  let browser: Browser | undefined;
  const pages: { close(): Promise<void> }[] = [];
  try {
    const resources = await ensureForkResources(nc);
    const web = await startWebServer({ page: { servers: [server.websocketUrl!], prefix: "agent" }, port: 0 });
    pages.push(web);
    browser = await launchChromium();

    // Baseline: the same page, connected, with no runs.
    const empty = await loadPage(browser, web.url, "no runs yet");
    await empty.page.close();

    context.log(`writing ${runs} runs of 6 events and one of ${longEvents} events`);
    const written = now();
    for (let i = 0; i < runs; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, runs - i) }, (_, j) =>
          publishRun(
            resources,
            `bench-run-${String(i + j).padStart(5, "0")}`,
            `parent-${(i + j) % 20}`,
            ordinaryRun(),
          ),
        ),
      );
    }
    await publishRun(resources, "bench-long-run", "parent-long", longRun(longEvents));
    context.log(`written in ${round((now() - written) / 1000, 1)} s`);

    const full = await loadPage(browser, web.url, `${runs + 1} completed`);
    const runRows = await full.page.$$eval("#run-list .line", (rows) => rows.length);
    // One run of many events: opened, replayed from seq 1 until the log holds every event.
    await full.page.fill("#search", "bench-long-run");
    await full.page.waitForSelector('.line.run[data-run-id="bench-long-run"]');
    const opened = now();
    await full.page.click('.line.run[data-run-id="bench-long-run"]');
    const shown = `${longEvents.toLocaleString("en-US")} events`;
    await full.page.waitForFunction(
      (text) => document.getElementById("log-state")?.textContent === text,
      shown,
      {
        timeout: 120_000,
        polling: "raf",
      },
    );
    const logMs = round(now() - opened, 0);
    const withLog = await metrics(full.cdp);
    const eventRows = await full.page.$$eval("#event-list .ev", (rows) => rows.length);
    await full.page.close();

    const pass =
      full.figures.loadMs <= TARGET_LOAD_MS && logMs <= TARGET_LOG_MS && withLog.heapMB <= TARGET_HEAP_MB;
    const notes = [
      `Headless chromium (${chromium.path}) at 1280×800 loads the page from \`startWebServer\` on loopback; the page connects to a nats-server over WebSocket. ${runs} runs of 6 events (and registry entries, 20 parents) and one run of ${longEvents} events are written first, through the protocol's codecs.`,
      "Load: from navigation to the list's summary counting every run (the page decodes every event with the protocol's schemas and folds it with the CLI's run tracker). Log: from the click on the long run to its log holding every event. Heap: JSHeapUsedSize after a forced garbage collection (CDP); DOM nodes: CDP's Nodes.",
      `Virtualised lists: ${runRows} run rows and ${eventRows} event rows were in the DOM for ${runs + 1} runs and ${longEvents} events.`,
    ];
    if (full.figures.loadMs > TARGET_LOAD_MS)
      notes.push(`Load missed by ${overBy(full.figures.loadMs, TARGET_LOAD_MS)}.`);
    if (logMs > TARGET_LOG_MS) notes.push(`Log replay missed by ${overBy(logMs, TARGET_LOG_MS)}.`);
    if (withLog.heapMB > TARGET_HEAP_MB)
      notes.push(`Heap missed by ${overBy(withLog.heapMB, TARGET_HEAP_MB)}.`);
    return {
      figures: {
        runs: runs + 1,
        load_ms: full.figures.loadMs,
        heap_mb: full.figures.heapMB,
        dom_nodes: full.figures.domNodes,
        long_run_events: longEvents,
        long_run_log_ms: logMs,
        heap_with_long_run_mb: withLog.heapMB,
        dom_nodes_with_long_run: withLog.domNodes,
        run_rows_in_dom: runRows,
        event_rows_in_dom: eventRows,
      },
      baseline: {
        runs: 0,
        load_ms: empty.figures.loadMs,
        heap_mb: empty.figures.heapMB,
        dom_nodes: empty.figures.domNodes,
      },
      target: `${runs + 1} runs shown within ${TARGET_LOAD_MS} ms of navigation, a ${longEvents}-event log within ${TARGET_LOG_MS} ms, JS heap ≤ ${TARGET_HEAP_MB} MB`,
      headline: `${runs + 1} runs in ${full.figures.loadMs} ms, ${full.figures.heapMB} MB heap; ${longEvents} events in ${logMs} ms, ${withLog.heapMB} MB`,
      baselineHeadline: `no runs: ${empty.figures.loadMs} ms, ${empty.figures.heapMB} MB heap`,
      pass,
      params: {
        runs: runs + 1,
        events_per_run: 6,
        long_run_events: longEvents,
        viewport: "1280x800",
        parents: 20,
      },
      notes,
    };
  } finally {
    await browser?.close().catch(() => undefined);
    for (const page of pages) await page.close().catch(() => undefined);
    await nc.close().catch(() => undefined);
    await server.stop();
  }
}

export const webBenchmark: Benchmark = {
  id: 12,
  name: "Web view: 1,000 runs and a 10,000-event run in headless chromium",
  timeoutMs: { quick: 120_000, full: 400_000 },
  run,
};
