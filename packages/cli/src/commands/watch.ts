// `forkd watch [RUN_ID]`: the observer. All runs: one ordered consumer on every run's events
// (`<prefix>.fork.*.events`), from the start of the stream or --since, grouped by run, until Ctrl-C.
// One run: its log from seq 1 until its terminal event.
import { type ForkResources, getRunState, lastLoggedEvent, readEventLog } from "@forkd/client";
import { type ForkEvent, isTerminalEvent, isValidRunId } from "@forkd/protocol";
import { decodeEventLenient } from "@forkd/protocol/internal";
import { DeliverPolicy, type OrderedConsumerOptions } from "@nats-io/jetstream";
import type { CommandContext } from "../context.js";
import { CliError, UsageError } from "../errors.js";
import { formatClock, formatElapsed, renderTable } from "../format.js";
import { colourStatus, isInteractive, type Style, styleFor, writeLine } from "../io.js";
import { LiveView } from "../live-view.js";
import { connectTarget, NATS_FLAGS, natsTarget, openResources } from "../nats.js";
import { COMMON_FLAGS, expectPositionals, parseCommandLine, parseDuration } from "../options.js";
import { eventLine, isFinalStatus, type RunRow, RunTracker, rowCells } from "../run-tracker.js";

const OPTIONS = {
  ...COMMON_FLAGS,
  ...NATS_FLAGS,
  since: { type: "string" },
  json: { type: "boolean" },
} as const;

type Mode = "live" | "plain" | "json";

/** Running runs first (oldest first), then ended ones (most recent first). */
function displayOrder(a: RunRow, b: RunRow): number {
  const aFinal = isFinalStatus(a.status);
  const bFinal = isFinalStatus(b.status);
  if (aFinal !== bFinal) return aFinal ? 1 : -1;
  if (aFinal) return (b.endedAt ?? 0) - (a.endedAt ?? 0);
  return (a.firstEventAt ?? 0) - (b.firstEventAt ?? 0);
}

function liveLines(tracker: RunTracker, style: Style, title: string): string[] {
  const now = Date.now();
  const rows = tracker.rows().sort(displayOrder);
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(row.status, (counts.get(row.status) ?? 0) + 1);
  const summary = [...counts].map(([status, count]) => `${count} ${status}`).join(", ");
  const table = rows.map((row) => {
    const cells = rowCells(row, now);
    cells[0] = colourStatus(style, cells[0]!);
    return [row.runId, row.label ?? "", ...cells];
  });
  return [
    `${style.bold(title)} — ${rows.length} run${rows.length === 1 ? "" : "s"}${summary ? `: ${summary}` : ""} · Ctrl-C to quit`,
    ...renderTable(table),
  ];
}

