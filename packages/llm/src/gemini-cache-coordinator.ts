// How the daemons of one account agree on a Gemini fan-out's explicit cache: one of them creates it
// (or renews it) while the others wait for what it made, so that siblings launched at once on several
// daemons make one cache, and each renewal's storage is billed once. The client knows only this
// interface; the daemon implements it on its NATS KV bucket (packages/daemon/src/gemini-cache-lock.ts).

/** An explicit cache as the coordinating daemons record it. */
export interface GeminiCacheRecord {
  /** Its resource name (`cachedContents/…`); `null`: the prefix is below the model's cache minimum. */
  name: string | null;
  /** When it expires, as its last creation or renewal said. @unit ms since epoch */
  expiresAt: number;
  /** The tokens it holds. */
  tokens: number;
}

/** Options of one {@link GeminiCacheCoordinator.exclusive} call. */
export interface ExclusiveOptions {
  /**
   * When another caller holds the key: `true` waits for its record (or for its lease to end, then
   * takes over); `false` gives up at once (resolves `undefined`).
   */
  wait: boolean;
  /** Whether a record already published serves the caller, so that `work` need not run. */
  accept: (record: GeminiCacheRecord) => boolean;
  /**
   * The caller's run: its abort ends a wait for another holder at once (the call rejects with the
   * signal's reason) rather than when the record appears or the holder's lease ends.
   */
  signal?: AbortSignal | undefined;
}

/**
 * Runs work on a fan-out's cache once across daemons. Implementations hold a lease per key, so a
 * holder that dies stalls its waiters no longer than the lease.
 */
export interface GeminiCacheCoordinator {
  /**
   * The record under `key` if `accept`ed, else `work`'s, run while holding `key` and then published.
   * `ran` says whether this caller ran `work`. A `work` that throws publishes nothing and frees the
   * key for the next caller; the error is thrown.
   */
  exclusive(
    key: string,
    work: () => Promise<GeminiCacheRecord>,
    options: ExclusiveOptions,
  ): Promise<{ record: GeminiCacheRecord; ran: boolean } | undefined>;
}
