// A limit on concurrent model calls shared by every daemon of a NATS account (a tenant): per provider
// key, so that twenty daemons do not trip the provider's rate limit together (docs/budgets.md,
// "Concurrency limits"). One entry `limit.<scope>` in the daemons bucket (written by daemons only)
// lists the calls holding a slot and those waiting, each with a lease; every change is a
// compare-and-set. Slots go to waiters in a fair order across parents: the parent holding the fewest
// slots first, then the longest waiting. Each daemon reads the entry for its waiters in one loop and
// takes, in one write, the slots the order gives to its own waiters.
import { randomUUID } from "node:crypto";
import { isWrongLastSequence } from "@forkd/client/internal";
import type { LlmClient } from "@forkd/core";
import { type CallSlots, callSlotsCodec } from "@forkd/protocol";
import type { KV } from "@nats-io/kv";
import type { DaemonLogger } from "./logger.js";

/** A held slot's lease: renewed while held, so a dead daemon's slots come back after it. @unit ms */
const HOLDER_LEASE_MS = 30_000;
/** A waiter's lease: renewed while it waits. @unit ms */
const WAITER_LEASE_MS = 5_000;
/** How often a daemon with waiters reads the entry. @unit ms */
const POLL_MS = 40;

interface LocalWaiter {
  id: string;
  parent: string;
  since: number;
  grant: () => void;
}

/** Options of {@link CallLimiter}. */
export interface CallLimiterOptions {
  kv: KV;
  /** `limit.<scope>`: one token per scope (the provider key's hash). */
  key: string;
  /** Calls at once, cluster-wide. */
  limit: number;
  daemonId: string;
  logger: DaemonLogger;
  /** Told the slots this daemon holds and the calls it has waiting, after every change. */
  onChange?: (held: number, waiting: number) => void;
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
  readonly #waiting = new Map<string, LocalWaiter>();
  readonly #held = new Set<string>();
  readonly #releasing = new Set<string>();
  #loop: Promise<void> | undefined;
  #nudge: (() => void) | undefined;

  constructor(options: CallLimiterOptions) {
    this.#options = options;
  }

  /** Waits for a slot for a call of `parent`; resolves with its release. Rejects when `signal` aborts. */
  acquire(parent: string, signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    const id = `${this.#options.daemonId}.${randomUUID()}`;
    return new Promise<() => void>((resolveSlot, rejectSlot) => {
      const onAbort = () => {
        if (!this.#waiting.delete(id)) return;
        this.#releasing.add(id); // its waiter entry goes at the next write
        this.#changed();
        rejectSlot(signal!.reason);
      };
      this.#waiting.set(id, {
        id,
        parent,
        since: Date.now(),
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          resolveSlot(() => this.#release(id));
        },
      });
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#run();
    });
  }

  /** A model client whose calls each hold a slot of this limit while they run. */
  wrap(llm: LlmClient, parent: string): LlmClient {
    return {
      createMessage: async (request, options) => {
        const release = await this.acquire(parent, options?.signal);
        try {
          return await llm.createMessage(request, options);
        } finally {
          release();
        }
      },
    };
  }

  #release(id: string): void {
    if (!this.#held.delete(id)) return;
    this.#releasing.add(id);
    this.#run();
  }

  #changed(): void {
    this.#options.onChange?.(this.#held.size, this.#waiting.size);
    this.#nudge?.();
  }

  #run(): void {
    this.#nudge?.();
    this.#loop ??= this.#serve().finally(() => {
      this.#loop = undefined;
      if (this.#waiting.size > 0 || this.#held.size > 0 || this.#releasing.size > 0) this.#run();
    });
  }

  // Reads and writes the entry while this daemon waits for, holds or gives back slots.
  async #serve(): Promise<void> {
    while (this.#waiting.size > 0 || this.#held.size > 0 || this.#releasing.size > 0) {
      try {
        await this.#step();
      } catch (error) {
        this.#options.logger.warn({ err: error, key: this.#options.key }, "shared call limit: retrying");
        await new Promise((resolveDelay) => setTimeout(resolveDelay, 250));
        continue;
      }
      if (this.#waiting.size === 0 && this.#releasing.size === 0 && this.#held.size === 0) break;
      await new Promise<void>((resolveWait) => {
        const timer = setTimeout(
          resolveWait,
          this.#waiting.size > 0 || this.#releasing.size > 0 ? POLL_MS : HOLDER_LEASE_MS / 3,
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
    const { kv, key, limit, daemonId } = this.#options;
    const entry = await kv.get(key);
    const now = Date.now();
    const stored: CallSlots =
      entry?.operation === "PUT" && entry.length > 0
        ? callSlotsCodec.decode(entry.value)
        : { v: 1, holders: [], waiters: [] };
    const mine = (id: string) => this.#held.has(id) || this.#waiting.has(id) || this.#releasing.has(id);
    const holders = stored.holders.filter(
      (h) => !this.#releasing.has(h.id) && (h.until > now || this.#held.has(h.id)),
    );
    const waiters = stored.waiters.filter(
      (w) => !this.#releasing.has(w.id) && ((w.until > now && !mine(w.id)) || this.#waiting.has(w.id)),
    );
    for (const waiter of this.#waiting.values())
      if (!waiters.some((w) => w.id === waiter.id))
        waiters.push({ id: waiter.id, parent: waiter.parent, since: waiter.since, until: 0 });
    const granted = fairOrder(holders, waiters, Math.max(0, limit - holders.length)).filter((id) =>
      this.#waiting.has(id),
    );
    const next: CallSlots = {
      v: 1,
      limit,
      holders: [
        ...holders.map((h) => (this.#held.has(h.id) ? { ...h, until: now + HOLDER_LEASE_MS } : h)),
        ...granted.map((id) => ({
          id,
          parent: this.#waiting.get(id)!.parent,
          daemon_id: daemonId,
          until: now + HOLDER_LEASE_MS,
        })),
      ],
      waiters: waiters
        .filter((w) => !granted.includes(w.id))
        .map((w) => (this.#waiting.has(w.id) ? { ...w, until: now + WAITER_LEASE_MS } : w)),
    };
    // Write only when something changes or a lease of ours is half spent: every daemon polls, and
    // needless writes would make them conflict with each other.
    const listed = new Set(stored.waiters.map((w) => w.id));
    const stale = (until: number, lease: number) => until - now < lease / 2;
    const needed =
      granted.length > 0 ||
      this.#releasing.size > 0 ||
      holders.length !== stored.holders.length ||
      waiters.length !== stored.waiters.length ||
      [...this.#waiting.keys()].some((id) => !listed.has(id)) ||
      stored.waiters.some((w) => this.#waiting.has(w.id) && stale(w.until, WAITER_LEASE_MS)) ||
      stored.holders.some((h) => this.#held.has(h.id) && stale(h.until, HOLDER_LEASE_MS));
    if (!needed) return;
    const bytes = callSlotsCodec.encode(next);
    try {
      if (entry) await kv.update(key, bytes, entry.revision);
      else await kv.create(key, bytes);
    } catch (error) {
      if (isWrongLastSequence(error) || (!entry && String(error).includes("exists"))) return; // lost a race: read again
      throw error;
    }
    this.#releasing.clear();
    for (const id of granted) {
      const waiter = this.#waiting.get(id);
      if (waiter === undefined) {
        this.#releasing.add(id); // aborted while the slot was being taken: give it back
        continue;
      }
      this.#waiting.delete(id);
      this.#held.add(id);
      waiter.grant();
    }
    this.#options.onChange?.(this.#held.size, this.#waiting.size);
  }
}
