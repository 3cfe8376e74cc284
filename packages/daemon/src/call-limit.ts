// One limit on concurrent model calls shared by every daemon of a NATS account: one scope (a provider
// key, a model or a tenant; call-limits.ts picks the scopes of a call). One entry `limit.<scope>` in
// the daemons bucket (written by daemons only) lists the calls holding a slot and those waiting, each
// with a lease; every change is a compare-and-set. Slots go to waiters in a fair order across
// parents: the parent holding the fewest slots first, then the longest waiting. Each daemon reads the
// entry for its waiters in one loop and takes, in one write, the slots the order gives to its own
// waiters. A KV watch on the entry wakes the loop when another daemon writes (a freed slot is taken
// in milliseconds); a slow poll stays as a fallback for a lost or refused watch.
import { randomUUID } from "node:crypto";
import { isWrongLastSequence } from "@forkd/client/internal";
import { type CallSlots, callSlotsCodec } from "@forkd/protocol";
import type { KV, KvEntry } from "@nats-io/kv";
import type { DaemonLogger } from "./logger.js";

/** A held slot's lease by default: renewed while held, so a dead daemon's slots come back after it. @unit ms */
export const DEFAULT_HOLDER_LEASE_MS = 30_000;
/** A waiter's lease (at most half the holder's): renewed while it waits. @unit ms */
const WAITER_LEASE_MS = 5_000;
/** How often a daemon with waiters reads the entry while its watch is live (a fallback). @unit ms */
const WATCHED_POLL_MS = 500;
/** How often it reads the entry with no watch (the watch failed or is not yet open). @unit ms */
const UNWATCHED_POLL_MS = 40;
/** How long a scope with no call of this daemon keeps its watch open, for the next call. @unit ms */
const IDLE_WATCH_MS = 60_000;
/** How long after a failed watch the next call tries to open one again. @unit ms */
const WATCH_RETRY_MS = 30_000;

interface LocalWaiter {
  id: string;
  parent: string;
  runId: string | undefined;
  since: number;
  /** Listed in the entry as waiting by one of our writes: the call did not get a slot at once. */
  queued: boolean;
  grant: () => void;
}

/** Who makes a call: its run's parent (for fairness) and the run (for `forkd ps`). */
export interface CallOwner {
  parent: string;
  runId?: string | undefined;
}

/** Options of {@link CallLimiter}. */
export interface CallLimiterOptions {
  kv: KV;
  /** The entry's key in the daemons bucket: `limit.<kind>.<token>` (call-limits.ts). */
  key: string;
  /** What it counts, readable (`key:<hash>`, `model:<name>`, `tenant:<id>`); written in the entry. */
  scope: string;
  /** Calls at once, cluster-wide. */
  limit: number;
  daemonId: string;
  logger: DaemonLogger;
  /** A held slot's lease (default {@link DEFAULT_HOLDER_LEASE_MS}). @unit ms */
  leaseMs?: number | undefined;
  /** Told the slots this daemon holds and the calls it has waiting, after every change. */
  onChange?: (held: number, waiting: number) => void;
  /** Told each slot given: how long the call waited, and whether it had to queue for it. */
  onGranted?: (waitedMs: number, queued: boolean) => void;
  /** How long the scope keeps its watch with no call of this daemon (default 60 s). @unit ms */
  idleWatchMs?: number | undefined;
  /** False: no watch, only the 40 ms poll (bench #15's baseline). Default true. */
  watch?: boolean | undefined;
}

/** The order slots are given in: fewest slots held by the parent, then longest waiting. */
export function fairOrder(
  holders: readonly { parent: string }[],
  waiters: readonly { id: string; parent: string; since: number }[],
  free: number,
): string[] {
  const held = new Map<string, number>();
  for (const holder of holders) held.set(holder.parent, (held.get(holder.parent) ?? 0) + 1);
  const left = [...waiters];
  const picked: string[] = [];
  while (picked.length < free && left.length > 0) {
    left.sort(
      (a, b) =>
        (held.get(a.parent) ?? 0) - (held.get(b.parent) ?? 0) ||
        a.since - b.since ||
        a.id.localeCompare(b.id),
    );
    const next = left.shift()!;
    picked.push(next.id);
    held.set(next.parent, (held.get(next.parent) ?? 0) + 1);
  }
  return picked;
}

/** One daemon's side of one shared limit. */
export class CallLimiter {
  readonly #options: CallLimiterOptions;
  readonly #holderLeaseMs: number;
  readonly #waiterLeaseMs: number;
  readonly #waiting = new Map<string, LocalWaiter>();
  readonly #held = new Map<string, CallOwner>();
  readonly #releasing = new Set<string>();
  #loop: Promise<void> | undefined;
  #nudge: (() => void) | undefined;
  /** A wake-up came while the loop was not asleep: it reads again at once instead of sleeping. */
  #nudged = false;
  #watch: { stop(): void } | undefined;
  #watchLive = false;
  /** After a watch that failed (refused by the account's permissions, say), when to try again. @unit ms since epoch */
  #watchRetryAt = 0;
  #closed = false;
  #idleTimer: NodeJS.Timeout | undefined;
  /** The revision of our own last write: the watch does not wake us for it. */
  #lastWritten = 0;
  /**
   * The entry as another daemon's last write left it, from the watch: the next step starts from it
   * instead of reading the entry again. If a newer write came meanwhile, the compare-and-set fails and
   * the step after reads it.
   */
  #watched: KvEntry | undefined;
  /**
   * When the first lease of another daemon's holder ends, while our waiters found no free slot: a
   * dead daemon writes nothing when its lease ends, so no watch event says the slot is free.
   * @unit ms since epoch
   */
  #nextExpiry = Number.POSITIVE_INFINITY;

