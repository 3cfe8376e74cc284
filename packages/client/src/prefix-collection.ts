// Collection of unused prefixes in the object store (docs/operations.md, "Retention"), safe against
// a fork published while its prefix is being collected. Three parties, each with one rule:
// - the collector (the retention lease holder) first marks each candidate — an object whose last use
//   is older than the window — as being collected, by a compare-and-set write of its metadata; then
//   reads which prefixes queued and running runs refer to; then deletes each marked object no run
//   refers to, again by compare-and-set on the marked metadata, so that any write in between (a use,
//   a re-upload) keeps the object;
// - a parent, after it published a spec that refers to a stored prefix, confirms the object: missing
//   or marked, it uploads it again; older than a quarter of the window, it records the use;
// - a daemon that finds a referenced prefix missing waits for it (run-executor.ts) instead of failing.
// A spec published before the mark is seen by the reference read; one published after it is followed
// by its parent's confirmation, which sees the mark or the deletion and uploads again.

import { JsHeaders } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { isWrongLastSequence } from "./jetstream-errors.js";
import type { StoredPrefixRef } from "./prefix-encoding.js";
import type { ForkResources } from "./resources.js";
import { getEachMessage, scanStream } from "./stream-scan.js";

/** Metadata header that marks an object as being collected. */
export const COLLECTING_HEADER = "Forkd-Collecting";

/** An object's metadata as the object store keeps it (the fields forkd reads). */
interface ObjectMeta {
  name: string;
  nuid: string;
  size: number;
  mtime: string;
  deleted?: boolean;
  headers?: Record<string, string[]>;
  [field: string]: unknown;
}

/** Stored metadata and the stream sequence it was written at (the revision for compare-and-set). */
export interface PrefixMeta {
  meta: ObjectMeta;
  revision: number;
}

function metaSubject(resources: ForkResources, name: string): string {
  return `$O.${resources.subjects.buckets.prefixes}.M.${Buffer.from(name).toString("base64url")}${"=".repeat((3 - (Buffer.byteLength(name) % 3)) % 3)}`;
}

/** The stored metadata of object `name`, or null when it was never stored. */
export async function readPrefixMeta(resources: ForkResources, name: string): Promise<PrefixMeta | null> {
  const stored = await resources.jsm.streams.getMessage(resources.subjects.bucketStreams.prefixes, {
    last_by_subj: metaSubject(resources, name),
  });
  if (!stored) return null;
  return { meta: stored.json<ObjectMeta>(), revision: stored.seq };
}

/** Writes `meta` in place of the revision read; false when another write came first. */
async function replaceMeta(
  resources: ForkResources,
  meta: ObjectMeta,
  revision: number,
): Promise<number | false> {
  const h = natsHeaders();
  h.set(JsHeaders.RollupHdr, JsHeaders.RollupValueSubject);
  try {
    const ack = await resources.js.publish(metaSubject(resources, meta.name), JSON.stringify(meta), {
      headers: h,
      expect: { lastSubjectSequence: revision },
    });
    return ack.seq;
  } catch (error) {
    if (isWrongLastSequence(error)) return false;
    throw error;
  }
}

/** True when the metadata is a live object of `size` bytes that nobody is collecting. */
export function isUsablePrefix(meta: ObjectMeta, size: number): boolean {
  return meta.deleted !== true && meta.size === size && meta.headers?.[COLLECTING_HEADER] === undefined;
}

/**
 * What a parent does after publishing a spec that refers to `ref`: a missing, deleted or marked
 * object is uploaded again (`upload`); one last used longer than `touchAfterMs` ago gets its use
 * recorded. Returns whether it uploaded.
 */
