// Shared prefixes in the object store, named by the SHA-256 of their bytes: a 48k-token prefix
// crosses the wire once for N forks, and prefixes over NATS's 1 MB max_payload still work.
import { createHash } from "node:crypto";
import { type ForkPrefix, forkPrefixCodec } from "@forkd/protocol";
import { ClientError } from "./errors.js";
import type { ForkResources } from "./resources.js";

/** Where a stored prefix is. */
export interface StoredPrefixRef {
  hash: string;
  size: number;
}

/** The bytes that are stored for a prefix, and their name. */
export function encodeStoredPrefix(prefix: ForkPrefix): { bytes: Uint8Array; ref: StoredPrefixRef } {
  const bytes = forkPrefixCodec.encode(prefix);
  const hash = createHash("sha256").update(bytes).digest("hex");
  return { bytes, ref: { hash, size: bytes.byteLength } };
}

/** Uploads `bytes` under `ref.hash` unless an object of that name and size is already there. */
export async function uploadPrefixBytes(
  resources: ForkResources,
  bytes: Uint8Array,
  ref: StoredPrefixRef,
): Promise<void> {
  try {
    const info = await resources.prefixes.info(ref.hash);
    if (info && !info.deleted && info.size === ref.size) return;
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
 * Fetches and verifies a stored prefix. Throws when it is missing or its bytes do not hash to its name.
 */
export async function downloadPrefix(resources: ForkResources, ref: StoredPrefixRef): Promise<ForkPrefix> {
  const bytes = await resources.prefixes.getBlob(ref.hash);
  if (!bytes) throw new ClientError("run_not_found", `prefix ${ref.hash} is not in the object store`);
  const hash = createHash("sha256").update(bytes).digest("hex");
  if (hash !== ref.hash || bytes.byteLength !== ref.size) {
    throw new ClientError(
      "prefix_upload_failed",
      `prefix ${ref.hash} is corrupt (got ${hash}, ${bytes.byteLength} bytes)`,
    );
  }
  return forkPrefixCodec.decode(bytes);
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
