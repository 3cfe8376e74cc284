// The run registry (JetStream KV): one entry per run, changed only by compare-and-set so that
// concurrent writers (a parent's abort, a daemon's claim, a stale daemon's heartbeat) never lose updates.

import { ProtocolError, type RunState, runStateCodec } from "@forkd/protocol";
import { isWrongLastSequence } from "./jetstream-errors.js";
import type { ForkResources } from "./resources.js";

/** A registry entry with the revision to compare against. */
export interface RunStateEntry {
  state: RunState;
  revision: number;
}

/** Reads a run's entry; null when there is none. */
export async function getRunState(resources: ForkResources, runId: string): Promise<RunStateEntry | null> {
  const entry = await resources.runs.get(runId);
  if (entry?.operation !== "PUT" || entry.length === 0) return null;
  return { state: runStateCodec.decode(entry.value), revision: entry.revision };
}

/**
 * Creates a run's entry in one round trip; rejects with JetStream's wrong-last-sequence error when the
 * key has any history. `KV.create` answers such a refusal with a second round trip (a read, to take
 * over a key whose last operation was a delete); the dispatch path cannot spare it — a daemon's claim
 * reads the entry beside this write anyway, and falls back to {@link updateRunState}, which does take
 * over a deleted key.
 */
export function createRunEntry(resources: ForkResources, runId: string, bytes: Uint8Array): Promise<number> {
  return resources.runs.put(runId, bytes, { previousSeq: 0 });
}

/**
 * A run's entry as a compare-and-set sees it. An entry that does not decode (every parent of the
 * account can write the bucket) reads as no state at its revision: a mutation then decides as for an
 * absent entry, and its write replaces the unreadable one instead of failing on it for ever.
 */
async function readForUpdate(
  resources: ForkResources,
  runId: string,
): Promise<{ state: RunState | null; revision: number } | null> {
  const entry = await resources.runs.get(runId);
  if (entry?.operation !== "PUT" || entry.length === 0) return null;
  try {
    return { state: runStateCodec.decode(entry.value), revision: entry.revision };
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    return { state: null, revision: entry.revision };
  }
}

/** What a mutation decides: write this state, or leave the entry alone. */
export type RunStateMutation = RunState | "unchanged";

/**
 * Applies `mutate` with compare-and-set, retrying on conflict.
 * @returns the entry as written, or as found when `mutate` returned `"unchanged"`.
 */
export async function updateRunState(
  resources: ForkResources,
  runId: string,
  mutate: (current: RunState | null) => RunStateMutation,
  options: {
    maxAttempts?: number;
    /** The entry as the caller just read it (null: absent), to save the first read. */
    known?: RunStateEntry | null;
  } = {},
): Promise<RunStateEntry | null> {
  const maxAttempts = options.maxAttempts ?? 20;
  for (let attempt = 1; ; attempt++) {
    const current =
      attempt === 1 && options.known !== undefined ? options.known : await readForUpdate(resources, runId);
    const next = mutate(current?.state ?? null);
    if (next === "unchanged") return current?.state ? (current as RunStateEntry) : null;
    const bytes = runStateCodec.encode(next);
    try {
      const revision = current
        ? await resources.runs.update(runId, bytes, current.revision)
        : await resources.runs.create(runId, bytes);
      return { state: next, revision };
    } catch (error) {
      // Only a lost race is worth another try (a permission refusal or an outage is not).
      if (!isWrongLastSequence(error) || attempt >= maxAttempts) throw error;
    }
  }
}