export async function confirmPrefix(
  resources: ForkResources,
  ref: StoredPrefixRef,
  options: { touchAfterMs: number; upload: () => Promise<void>; now?: number },
): Promise<boolean> {
  const stored = await readPrefixMeta(resources, ref.hash);
  if (!stored || !isUsablePrefix(stored.meta, ref.size)) {
    await options.upload();
    return true;
  }
  const now = options.now ?? Date.now();
  if (now - Date.parse(stored.meta.mtime) > options.touchAfterMs) {
    // Lost to another write (a collector's mark, another parent's touch): look again.
    const touched = await replaceMeta(
      resources,
      { ...stored.meta, mtime: new Date(now).toISOString() },
      stored.revision,
    );
    if (touched === false) return confirmPrefix(resources, ref, options);
  }
  return false;
}

/** Hashes of the stored prefixes that queued and running runs refer to (their specs in the work queue). */
export async function referencedPrefixes(resources: ForkResources): Promise<Set<string>> {
  const hashes = new Set<string>();
  for await (const message of getEachMessage(resources, resources.subjects.streams.specs, {
    filter: resources.subjects.allSpecs,
  })) {
    try {
      const prefix = message.json<{ prefix?: { kind?: unknown; hash?: unknown } }>().prefix;
      if (prefix?.kind === "ref" && typeof prefix.hash === "string") hashes.add(prefix.hash);
    } catch {
      // not a spec this version reads: it refers to nothing
    }
  }
  return hashes;
}

/** Marks every object last used at or before `cutoff` as being collected; returns the marked ones. */
export async function markUnusedPrefixes(
  resources: ForkResources,
  cutoff: number,
  now = Date.now(),
): Promise<PrefixMeta[]> {
  const marked: PrefixMeta[] = [];
  for await (const message of scanStream(resources, resources.subjects.bucketStreams.prefixes, {
    filter: `$O.${resources.subjects.buckets.prefixes}.M.>`,
  })) {
    let meta: ObjectMeta;
    try {
      meta = message.json<ObjectMeta>();
    } catch {
      continue;
    }
    if (meta.deleted === true || !(Date.parse(meta.mtime) <= cutoff)) continue;
    const mark = {
      ...meta,
      headers: { ...meta.headers, [COLLECTING_HEADER]: [new Date(now).toISOString()] },
    };
    const revision = await replaceMeta(resources, mark, message.seq);
    if (revision !== false) marked.push({ meta: mark, revision });
  }
  return marked;
}

/**
 * Deletes a marked object unless its metadata changed since the mark (a use or a re-upload), then
 * removes its chunks. Returns whether it deleted.
 */
export async function deleteMarkedPrefix(resources: ForkResources, marked: PrefixMeta): Promise<boolean> {
  const tombstone = { ...marked.meta, deleted: true, size: 0, chunks: 0, digest: "" };
  if ((await replaceMeta(resources, tombstone, marked.revision)) === false) return false;
  await resources.jsm.streams.purge(resources.subjects.bucketStreams.prefixes, {
    filter: `$O.${resources.subjects.buckets.prefixes}.C.${marked.meta.nuid}`,
  });
  return true;
}

/**
 * Removes the stored prefixes that no queued or running run refers to and that were last used at
 * least `retentionMs` before `now`. Returns how many it removed.
 */
export async function collectUnusedPrefixes(
  resources: ForkResources,
  options: { retentionMs: number; now?: number },
): Promise<number> {
  const now = options.now ?? Date.now();
  const marked = await markUnusedPrefixes(resources, now - options.retentionMs, now);
  if (marked.length === 0) return 0;
  // Read after marking: a spec published before a mark is seen here, and the parent of one published
  // after it finds the mark when it confirms the prefix.
  const referenced = await referencedPrefixes(resources);
  let removed = 0;
  for (const candidate of marked) {
    if (referenced.has(candidate.meta.name)) {
      // In use after all: unmarked, unless another write (a re-upload) came first.
      const { [COLLECTING_HEADER]: _mark, ...others } = candidate.meta.headers ?? {};
      await replaceMeta(resources, { ...candidate.meta, headers: others }, candidate.revision);
      continue;
    }
    if (await deleteMarkedPrefix(resources, candidate)) removed++;
  }
  return removed;
}
