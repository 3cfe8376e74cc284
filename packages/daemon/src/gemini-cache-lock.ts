// One creation (and one renewal per TTL) of a Gemini fan-out's explicit cache across daemons: an
// entry of the daemons bucket per cache, keyed by the provider key and the cache's display name (a
// hash of what it holds, which every sibling computes). A daemon takes the entry with a
// compare-and-set (`create` when absent, `update` at the revision it read) as a lease, does the work
// (list the caches and create the missing one; or read the expiry and renew), renewing its lease
// while the work runs, and writes the cache's name and expiry there. Siblings that find the entry held wait on a KV watch for that write; a holder
// that dies writes nothing, so they also wake when its lease ends and one of them takes over. The
// entry is short-lived: the bucket's TTL drops it (a later sibling then finds the cache by listing).
import { isWrongLastSequence } from "@forkd/client/internal";
import type { ExclusiveOptions, GeminiCacheCoordinator, GeminiCacheRecord } from "@forkd/llm";
import { type GeminiCacheEntry, geminiCacheEntryCodec, PROTOCOL_VERSION } from "@forkd/protocol";
import type { KV, KvEntry } from "@nats-io/kv";
import { limitKeyToken } from "./call-limits.js";
import type { DaemonLogger } from "./logger.js";

/** How long a daemon may hold a cache's entry before a sibling takes over. @unit ms */
export const GEMINI_CACHE_LEASE_MS = 15_000;
/**
 * A holder renews its lease while its work runs (a slow creation keeps the entry), for at most this
 * many terms: a holder whose work hangs loses the entry to a sibling after them.
 */
export const GEMINI_CACHE_MAX_LEASE_TERMS = 4;

/** Options of {@link KvGeminiCacheLock}. */
export interface KvGeminiCacheLockOptions {
  /** The daemons bucket. */
  kv: KV;
  daemonId: string;
  /** The provider key id the caches belong to (a cache is seen only by the key that made it). */
  keyId: string;
  logger: DaemonLogger;
  /** @default GEMINI_CACHE_LEASE_MS @unit ms */
  leaseMs?: number | undefined;
}

/** The {@link GeminiCacheCoordinator} of a daemon, on the daemons bucket (see the file's head). */
export class KvGeminiCacheLock implements GeminiCacheCoordinator {
  readonly #options: KvGeminiCacheLockOptions;
  readonly #leaseMs: number;

  constructor(options: KvGeminiCacheLockOptions) {
    this.#options = options;
    this.#leaseMs = options.leaseMs ?? GEMINI_CACHE_LEASE_MS;
  }

  /** The entry's key: `gemini_cache.<key id>.<display name>`, each a single token. */
  keyOf(displayName: string): string {
    return `gemini_cache.${limitKeyToken(this.#options.keyId)}.${limitKeyToken(displayName)}`;
  }

