// The run registry's common questions, answered without reading every run it holds
// (docs/architecture.md, "Registry index"):
// - queued and running runs: the subjects of the specs stream. A work queue holds exactly the specs of
//   the runs that have not ended (a daemon acks a spec when its run ends), so its subject list is an
//   index of the live runs that nothing has to maintain; one get per live run reads their entries.
// - the newest runs: the tail of the runs bucket's stream. With history 1 the stream holds each run's
//   latest revision once, in the order the runs were last written; reading back from the end finds
//   the most recently written N entries, however many older ones are stored.
// - one parent's runs: index keys `parent.<parent hash>.<run_id>` written beside the entry when the
//   run is queued, listed with a KV key filter; one group's runs the same way, `group.<group_id>.<run_id>`.
import { createHash } from "node:crypto";
import { type RunState, runStateCodec } from "@forkd/protocol";
import type { StoredMsg } from "@nats-io/jetstream";
import type { ForkResources } from "./resources.js";
import { getRunState, type RunStateEntry } from "./run-registry.js";
import { scanStream } from "./stream-scan.js";

/** First token of a parent index key. */
const PARENT_INDEX_TOKEN = "parent";

/**
 * The token that stands for a parent agent in index keys: a hash, because an agent id may hold
 * characters a key token cannot.
 */
export function parentToken(agentId: string): string {
  return createHash("sha256").update(agentId).digest("hex").slice(0, 32);
}

/** `parent.<hash of agentId>.<runId>`: the key that lists `runId` among `agentId`'s runs. */
export function parentIndexKey(agentId: string, runId: string): string {
  return `${PARENT_INDEX_TOKEN}.${parentToken(agentId)}.${runId}`;
}

/** First token of a group index key. */
const GROUP_INDEX_TOKEN = "group";

/** `group.<groupId>.<runId>`: the key that lists `runId` among `groupId`'s runs (a group id is a token already). */
export function groupIndexKey(groupId: string, runId: string): string {
  return `${GROUP_INDEX_TOKEN}.${groupId}.${runId}`;
}

/** The filter subject of run entries in the runs bucket's stream: one token after the bucket, so no index key. */
export function runEntriesFilter(resources: ForkResources): string {
  return `$KV.${resources.subjects.buckets.runs}.*`;
}

/** The stream subject of one key of the runs bucket. */
export function runsKeySubject(resources: ForkResources, key: string): string {
  return `$KV.${resources.subjects.buckets.runs}.${key}`;
}

/** Ids of the runs whose spec is in the work queue: every queued and running run (and nothing else). */
export async function liveRunIds(resources: ForkResources): Promise<string[]> {
  const info = await resources.jsm.streams.info(resources.subjects.streams.specs, {
    subjects_filter: resources.subjects.allSpecs,
  });
  const ids: string[] = [];
  for (const subject of Object.keys(info.state.subjects ?? {})) {
    const runId = resources.subjects.runIdOf(subject);
    if (runId !== undefined) ids.push(runId);
  }
  return ids;
}

/**
 * The spec stored in the work queue for `runId` (one get by subject), or null when none is: the run has
 * not been forked yet, or it ended and its daemon acked the spec.
 */
export function readStoredSpec(resources: ForkResources, runId: string): Promise<StoredMsg | null> {
  return resources.jsm.streams.getMessage(resources.subjects.streams.specs, {
    last_by_subj: resources.subjects.spec(runId),
  });
}

/** The registry entries of `runIds`, one get each, in parallel; a run with no (or a malformed) entry is left out. */
export async function entriesOfRuns(
  resources: ForkResources,
  runIds: readonly string[],
): Promise<RunStateEntry[]> {
  const entries = await Promise.all(
    runIds.map((runId) =>
      getRunState(resources, runId).catch(
        () => null, // a malformed entry: not ours to show
      ),
    ),
  );
  return entries.filter((entry): entry is RunStateEntry => entry !== null);
}

async function statesOf(resources: ForkResources, runIds: readonly string[]): Promise<RunState[]> {
  return (await entriesOfRuns(resources, runIds)).map((entry) => entry.state);
}

/** The registry entries of every queued and running run (see {@link liveRunIds}). */
export async function liveRuns(resources: ForkResources): Promise<RunState[]> {
  return statesOf(resources, await liveRunIds(resources));
}

/**
 * The `count` most recently written run entries, newest first, read from the end of the runs
 * bucket's stream: the work grows with `count` and with how many writes live runs make, not with
 * how many runs are stored.
 */
