// Retention of finished runs on any nats-server from 2.9 (docs/operations.md, "Retention"): one
// daemon at a time, the holder of a lease in the daemons bucket, removes each run that ended longer
// ago than the window — its events (deleted one by one, found through the subject index), its parent
// index key and its registry entry (purges of the runs bucket's stream filtered on the key, which
// leave no delete marker behind). Every step is idempotent, so a sweep cut short is finished by
// the next one. A queued or running run is never touched, however old; nor is an ended one whose spec
// is still in the work queue (its daemon's ack was lost): its next delivery must find the ended log,
// or it would run the run again.
import {
  isTerminalRunStatus,
  PROTOCOL_VERSION,
  RETENTION_LEASE_KEY,
  type RetentionLease,
  type RunState,
  retentionLeaseCodec,
  runStateCodec,
} from "@forkd/protocol";
import { isWrongLastSequence } from "./jetstream-errors.js";
import {
  groupIndexKey,
  parentIndexKey,
  readStoredSpec,
  runEntriesFilter,
  runsKeySubject,
} from "./registry-index.js";
import type { ForkResources } from "./resources.js";
import { getEachMessage, scanStream } from "./stream-scan.js";

/** What one sweep did. */
export interface SweepResult {
  /** Finished runs removed (entry, index key and events). */
  runsRemoved: number;
  /** Finished runs kept because their spec is still in the work queue; a later sweep removes them. */
  runsKeptQueued: number;
  /** Registry entries read. */
  scanned: number;
}

/** Runs removed at once: each is ~20 requests (its events, two purges), and a sweep after a busy hour removes thousands. */
const SWEEP_CONCURRENCY = 64;
/** Expired runs read before they are removed, in one pass of a sweep. */
const SWEEP_PASS = 2_000;

/** True when `state` is a run the sweep removes at `cutoff`: ended, and ended at or before it. */
export function isExpiredRun(state: RunState, cutoff: number): boolean {
  return isTerminalRunStatus(state.status) && (state.ended_at ?? state.updated_at) <= cutoff;
}

/**
 * Deletes a run's events one by one, each found from the last with a `next_by_subj` get. A purge
 * filtered on the run's subject does the same in one request, but nats-server 2.9 walks the whole
 * stream for it (4 ms a run with 81k stored events, growing with the stream); a get by subject is
 * served from the subject index (the two requests per event cost 1.4 ms a run, whatever its size).
 */
async function removeEvents(resources: ForkResources, runId: string): Promise<void> {
  const stream = resources.subjects.streams.events;
  for await (const message of getEachMessage(resources, stream, {
    filter: resources.subjects.events(runId),
  })) {
    await resources.jsm.streams.deleteMessage(stream, message.seq, false);
  }
}

/**
 * Removes one finished run: its events, its parent and group index keys, then its registry entry up to the
 * revision that was read (a later write, such as a resubmission of the id, survives). The entry goes
 * last, so a removal cut short leaves what the next sweep needs to find the rest.
 */
export async function removeFinishedRun(
  resources: ForkResources,
  state: RunState,
  revision: number,
): Promise<void> {
  const runsStream = resources.subjects.bucketStreams.runs;
  await removeEvents(resources, state.run_id);
  if (state.parent_agent_id !== undefined) {
    await resources.jsm.streams.purge(runsStream, {
      filter: runsKeySubject(resources, parentIndexKey(state.parent_agent_id, state.run_id)),
    });
  }
  if (state.group_id !== undefined) {
    await resources.jsm.streams.purge(runsStream, {
      filter: runsKeySubject(resources, groupIndexKey(state.group_id, state.run_id)),
    });
  }
  await resources.jsm.streams.purge(runsStream, {
    filter: runsKeySubject(resources, state.run_id),
    seq: revision + 1,
  });
}

/**
 * Whether the run's spec is still in the work queue. A daemon acks a spec once it has recorded the
 * run's end; a spec still there means that ack was lost (the daemon died just before it, or its
 * connection dropped), and the spec will be delivered again. That delivery reads the run's log to
 * learn that it ended: removing the log first would have it run the run again.
 */
async function specStillQueued(resources: ForkResources, runId: string): Promise<boolean> {
  return (await readStoredSpec(resources, runId)) !== null;
}

/**
 * Removes every run that ended at least `retentionMs` before `now`, but for one whose spec is still
 * in the work queue (see {@link specStillQueued}). Reads the runs bucket's stream
 * from its oldest write and stops at the first written after the cutoff: a run written later cannot
 * have ended before it, so the work is the expired runs plus the live runs still at the head (queued
 * ones wait there; running ones rewrite their entries on every heartbeat and move to the tail).
 * Reads and removals alternate in passes of {@link SWEEP_PASS} runs: no consumer is held open while
 * the server purges (a reader kept waiting that long is dropped by the server).
 */
