// An abort or a stop of a run that no daemon runs yet: its spec waits in the work queue, perhaps
// behind hundreds of others. Rather than leave the run queued until a daemon has a free slot (the
// registry flag then ends it at pickup), one daemon — the abort subject's queue-group member — ends it
// now: it claims the run by compare-and-set from `queued`, publishes its terminal event under that
// attempt, records it and removes the spec. A daemon that pulled the spec meanwhile is fenced by the
// claim or by the log (docs/protocol.md, "Stopping a queued run").
import { type ForkResources, getRunState, lastLoggedEvent } from "@forkd/client";
import { updateRunState } from "@forkd/client/internal";
import {
  type AbortRequest,
  emptyUsageTotals,
  type ForkEventBody,
  type ForkSpec,
  forkSpecCodec,
  isTerminalEvent,
} from "@forkd/protocol";
import { RunEventPublisher } from "./event-publisher.js";
import type { DaemonLogger } from "./logger.js";
import type { DaemonMetrics } from "./metrics.js";
import { recordTerminal } from "./run-ending.js";
import { abortAuthorized } from "./run-executor.js";

/** What {@link endQueuedRun} needs. */
export interface QueuedControlDeps {
  resources: ForkResources;
  daemonId: string;
  logger: DaemonLogger;
  metrics?: DaemonMetrics | undefined;
}

/** The stored spec of a run: the last message on its subject (a work queue holds one per live run). */
async function storedSpec(
  resources: ForkResources,
  runId: string,
): Promise<{ spec: ForkSpec; seq: number } | null> {
  const stored = await resources.jsm.streams
    .getMessage(resources.subjects.streams.specs, { last_by_subj: resources.subjects.spec(runId) })
    .catch(() => null);
  if (stored === null) return null;
  try {
    const spec = forkSpecCodec.decode(stored.data);
    return spec.run_id === runId ? { spec, seq: stored.seq } : null;
  } catch {
    return null; // a malformed spec fails its run at pickup
  }
}

/**
 * Ends a queued run that `request` (an abort or a stop with the owner's proof) names: `aborted`, or
 * `completed` with `stop: "stopped"` and nothing done. Returns false, changing nothing, when the run is
 * not queued (a daemon runs it and obeys the request itself), its spec is not stored yet (the registry
 * flag ends it at pickup), the proof is wrong, or another writer won the race.
 */
export async function endQueuedRun(deps: QueuedControlDeps, request: AbortRequest): Promise<boolean> {
  const { resources, daemonId } = deps;
  const runId = request.run_id;
  // The reads in one round trip.
  const [registered, stored] = await Promise.all([
    getRunState(resources, runId),
    storedSpec(resources, runId),
  ]);
  if (registered === null || registered.state.status !== "queued" || stored === null) return false;
  // A run never claimed has no log; one handed back to the queue has one to append to.
  const last = registered.state.attempt === 0 ? null : await lastLoggedEvent(resources, runId);
  // Only the spec that owns the run speaks for it.
  const specSeq = registered.state.spec_seq ?? stored.seq;
  if (specSeq !== stored.seq) return false;
  const spec = stored.spec;
  const mode = request.mode ?? "abort";
  if (!abortAuthorized(spec.owner_token ?? null, runId, request.proof, mode)) {
    deps.metrics?.refusedControls.inc({ kind: mode });
    deps.logger.warn(
      { runId, code: `${mode}_refused` },
      `a ${mode} without the owner's proof: the queued run stays`,
    );
    return false;
  }
  if (last && isTerminalEvent(last.event)) return false;
  const attempt = registered.state.attempt + 1;
  const now = Date.now();
  const flag = {
    reason: request.reason,
    requested_at: request.requested_at,
    ...(request.by !== undefined ? { by: request.by } : {}),
    ...(request.proof !== undefined ? { proof: request.proof } : {}),
    ...(request.mode !== undefined ? { mode: request.mode } : {}),
  };
  // A claim like a daemon's, from `queued` only: a daemon that claims first keeps the run. Were the
  // log not empty after all, the publish below is fenced by its expected last sequence.
  const claimed = await updateRunState(
    resources,
    runId,
    (current) => {
      if (current?.status !== "queued" || current.attempt !== registered.state.attempt) return "unchanged";
      return { ...current, status: "running", attempt, daemon_id: daemonId, updated_at: now, abort: flag };
    },
    { known: registered },
  );
  if (claimed?.state.attempt !== attempt || claimed.state.daemon_id !== daemonId) return false;
  const publisher = new RunEventPublisher({
    js: resources.js,
    subjects: resources.subjects,
    runId,
    attempt,
    position: { lastSeq: last?.event.seq ?? 0, lastStreamSeq: last?.streamSeq ?? 0 },
    groupId: spec.group_id,
  });
  const terminal: ForkEventBody =
    mode === "stop"
      ? {
          type: "completed",
          result: {
            final_text: "",
            usage: emptyUsageTotals(),
            turns: 0,
            tool_uses: 0,
            duration_ms: 0,
            cache_shared: spec.prefix.kind !== "none",
            stop: "stopped",
            stop_reason: request.reason,
          },
        }
      : { type: "aborted", reason: request.reason, usage: emptyUsageTotals() };
  const event = await publisher.publish(terminal);
  await Promise.all([
    // The claim's own write is the entry to change: no read before it (a cascade's many small
    // JetStream API requests queue behind each other on the server).
    recordTerminal(resources, runId, event, attempt, undefined, claimed),
    resources.jsm.streams.deleteMessage(resources.subjects.streams.specs, specSeq).catch(() => false),
  ]);
  deps.metrics?.runsEnded.inc({ outcome: event.type });
  deps.metrics?.abortLatency.observe(Math.max(0, Date.now() - request.requested_at) / 1000);
  deps.logger.info({ runId, outcome: event.type }, "queued run ended before any daemon ran it");
  return true;
}
