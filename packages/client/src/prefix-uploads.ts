// A parent's uploads of prefixes to the object store, and the choice of sending a small prefix inline
// or by reference. A prefix above the inline threshold always goes by reference. One below it goes
// inline while it is new: most prefixes are forked once (a parent's conversation grows between its
// forks), and an upload would only add a round trip before the spec. A small prefix forked a second
// time is a parent forking siblings from one turn; it is uploaded then, in the background, and its
// forks go by reference once it is stored: a ~500-byte spec instead of the prefix's bytes again, to
// the server, into the specs stream and to the daemon (bench #2 at 4k: 0.37–0.45 ms less per
// dispatch, A/B in one process).
import type { StoredPrefixRef } from "./prefix-encoding.js";

/** Uploads (and small prefixes seen once) remembered at most; past it the oldest are forgotten. */
export const MAX_REMEMBERED_PREFIXES = 4096;

/** Options of {@link PrefixUploads}. */
export interface PrefixUploadsOptions {
  /**
   * An upload older than this is not relied on (the object may be gone by the time a daemon reads
   * it): the next fork that needs it uploads again. @unit ms
   */
  staleAfterMs: number;
  /** Told when a background upload of a small prefix fails (its forks stay inline). */
  onBackgroundError?: (error: unknown, ref: StoredPrefixRef) => void;
  /** @default Date.now */
  now?: () => number;
  /** @default MAX_REMEMBERED_PREFIXES */
  maxRemembered?: number;
}

interface Upload {
  done: Promise<void>;
  /** When it was started. @unit ms since the epoch */
  at: number;
  /** The object store confirmed it. */
  stored: boolean;
}

/** Uploads of prefixes by hash: one per prefix, made again once stale; forgotten on failure. */
export class PrefixUploads {
  readonly #upload: (bytes: Uint8Array, ref: StoredPrefixRef) => Promise<void>;
  readonly #options: PrefixUploadsOptions;
  readonly #now: () => number;
  readonly #maxRemembered: number;
  readonly #uploads = new Map<string, Upload>();
  // Small prefixes forked once and not uploaded, by hash.
  readonly #seenOnce = new Set<string>();

  /** @param upload stores `bytes` under `ref`; resolves once the object store has them. */
  constructor(
    upload: (bytes: Uint8Array, ref: StoredPrefixRef) => Promise<void>,
    options: PrefixUploadsOptions,
  ) {
    this.#upload = upload;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#maxRemembered = options.maxRemembered ?? MAX_REMEMBERED_PREFIXES;
  }

  /**
   * For a prefix that goes by reference: the upload its spec waits for — the one made before, unless
   * it is stale or failed, else one started now — or undefined when a fresh upload is stored already:
   * nothing to wait for, so the spec goes out in the fork's first microtask (see `NatsForkSubagent`).
   */
  forReference(bytes: Uint8Array, ref: StoredPrefixRef): Promise<void> | undefined {
    const upload = this.#uploads.get(ref.hash);
    if (upload && this.#isFresh(upload)) return upload.stored ? undefined : upload.done;
    return this.#start(bytes, ref).done;
  }

  /**
   * For a prefix small enough to go inline: true when a fresh upload of it is stored, so that a spec
   * may refer to it without waiting. Otherwise false (send it inline), and a prefix forked before
   * (or whose upload is stale) starts uploading in the background.
   */
  storedForReuse(bytes: Uint8Array, ref: StoredPrefixRef): boolean {
    const upload = this.#uploads.get(ref.hash);
    if (upload && this.#isFresh(upload)) return upload.stored;
    if (upload !== undefined || this.#seenOnce.delete(ref.hash)) {
      this.#start(bytes, ref).done.catch((error: unknown) => this.#options.onBackgroundError?.(error, ref));
    } else {
      this.#seenOnce.add(ref.hash);
      if (this.#seenOnce.size > this.#maxRemembered)
        this.#seenOnce.delete(this.#seenOnce.values().next().value!);
    }
    return false;
  }

  #isFresh(upload: Upload): boolean {
    return this.#now() - upload.at <= this.#options.staleAfterMs;
  }

  #start(bytes: Uint8Array, ref: StoredPrefixRef): Upload {
    const upload: Upload = { done: this.#upload(bytes, ref), at: this.#now(), stored: false };
    this.#uploads.delete(ref.hash); // set again below, as the newest
    this.#uploads.set(ref.hash, upload);
    if (this.#uploads.size > this.#maxRemembered) this.#uploads.delete(this.#uploads.keys().next().value!);
    upload.done.then(
      () => {
        upload.stored = true;
      },
      () => {
        if (this.#uploads.get(ref.hash) === upload) this.#uploads.delete(ref.hash);
      },
    );
    return upload;
  }
}