  constructor(options: CallLimiterOptions) {
    this.#options = options;
    this.#holderLeaseMs = options.leaseMs ?? DEFAULT_HOLDER_LEASE_MS;
    this.#waiterLeaseMs = Math.min(WAITER_LEASE_MS, this.#holderLeaseMs / 2);
  }

  /** The calls of this daemon holding a slot and those waiting for one. */
  get counts(): { held: number; waiting: number } {
    return { held: this.#held.size, waiting: this.#waiting.size };
  }

  /** Waits for a slot for a call of `owner`; resolves with its release. Rejects when `signal` aborts. */
  acquire(owner: CallOwner, signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.#closed) return Promise.reject(new Error("the call limiter is closed"));
    const id = `${this.#options.daemonId}.${randomUUID()}`;
    this.#openWatch();
    return new Promise<() => void>((resolveSlot, rejectSlot) => {
      const onAbort = () => {
        if (!this.#waiting.delete(id)) return;
        this.#releasing.add(id); // its waiter entry goes at the next write
        this.#changed();
        this.#run();
        rejectSlot(signal!.reason);
      };
      const since = Date.now();
      const waiter: LocalWaiter = {
        id,
        parent: owner.parent,
        runId: owner.runId,
        since,
        queued: false,
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          this.#options.onGranted?.(Date.now() - since, waiter.queued);
          resolveSlot(() => this.#release(id));
        },
      };
      this.#waiting.set(id, waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#changed();
      this.#run();
    });
  }

  /** Stops the watch. Calls in flight keep their slots until they release them (or their lease ends). */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    this.#closeWatch();
  }

  // An idle scope keeps no consumer on the server (a spec's model names could make many scopes).
  #closeWatch(): void {
    this.#watch?.stop();
    this.#watch = undefined;
    this.#watchLive = false;
  }

  // Wakes the loop on every write of another daemon to the entry: a slot it freed, a waiter it listed.
  #openWatch(): void {
    if (this.#options.watch === false) return;
    if (this.#watch !== undefined || this.#closed || Date.now() < this.#watchRetryAt) return;
    const { kv, key, logger } = this.#options;
    let stopped = false;
    let iterator: { stop(): void } | undefined;
    const handle = {
      stop: () => {
        stopped = true;
        iterator?.stop();
      },
    };
    this.#watch = handle;
    void (async () => {
      try {
        const updates = await kv.watch({ key, include: "updates" });
        iterator = updates;
        if (stopped) {
          updates.stop();
          return;
        }
        this.#watchLive = true;
        for await (const update of updates) {
          if (update.revision <= this.#lastWritten) continue;
          this.#watched = update;
          if (this.#waiting.size > 0) this.#wake();
        }
      } catch (error) {
        this.#watchRetryAt = Date.now() + WATCH_RETRY_MS;
        logger.warn({ err: error, key }, "shared call limit: no watch on the entry, polling it");
      } finally {
        // Only this watch's own state: a newer one may have been opened since it was stopped. One that
        // ended by itself (a lost connection) is opened again at the next call.
        if (this.#watch === handle) {
          this.#watch = undefined;
          this.#watchLive = false;
        }
      }
    })();
  }

  #release(id: string): void {
    if (!this.#held.delete(id)) return;
    this.#releasing.add(id);
    this.#changed();
    this.#run();
  }

  #changed(): void {
    this.#options.onChange?.(this.#held.size, this.#waiting.size);
  }

  #wake(): void {
    if (this.#nudge) this.#nudge();
    else this.#nudged = true;
  }

  #run(): void {
    this.#wake();
    clearTimeout(this.#idleTimer);
    this.#loop ??= this.#serve().finally(() => {
      this.#loop = undefined;
      if (this.#waiting.size > 0 || this.#held.size > 0 || this.#releasing.size > 0) this.#run();
      else
        this.#idleTimer = setTimeout(
          () => this.#closeWatch(),
          this.#options.idleWatchMs ?? IDLE_WATCH_MS,
        ).unref();
    });
  }