  async exclusive(
    displayName: string,
    work: () => Promise<GeminiCacheRecord>,
    options: ExclusiveOptions,
  ): Promise<{ record: GeminiCacheRecord; ran: boolean } | undefined> {
    const { kv, daemonId, logger } = this.#options;
    const key = this.keyOf(displayName);
    for (;;) {
      // An aborted run neither waits nor takes the entry: its cache would serve no request of its own.
      options.signal?.throwIfAborted();
      const entry = await kv.get(key);
      const stored = decode(entry);
      if (stored?.state === "ready") {
        const record = { name: stored.name, expiresAt: stored.expires_at, tokens: stored.tokens };
        if (options.accept(record)) return { record, ran: false };
      }
      if (stored?.state === "held" && stored.lease_until > Date.now()) {
        if (!options.wait) return undefined;
        await this.#nextWrite(key, entry!.revision, stored.lease_until, options.signal);
        continue;
      }
      // Absent, ready but not acceptable, or a lease that ended: take it, unless another daemon did first.
      const lease: GeminiCacheEntry = {
        v: PROTOCOL_VERSION,
        state: "held",
        holder: daemonId,
        lease_until: Date.now() + this.#leaseMs,
      };
      let revision: number;
      try {
        revision =
          entry === null || entry.operation !== "PUT"
            ? await kv.create(key, geminiCacheEntryCodec.encode(lease))
            : await kv.update(key, geminiCacheEntryCodec.encode(lease), entry.revision);
      } catch (error) {
        if (isWrongLastSequence(error)) continue;
        throw error;
      }
      if (stored?.state === "held")
        logger.warn({ key, holder: stored.holder }, "gemini cache: a holder's lease ended; taking over");
      const held = this.#keepLease(key, revision);
      let record: GeminiCacheRecord;
      try {
        record = await work();
      } catch (error) {
        // Free the entry at once: a waiter takes it and tries for itself.
        await kv.delete(key, { previousSeq: await held.stop() }).catch(() => undefined);
        throw error;
      }
      revision = await held.stop();
      const ready: GeminiCacheEntry = {
        v: PROTOCOL_VERSION,
        state: "ready",
        name: record.name,
        expires_at: record.expiresAt,
        tokens: record.tokens,
      };
      // Only over its own lease: a holder that outlived it lost the entry to the one that took over.
      await kv.update(key, geminiCacheEntryCodec.encode(ready), revision).catch((error: unknown) => {
        logger.warn(
          { err: error, key },
          "gemini cache: the entry was taken over before the record was written",
        );
      });
      return { record, ran: true };
    }
  }

  /**
   * Renews the lease on `key` (taken at `revision`) every third of its term, for at most
   * {@link GEMINI_CACHE_MAX_LEASE_TERMS} terms, until `stop()`, which resolves with the entry's
   * revision after the last renewal (a renewal that lost the entry leaves the revision it had: the
   * holder's final write then fails, as it must).
   */
  #keepLease(key: string, revision: number): { stop(): Promise<number> } {
    const { kv, daemonId } = this.#options;
    let current = revision;
    let renewing: Promise<void> = Promise.resolve();
    const lastUntil = Date.now() + this.#leaseMs * GEMINI_CACHE_MAX_LEASE_TERMS;
    const timer = setInterval(() => {
      const until = Math.min(Date.now() + this.#leaseMs, lastUntil);
      renewing = renewing
        .then(async () => {
          const lease: GeminiCacheEntry = {
            v: PROTOCOL_VERSION,
            state: "held",
            holder: daemonId,
            lease_until: until,
          };
          current = await kv.update(key, geminiCacheEntryCodec.encode(lease), current);
        })
        .catch(() => clearInterval(timer));
      if (until >= lastUntil) clearInterval(timer);
    }, this.#leaseMs / 3);
    return {
      stop: async () => {
        clearInterval(timer);
        await renewing;
        return current;
      },
    };
  }

  /**
   * Resolves at the first write to `key` after `revision` (the holder's record, or its freed entry),
   * when the holder's lease ends at `leaseUntil` (a dead holder writes nothing), or at once when
   * `signal` aborts (the caller then throws its reason).
   */
  async #nextWrite(
    key: string,
    revision: number,
    leaseUntil: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const { kv } = this.#options;
    const updates = await kv.watch({ key, include: "updates" });
    const timer = setTimeout(() => updates.stop(), Math.max(0, leaseUntil - Date.now()) + 1);
    const stop = () => updates.stop();
    signal?.addEventListener("abort", stop, { once: true });
    // Aborted while the watch was being set up: the listener came too late to hear it.
    if (signal?.aborted) stop();
    try {
      // A write between the caller's read and the watch's start is not among the updates: read again.
      const now = await kv.get(key);
      if (now === null || now.revision !== revision) return;
      for await (const update of updates) if (update.revision > revision) return;
    } finally {
      signal?.removeEventListener("abort", stop);
      clearTimeout(timer);
      updates.stop();
    }
  }
}

/** The entry as written, or null (absent, deleted, or not one of ours). */
function decode(entry: KvEntry | null): GeminiCacheEntry | null {
  if (entry === null || entry.operation !== "PUT" || entry.length === 0) return null;
  try {
    return geminiCacheEntryCodec.decode(entry.value);
  } catch {
    return null;
  }
}
