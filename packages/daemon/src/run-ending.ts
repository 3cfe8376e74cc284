// Ending a run in the registry, and failing a run that no attempt has claimed (a spec that cannot
// be decoded, a spec that exhausted max_deliver): both the executor and the advisory handler do it.
import { type ForkResources, lastLoggedEvent, type RunStateEntry } from "@forkd/client";
import { updateRunState } from "@forkd/client/internal";
import {
  emptyUsageTotals,
  type ForkEvent,
  isTerminalEvent,
  queuedRunState,
  type RunState,
  type WireError,
} from "@forkd/protocol";
import { RunEventPublisher } from "./event-publisher.js";
import type { DaemonLogger } from "./logger.js";
import { priorAttempt, readRunState } from "./registry-trust.js";

/** Records a run's terminal event in the registry, unless a newer attempt owns the entry. */
export async function recordTerminal(
  resources: ForkResources,
  runId: string,
  event: ForkEvent,
  attempt: number,
  specSeq?: number,
  /** The run's registry entry as this daemon last wrote it, to save the first read. */
  known?: RunStateEntry,
): Promise<void> {
  if (!isTerminalEvent(event)) return;
  const now = Date.now();
  const usage = event.type === "completed" ? event.result.usage : event.usage;
  await updateRunState(
    resources,
    runId,
    (current) => {
      if (current && current.attempt > attempt) return "unchanged";
      const next: RunState = {
        ...(current ?? queuedRunState({ runId, createdAt: now, now, specSeq })),
        status: event.type,
        attempt: Math.max(current?.attempt ?? 0, attempt),
        last_seq: event.seq,
        updated_at: now,
        ended_at: now,
        usage,
      };
      if (event.type === "failed") next.error = event.error;
      return next;
    },
    known === undefined ? {} : { known },
  );
}

/**
 * Fails a run with no claim to fence with: appends `failed` after whatever its log holds (nothing,
 * when the log already ended) and records it, naming the failing spec as the run's owner when the
 * registry had no entry. Returns false when the run had already ended.
 */
export async function failUnclaimedRun(
  resources: ForkResources,
  runId: string,
  error: WireError,
  /** The failing spec: its stream sequence, and how often it was delivered. */
  failing: { specSeq: number; deliveries: number },
  logger: DaemonLogger,
): Promise<boolean> {
  const last = await lastLoggedEvent(resources, runId).catch(() => null);
  if (last && isTerminalEvent(last.event)) return false;
  const current = await readRunState(resources, runId, logger);
  const attempt = priorAttempt(current?.state.attempt ?? 0, failing.deliveries, last) + 1;
  const publisher = new RunEventPublisher({
    js: resources.js,
    subjects: resources.subjects,
    runId,
    attempt,
    position: { lastSeq: last?.event.seq ?? 0, lastStreamSeq: last?.streamSeq ?? 0 },
  });
  const event = await publisher.publish({ type: "failed", error, usage: emptyUsageTotals() });
  await recordTerminal(resources, runId, event, attempt, failing.specSeq);
  return true;
}