export async function newestRuns(resources: ForkResources, count: number): Promise<RunState[]> {
  if (count <= 0) return [];
  const stream = resources.subjects.bucketStreams.runs;
  const { first_seq: firstSeq, last_seq: lastSeq } = (await resources.jsm.streams.info(stream)).state;
  const found: { seq: number; state: RunState }[] = [];
  let before = lastSeq + 1;
  let window = Math.max(64, count * 2);
  // Newer windows first: once one holds `count` entries, nothing before it can be among the newest.
  while (found.length < count && before > firstSeq) {
    const fromSeq = Math.max(firstSeq, before - window);
    const inWindow: { seq: number; state: RunState }[] = [];
    for await (const message of scanStream(resources, stream, {
      filter: runEntriesFilter(resources),
      fromSeq,
      beforeSeq: before,
    })) {
      if (message.data.length === 0) continue; // a delete or purge marker
      try {
        inWindow.push({ seq: message.seq, state: runStateCodec.decode(message.data) });
      } catch {
        // a malformed entry: not ours to show
      }
    }
    found.push(...inWindow.reverse());
    before = fromSeq;
    window *= 4;
  }
  return found.slice(0, count).map(({ state }) => state);
}

/**
 * The keys of a bucket that match `filter` (a KV key filter: `*` one token, `>` the rest), read from
 * the bucket stream's list of subjects in one request. Not `kv.keys()`: that reads through a consumer,
 * which can wait for entries rewritten or expired before it delivers them (the daemons bucket is
 * rewritten several times a second) — the hang `forkd ps` had with its own scans (#23). A key whose
 * last message is a delete marker is listed too: a get tells it apart.
 */
export async function bucketKeys(
  resources: ForkResources,
  bucket: "runs" | "daemons",
  filter: string,
): Promise<string[]> {
  const prefix = `$KV.${resources.subjects.buckets[bucket]}.`;
  const info = await resources.jsm.streams.info(resources.subjects.bucketStreams[bucket], {
    subjects_filter: `${prefix}${filter}`,
  });
  return Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
}

async function indexedRunIds(resources: ForkResources, filter: string): Promise<string[]> {
  const runIds: string[] = [];
  for (const key of await bucketKeys(resources, "runs", filter)) {
    const runId = key.split(".").at(-1);
    if (runId) runIds.push(runId);
  }
  return runIds;
}

/** Every run of group `groupId` that the registry still holds, newest first. */
export async function runsOfGroup(resources: ForkResources, groupId: string): Promise<RunState[]> {
  return (await entriesOfGroup(resources, groupId)).map((entry) => entry.state);
}

/** The registry entries (with their revisions) of {@link runsOfGroup}. */
export async function entriesOfGroup(resources: ForkResources, groupId: string): Promise<RunStateEntry[]> {
  return ofGroup(await entriesOfRuns(resources, await runIdsOfGroup(resources, groupId)), groupId);
}

/**
 * The ids group `groupId`'s index keys list (one request, no entry read). An index key is written by a
 * parent: an id listed here is of the group only if its entry says so ({@link ofGroup}).
 */
export function runIdsOfGroup(resources: ForkResources, groupId: string): Promise<string[]> {
  return indexedRunIds(resources, `${GROUP_INDEX_TOKEN}.${groupId}.*`);
}

/** The entries of `entries` that belong to group `groupId`, newest first. */
export function ofGroup(entries: readonly RunStateEntry[], groupId: string): RunStateEntry[] {
  return entries
    .filter((entry) => entry.state.group_id === groupId)
    .sort((a, b) => b.state.created_at - a.state.created_at);
}

/** Every run `agentId` forked that the registry still holds, newest first (one key listing, one get per run). */
export async function runsOfParent(resources: ForkResources, agentId: string): Promise<RunState[]> {
  return (await entriesOfParent(resources, agentId)).map((entry) => entry.state);
}

/** The registry entries (with their revisions) of {@link runsOfParent}. */
export async function entriesOfParent(resources: ForkResources, agentId: string): Promise<RunStateEntry[]> {
  return ofParent(await entriesOfRuns(resources, await runIdsOfParent(resources, agentId)), agentId);
}

/**
 * The ids parent `agentId`'s index keys list (one request, no entry read). An index key is written by a
 * parent: an id listed here is of the parent only if its entry says so ({@link ofParent}).
 */
export function runIdsOfParent(resources: ForkResources, agentId: string): Promise<string[]> {
  return indexedRunIds(resources, `${PARENT_INDEX_TOKEN}.${parentToken(agentId)}.*`);
}

/** The entries of `entries` that belong to parent `agentId`, newest first. */
export function ofParent(entries: readonly RunStateEntry[], agentId: string): RunStateEntry[] {
  return entries
    .filter((entry) => entry.state.parent_agent_id === agentId)
    .sort((a, b) => b.state.created_at - a.state.created_at);
}
