// What a shared prefix is stored as, and how stored bytes are checked and read back: the prefix
// codec's bytes named by their SHA-256. Pure: prefix-store.ts moves these bytes through the object store.
import { createHash, type Hash } from "node:crypto";
import { type ForkPrefix, forkPrefixCodec, MAX_PREFIX_BYTES } from "@forkd/protocol";
import { ClientError } from "./errors.js";

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

/**
 * Reads a stored prefix back from its chunks, reading no more than it may hold: a reference over
 * `maxBytes` is refused on construction, an object whose stored size is not the announced one by
 * {@link checkStoredSize}, and a chunk that brings more bytes than announced by {@link push}, each
 * before a byte more is read. The hash is computed as the chunks come. Every refusal is a
 * `prefix_invalid` ClientError.
 */
export class StoredPrefixReader {
  readonly #ref: StoredPrefixRef;
  readonly #hasher: Hash = createHash("sha256");
  readonly #chunks: Uint8Array[] = [];
  #received = 0;

  /** @param maxBytes the largest prefix this reader accepts. @unit bytes @default MAX_PREFIX_BYTES */
  constructor(ref: StoredPrefixRef, maxBytes: number = MAX_PREFIX_BYTES) {
    if (ref.size > maxBytes) {
      throw new ClientError(
        "prefix_invalid",
        `prefix ${ref.hash} announces ${ref.size} bytes; at most ${maxBytes} are read`,
      );
    }
    this.#ref = ref;
  }

  /** Refuses an object whose stored size is not the one its reference announces. @param size bytes */
  checkStoredSize(size: number): void {
    if (size !== this.#ref.size) {
      throw new ClientError(
        "prefix_invalid",
        `prefix ${this.#ref.hash} is stored with ${size} bytes, not the ${this.#ref.size} its reference announces`,
      );
    }
  }

  /** Takes the next chunk; refuses it when it brings more bytes than announced. */
  push(chunk: Uint8Array): void {
    this.#received += chunk.byteLength;
    if (this.#received > this.#ref.size) {
      throw new ClientError(
        "prefix_invalid",
        `prefix ${this.#ref.hash} holds more than the ${this.#ref.size} bytes announced`,
      );
    }
    this.#hasher.update(chunk);
    this.#chunks.push(chunk);
  }

  /** The prefix, once every chunk is in: refused unless the bytes have the announced hash and size. */
  finish(): ForkPrefix {
    const hash = this.#hasher.digest("hex");
    if (hash !== this.#ref.hash || this.#received !== this.#ref.size) {
      throw new ClientError(
        "prefix_invalid",
        `prefix ${this.#ref.hash} is corrupt (got ${hash}, ${this.#received} bytes)`,
      );
    }
    return forkPrefixCodec.decode(Buffer.concat(this.#chunks, this.#received));
  }
}
