// Shared prefixes in the object store, named by the SHA-256 of their bytes: a 48k-token prefix
// crosses the wire once for N forks, and prefixes over NATS's 1 MB max_payload still work. What the
// bytes are and how they are checked is prefix-encoding.ts; this module moves them.
import type { ForkPrefix } from "@forkd/protocol";
import { ClientError } from "./errors.js";
import { isUsablePrefix, readPrefixMeta } from "./prefix-collection.js";
import { encodeStoredPrefix, StoredPrefixReader, type StoredPrefixRef } from "./prefix-encoding.js";
import type { ForkResources } from "./resources.js";

/** Uploads `bytes` under `ref.hash` unless an object of that name and size is already there. */
export async function uploadPrefixBytes(
  resources: ForkResources,
  bytes: Uint8Array,
  ref: StoredPrefixRef,
): Promise<void> {
  try {
    const stored = await readPrefixMeta(resources, ref.hash);
    // An object being collected is uploaded again: the new upload's metadata makes the collector's
    // compare-and-set delete fail (prefix-collection.ts).
    if (stored && isUsablePrefix(stored.meta, ref.size)) return;
    await resources.prefixes.putBlob({ name: ref.hash, description: "forkd shared prefix" }, bytes);
  } catch (cause) {
    throw new ClientError(
      "prefix_upload_failed",
      `cannot store prefix ${ref.hash}: ${(cause as Error).message}`,
      {
        retryable: true,
        cause,
      },
    );
  }
}

/** Encodes and uploads a prefix; returns its reference. */
export async function uploadPrefix(resources: ForkResources, prefix: ForkPrefix): Promise<StoredPrefixRef> {
  const { bytes, ref } = encodeStoredPrefix(prefix);
  await uploadPrefixBytes(resources, bytes, ref);
  return ref;
}

/**
 * Fetches and verifies a stored prefix, reading no more than it may hold: a reference over `maxBytes`,
 * and an object whose stored size is not the announced one, are refused before a byte is read; the
 * hash is computed while the chunks stream in, and the read stops as soon as more bytes arrive than
 * announced. Throws `prefix_invalid` for all of these, `run_not_found` when the object is missing.
 * @param options.maxBytes the largest prefix this reader accepts. @unit bytes @default MAX_PREFIX_BYTES
 */
export async function downloadPrefix(
  resources: ForkResources,
  ref: StoredPrefixRef,
  options: { maxBytes?: number } = {},
): Promise<ForkPrefix> {
  const prefix = new StoredPrefixReader(ref, options.maxBytes);
  const info = await resources.prefixes.info(ref.hash);
  if (!info || info.deleted)
    throw new ClientError("run_not_found", `prefix ${ref.hash} is not in the object store`);
  prefix.checkStoredSize(info.size);
  const result = await resources.prefixes.get(ref.hash);
  if (!result) throw new ClientError("run_not_found", `prefix ${ref.hash} is not in the object store`);
  const reader = result.data.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      prefix.push(value);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return prefix.finish();
}

/**
 * Keeps recently used prefixes in memory (least recently used evicted first, bounded by bytes), and
 * shares one download between concurrent loads of the same hash.
 */
export class PrefixCache {
  readonly #maxBytes: number;
  readonly #entries = new Map<string, { prefix: Promise<ForkPrefix>; size: number }>();
  #bytes = 0;

  /** @param maxBytes total size of cached prefixes (by stored size). @unit bytes @default 268435456 */
  constructor(maxBytes = 256 * 1024 * 1024) {
    this.#maxBytes = maxBytes;
  }

  /** Number of cached prefixes. */
  get size(): number {
    return this.#entries.size;
  }

  /** Returns the cached prefix or loads it with `load`. */
  get(ref: StoredPrefixRef, load: (ref: StoredPrefixRef) => Promise<ForkPrefix>): Promise<ForkPrefix> {
    const hit = this.#entries.get(ref.hash);
    if (hit) {
      this.#entries.delete(ref.hash);
      this.#entries.set(ref.hash, hit);
      return hit.prefix;
    }
    const prefix = load(ref);
    const entry = { prefix, size: ref.size };
    this.#entries.set(ref.hash, entry);
    this.#bytes += ref.size;
    prefix.catch(() => this.#remove(ref.hash, entry));
    for (const [hash, oldest] of this.#entries) {
      if (this.#bytes <= this.#maxBytes || this.#entries.size <= 1) break;
      this.#remove(hash, oldest);
    }
    return prefix;
  }

  #remove(hash: string, entry: { size: number }): void {
    if (this.#entries.get(hash) === entry) {
      this.#entries.delete(hash);
      this.#bytes -= entry.size;
    }
  }
}