  // Reads and writes the entry while this daemon waits for, holds or gives back slots.
  async #serve(): Promise<void> {
    while (this.#waiting.size > 0 || this.#held.size > 0 || this.#releasing.size > 0) {
      this.#nudged = false;
      try {
        await this.#step();
      } catch (error) {
        this.#options.logger.warn({ err: error, key: this.#options.key }, "shared call limit: retrying");
        await new Promise((resolveDelay) => setTimeout(resolveDelay, 250));
        continue;
      }
      if (this.#waiting.size === 0 && this.#releasing.size === 0 && this.#held.size === 0) break;
      if (this.#nudged) continue;
      const busy = this.#waiting.size > 0 || this.#releasing.size > 0;
      const poll = this.#watchLive ? WATCHED_POLL_MS : UNWATCHED_POLL_MS;
      await new Promise<void>((resolveWait) => {
        const timer = setTimeout(
          resolveWait,
          busy ? Math.max(1, Math.min(poll, this.#nextExpiry - Date.now() + 1)) : this.#holderLeaseMs / 3,
        );
        this.#nudge = () => {
          clearTimeout(timer);
          resolveWait();
        };
      });
      this.#nudge = undefined;
    }
  }

  // One read, one compare-and-set: give back released slots, renew held ones, take what the fair
  // order gives this daemon's waiters, and list (renew) the others as waiting.
  async #step(): Promise<void> {
    const { kv, key, limit, daemonId, scope } = this.#options;
    // Only the releases known now are written by this step: one that comes during the write waits
    // for the next step instead of being forgotten (its slot would stay taken until its lease ran out).
    const releasing = new Set(this.#releasing);
    const watched = this.#watched;
    this.#watched = undefined;
    const entry = watched !== undefined && watched.revision > this.#lastWritten ? watched : await kv.get(key);
    const now = Date.now();
    const stored: CallSlots =
      entry?.operation === "PUT" && entry.length > 0
        ? callSlotsCodec.decode(entry.value)
        : { v: 1, holders: [], waiters: [] };
    const mine = (id: string) => this.#held.has(id) || this.#waiting.has(id) || releasing.has(id);
    const holders = stored.holders.filter(
      (h) => !releasing.has(h.id) && (h.until > now || this.#held.has(h.id)),
    );
    const waiters = stored.waiters.filter(
      (w) => !releasing.has(w.id) && ((w.until > now && !mine(w.id)) || this.#waiting.has(w.id)),
    );
    for (const waiter of this.#waiting.values())
      if (!waiters.some((w) => w.id === waiter.id))
        waiters.push({ id: waiter.id, parent: waiter.parent, since: waiter.since, until: 0 });
    const granted = fairOrder(holders, waiters, Math.max(0, limit - holders.length)).filter((id) =>
      this.#waiting.has(id),
    );
    this.#nextExpiry = Math.min(
      Number.POSITIVE_INFINITY,
      ...holders.filter((h) => !this.#held.has(h.id)).map((h) => h.until),
    );
    const runOf = (id: string) => {
      const runId = this.#waiting.get(id)?.runId;
      return runId === undefined ? {} : { run_id: runId };
    };
    const next: CallSlots = {
      v: 1,
      limit,
      scope,
      holders: [
        ...holders.map((h) => (this.#held.has(h.id) ? { ...h, until: now + this.#holderLeaseMs } : h)),
        ...granted.map((id) => ({
          id,
          parent: this.#waiting.get(id)!.parent,
          ...runOf(id),
          daemon_id: daemonId,
          until: now + this.#holderLeaseMs,
        })),
      ],
      waiters: waiters
        .filter((w) => !granted.includes(w.id))
        .map((w) =>
          this.#waiting.has(w.id) ? { ...w, ...runOf(w.id), until: now + this.#waiterLeaseMs } : w,
        ),
    };
    // Write only when something changes or a lease of ours is half spent: every daemon reads the
    // entry, and needless writes would make them conflict with each other.
    const listed = new Set(stored.waiters.map((w) => w.id));
    const stale = (until: number, lease: number) => until - now < lease / 2;
    const needed =
      granted.length > 0 ||
      releasing.size > 0 ||
      holders.length !== stored.holders.length ||
      waiters.length !== stored.waiters.length ||
      [...this.#waiting.keys()].some((id) => !listed.has(id)) ||
      stored.waiters.some((w) => this.#waiting.has(w.id) && stale(w.until, this.#waiterLeaseMs)) ||
      stored.holders.some((h) => this.#held.has(h.id) && stale(h.until, this.#holderLeaseMs));
    if (!needed) return;
    const bytes = callSlotsCodec.encode(next);
    try {
      this.#lastWritten = entry ? await kv.update(key, bytes, entry.revision) : await kv.create(key, bytes);
    } catch (error) {
      if (isWrongLastSequence(error) || (!entry && String(error).includes("exists"))) {
        this.#nudged = true; // lost a race: read again at once
        return;
      }
      throw error;
    }
    for (const id of releasing) this.#releasing.delete(id);
    for (const waiter of this.#waiting.values()) if (!granted.includes(waiter.id)) waiter.queued = true;
    for (const id of granted) {
      const waiter = this.#waiting.get(id);
      if (waiter === undefined) {
        this.#releasing.add(id); // aborted while the slot was being taken: give it back
        continue;
      }
      this.#waiting.delete(id);
      this.#held.set(id, { parent: waiter.parent, runId: waiter.runId });
      waiter.grant();
    }
    this.#changed();
  }
}