export async function sweepFinishedRuns(
  resources: ForkResources,
  options: { retentionMs: number; now?: number },
): Promise<SweepResult> {
  const cutoff = (options.now ?? Date.now()) - options.retentionMs;
  const result: SweepResult = { runsRemoved: 0, runsKeptQueued: 0, scanned: 0 };
  let fromSeq = 1;
  for (;;) {
    const expired: { state: RunState; revision: number }[] = [];
    let more = false;
    for await (const message of scanStream(resources, resources.subjects.bucketStreams.runs, {
      filter: runEntriesFilter(resources),
      fromSeq,
      batch: 512,
    })) {
      if (message.storedAtMs > cutoff) break;
      fromSeq = message.seq + 1;
      if (message.data.length === 0) continue;
      result.scanned++;
      let state: RunState;
      try {
        state = runStateCodec.decode(message.data);
      } catch {
        continue; // not a run entry this version reads: left to the bucket's own age limit
      }
      if (!isExpiredRun(state, cutoff)) continue;
      expired.push({ state, revision: message.seq });
      if (expired.length >= SWEEP_PASS) {
        more = true;
        break;
      }
    }
    for (let i = 0; i < expired.length; i += SWEEP_CONCURRENCY) {
      const removed = await Promise.all(
        expired.slice(i, i + SWEEP_CONCURRENCY).map(async ({ state, revision }) => {
          if (await specStillQueued(resources, state.run_id)) return false;
          await removeFinishedRun(resources, state, revision);
          return true;
        }),
      );
      for (const done of removed) {
        if (done) result.runsRemoved++;
        else result.runsKeptQueued++;
      }
    }
    if (!more) return result;
  }
}

/** What the holder of the retention lease writes into it. */
export type RetentionLeaseTerms = Omit<RetentionLease, "v" | "holder" | "until">;

/**
 * Takes or renews the retention lease for `holder` until `now + leaseMs`, by compare-and-set: the key
 * is created when absent, and updated at the revision read when `holder` has it or its term is over.
 * @returns whether `holder` holds the lease now.
 */
export async function holdRetentionLease(
  resources: ForkResources,
  holder: string,
  terms: RetentionLeaseTerms & { leaseMs: number; now?: number },
): Promise<boolean> {
  const now = terms.now ?? Date.now();
  const { leaseMs, now: _now, ...rest } = terms;
  const lease: RetentionLease = { v: PROTOCOL_VERSION, holder, until: now + leaseMs, ...rest };
  const bytes = retentionLeaseCodec.encode(lease);
  try {
    const current = await resources.daemons.get(RETENTION_LEASE_KEY);
    if (current?.operation !== "PUT" || current.length === 0) {
      await resources.daemons.create(RETENTION_LEASE_KEY, bytes);
      return true;
    }
    let held: RetentionLease | undefined;
    try {
      held = retentionLeaseCodec.decode(current.value);
    } catch {
      held = undefined; // unreadable: taken over like an expired one
    }
    if (held !== undefined && held.holder !== holder && held.until > now) return false;
    await resources.daemons.update(RETENTION_LEASE_KEY, bytes, current.revision);
    return true;
  } catch (error) {
    if (isWrongLastSequence(error)) return false; // another daemon took it first
    throw error;
  }
}

/** The retention lease as stored, or null when no daemon holds one. */
export async function readRetentionLease(resources: ForkResources): Promise<RetentionLease | null> {
  const entry = await resources.daemons.get(RETENTION_LEASE_KEY);
  if (entry?.operation !== "PUT" || entry.length === 0) return null;
  try {
    return retentionLeaseCodec.decode(entry.value);
  } catch {
    return null;
  }
}

/**
 * Gives the lease up if `holder` has it, so that another daemon takes it at its next tick. Resolves
 * when the lease is gone or is not `holder`'s (another daemon took it meanwhile).
 * @throws when NATS did not answer (a request that timed out): the lease may still be held.
 */
export async function releaseRetentionLease(resources: ForkResources, holder: string): Promise<void> {
  const entry = await resources.daemons.get(RETENTION_LEASE_KEY);
  if (entry?.operation !== "PUT" || entry.length === 0) return;
  let held: RetentionLease;
  try {
    held = retentionLeaseCodec.decode(entry.value);
  } catch {
    return;
  }
  if (held.holder !== holder) return;
  try {
    await resources.daemons.delete(RETENTION_LEASE_KEY, { previousSeq: entry.revision });
  } catch (error) {
    if (isWrongLastSequence(error)) return; // changed since the read: no longer `holder`'s to give up
    throw error;
  }
}