async function watchOne(
  resources: ForkResources,
  runId: string,
  mode: Mode,
  context: CommandContext,
): Promise<number> {
  const [state, last] = await Promise.all([getRunState(resources, runId), lastLoggedEvent(resources, runId)]);
  if (state === null && last === null) {
    throw new CliError("not_found", `no run ${runId} in the registry or the event log`);
  }
  const out = context.io.stdout;
  const style = styleFor(out, context.io.env);
  const tracker = new RunTracker();
  const row = tracker.row(runId, state?.state.label);
  const live = mode === "live" ? new LiveView(out) : undefined;
  const render = () => liveLines(tracker, style, `forkd watch ${runId}`).slice(1);
  const ticker = live === undefined ? undefined : setInterval(() => live.update(render), 250);
  live?.update(render);
  const signal = context.interruption.signal;
  let terminal: ForkEvent | undefined;
  try {
    for await (const { event } of readEventLog(resources, runId, { follow: true, signal })) {
      if (!tracker.apply(event)) continue;
      if (mode === "json") writeLine(out, JSON.stringify({ kind: "event", ...event }));
      else if (mode === "plain") writeLine(out, eventLine(event, runId));
      else live!.update(render);
      if (isTerminalEvent(event)) terminal = event;
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  } finally {
    if (ticker !== undefined) clearInterval(ticker);
    live?.close();
  }
  if (terminal === undefined) return 130;
  if (mode === "live" && row.finalText !== undefined) {
    writeLine(out);
    writeLine(out, row.finalText);
  }
  return row.status === "completed" ? 0 : 1;
}

async function watchAll(
  resources: ForkResources,
  sinceMs: number | undefined,
  mode: Mode,
  title: string,
  context: CommandContext,
): Promise<number> {
  const options: Partial<OrderedConsumerOptions> = { filter_subjects: resources.subjects.allEvents };
  if (sinceMs === undefined) options.deliver_policy = DeliverPolicy.All;
  else {
    options.deliver_policy = DeliverPolicy.StartTime;
    options.opt_start_time = new Date(Date.now() - sinceMs).toISOString();
  }
  const consumer = await resources.js.consumers.get(resources.subjects.streams.events, options);
  const messages = await consumer.consume({ max_messages: 512 });
  const signal = context.interruption.signal;
  const stop = () => messages.stop();
  signal.addEventListener("abort", stop, { once: true });
  const out = context.io.stdout;
  const style = styleFor(out, context.io.env);
  const tracker = new RunTracker();
  const live = mode === "live" ? new LiveView(out) : undefined;
  const render = () => liveLines(tracker, style, title);
  const labelled = new Set<string>();
  const ticker = live === undefined ? undefined : setInterval(() => live.update(render), 250);
  live?.update(render);
  try {
    for await (const message of messages) {
      let decoded: ReturnType<typeof decodeEventLenient>;
      try {
        decoded = decodeEventLenient(message.data);
      } catch {
        continue; // not an event of this protocol: nothing to show
      }
      if (decoded.kind === "unknown") {
        // A newer daemon's event type: shown as it is, never fatal.
        if (mode === "json") writeLine(out, JSON.stringify({ kind: "event", ...decoded.raw }));
        else if (mode === "plain") {
          const { envelope } = decoded;
          writeLine(
            out,
            `${formatClock(envelope.ts)} ${envelope.run_id} #${envelope.seq} ${decoded.type} (unknown event type)`,
          );
        }
        continue;
      }
      const event = decoded.event;
      if (!tracker.apply(event)) continue;
      if (live !== undefined && !labelled.has(event.run_id)) {
        // Events do not carry the label; the registry does.
        labelled.add(event.run_id);
        getRunState(resources, event.run_id).then(
          (entry) => {
            if (entry?.state.label === undefined) return;
            tracker.row(event.run_id, entry.state.label);
            live.update(render);
          },
          () => undefined,
        );
      }
      if (mode === "json") writeLine(out, JSON.stringify({ kind: "event", ...event }));
      else if (mode === "plain") writeLine(out, eventLine(event, event.run_id));
      else live!.update(render);
    }
  } finally {
    signal.removeEventListener("abort", stop);
    messages.stop();
    if (ticker !== undefined) clearInterval(ticker);
    live?.close();
  }
  return 0;
}

/** Watches every run, or one. */
export async function run(args: string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine("watch", args, OPTIONS);
  expectPositionals("watch", positionals, { min: 0, max: 1, names: "" });
  const runId = positionals[0];
  if (runId !== undefined && !isValidRunId(runId))
    throw new UsageError(`${JSON.stringify(runId)} is not a run id`);
  if (runId !== undefined && values.since !== undefined) {
    throw new UsageError("--since applies to all runs; a single run is always replayed from its first event");
  }
  const sinceMs = values.since === undefined ? undefined : parseDuration("since", values.since);
  const mode: Mode = values.json
    ? "json"
    : isInteractive(context.io.stdout, context.io.env)
      ? "live"
      : "plain";
  const target = natsTarget(values, context.io.env);
  const nc = await connectTarget(target, { name: "forkd-watch" });
  try {
    const resources = await openResources(nc, target.prefix);
    if (runId !== undefined) return await watchOne(resources, runId, mode, context);
    const title = `forkd watch ${target.servers.join(",")}${sinceMs === undefined ? "" : ` (since ${formatElapsed(sinceMs)} ago)`}`;
    return await watchAll(resources, sinceMs, mode, title, context);
  } finally {
    await nc.close().catch(() => undefined);
  }
}
