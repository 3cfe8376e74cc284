// Warm-first followers held at their first model call until their cache leader's response begins.
//
// A warm-first fan-out sends one child (the leader) first; its first response writes the cache entry
// of the prefix the siblings share, and the others (the followers) must not reach the provider before
// that response has begun, or each would write the entry again (1.25× instead of 0.1×). The parent
// used to hold the followers' specs until it saw the leader's response begin, so 99 claims, 99 runs'
// setups and 99 request builds all happened after that moment, on the critical path (bench #3). Now
// the parent publishes the followers once the leader is claimed, with `cache_leader` in their specs:
// a daemon claims each follower and builds its request during the leader's time to first token, and
// only the first model call waits, here, until the leader's log shows its response began or the
// leader ended — or `wait_ms` passed, after which it goes anyway (it then pays a cache write).
//
// One watch per leader per daemon, shared by every follower of that leader the daemon holds: a core
// subscription on the leader's events subject (a hint: the daemon acts on the event's type only, and
// a false hint costs a cache write, nothing more) and a read of the leader's last stored event, once
// the subscription is at the server and then after `pollMs`, twice that, and so on up to 2 s (hints
// are lost while a connection is away, or refused where an operator's permissions predate the
// subscription). The backoff bounds what held runs naming leaders that never answer cost the stream.
import type { ForkResources, LoggedEvent } from "@forkd/client";
import { lastLoggedEvent } from "@forkd/client";
import { type EventHint, eventHint } from "@forkd/client/internal";
import type { LlmClient } from "@forkd/core";
import { LlmError } from "@forkd/core";
import type { CacheLeader } from "@forkd/protocol";
import type { Subscription } from "@nats-io/transport-node";
import type { DaemonLogger } from "./logger.js";

/** How long after the first read of a watched leader's log the next comes; each wait doubles. @unit ms */
export const LEADER_POLL_MS = 250;
/** The longest wait between two reads of a watched leader's log. @unit ms */
export const MAX_LEADER_POLL_MS = 2_000;
/** How many leaders seen released are remembered, so later followers of theirs go at once. */
const RELEASED_MEMORY = 1024;

/** Why a follower's first call went. */
export type LeaderWaitEnd = "began" | "timeout";

/**
 * Whether the leader's log, ending with `event`, shows its first response began (or the run ended).
 * Only the moments before a first response do not: claimed (not resumed), started, its first
 * request, a heartbeat. Everything else comes after a response began, or ends the run; a resumed
 * attempt counts as begun (its first attempt may have begun it), since holding followers longer than
 * needed costs more than the cache write a wrong guess might.
 */
export function leaderReleases(event: EventHint): boolean {
  switch (event.type) {
    case "accepted":
      return event.resumed === true;
    case "started":
    case "heartbeat":
      return false;
    case "llm.request":
      return (event.turn ?? 1) > 1;
    default:
      return true;
  }
}

/** Options of {@link CacheLeaderWatch}. */
export interface CacheLeaderWatchOptions {
  resources: Pick<ForkResources, "nc" | "jsm" | "subjects">;
  logger: DaemonLogger;
  /** @default LEADER_POLL_MS @unit ms */
  pollMs?: number;
  /** Reads the leader's last stored event (tests count or fail it). @default lastLoggedEvent */
  readLast?: (runId: string) => Promise<LoggedEvent | null>;
}

/** One leader watched: its hints, its polls, and the followers waiting for it. */
class WatchedLeader {
  readonly released: Promise<void>;
  #release!: () => void;
  #subscription: Subscription | undefined;
  #timer: NodeJS.Timeout | undefined;
  #pollMs: number;
  #reading = false;
  #done = false;
  waiters = 0;

  constructor(
    readonly runId: string,
    private readonly options: Required<Omit<CacheLeaderWatchOptions, "readLast">> & {
      readLast: (runId: string) => Promise<LoggedEvent | null>;
    },
    private readonly onReleased: () => void,
  ) {
    this.released = new Promise<void>((resolve) => {
      this.#release = resolve;
    });
    this.#pollMs = options.pollMs;
    const { nc, subjects } = options.resources;
    try {
      this.#subscription = nc.subscribe(subjects.events(runId), {
        callback: (error, message) => {
          if (error) return; // refused, or gone: the polls remain
          const hint = eventHint(message.data, runId);
          if (hint !== undefined && leaderReleases(hint)) this.#settle();
        },
      });
    } catch {
      this.#subscription = undefined; // a closing connection: the polls fail too, the timeout remains
    }
    // Once the subscription is at the server every later event is heard: read what came before.
    nc.flush().then(
      () => this.#read(),
      () => this.#read(),
    );
    this.#schedulePoll();
  }

  #schedulePoll(): void {
    this.#timer = setTimeout(() => {
      this.#read();
      this.#pollMs = Math.min(this.#pollMs * 2, MAX_LEADER_POLL_MS);
      if (!this.#done) this.#schedulePoll();
    }, this.#pollMs);
    this.#timer.unref();
  }

  #read(): void {
    if (this.#reading || this.#done) return;
    this.#reading = true;
    this.options.readLast(this.runId).then(
      (last) => {
        this.#reading = false;
        if (last !== null && leaderReleases(last.event as EventHint)) this.#settle();
      },
      (error: unknown) => {
        this.#reading = false;
        this.options.logger.debug(
          { err: error, leader: this.runId },
          "could not read the cache leader's log",
        );
      },
    );
  }

  #settle(): void {
    if (this.#done) return;
    this.stop();
    this.#release();
    this.onReleased();
  }

  /** Stops the hints and polls (released, or no follower waits any more). */
  stop(): void {
    this.#done = true;
    clearTimeout(this.#timer);
    this.#subscription?.unsubscribe();
  }
}

/**
 * The daemon's watches of cache leaders: {@link wait} resolves once a leader's first response began
 * (or it ended), or at the follower's timeout. See the module comment.
 */
export class CacheLeaderWatch {
  readonly #options: Required<Omit<CacheLeaderWatchOptions, "readLast">> & {
    readLast: (runId: string) => Promise<LoggedEvent | null>;
  };
  readonly #watched = new Map<string, WatchedLeader>();
  readonly #released = new Set<string>();

  constructor(options: CacheLeaderWatchOptions) {
    const resources = options.resources;
    this.#options = {
      resources,
      logger: options.logger,
      pollMs: options.pollMs ?? LEADER_POLL_MS,
      readLast: options.readLast ?? ((runId) => lastLoggedEvent(resources as ForkResources, runId)),
    };
  }

  /**
   * Resolves `"began"` once leader `runId`'s first response began or the leader ended, `"timeout"`
   * after `timeoutMs`; rejects with the signal's reason when `signal` aborts first.
   */
  async wait(
    runId: string,
    options: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<LeaderWaitEnd> {
    const { signal } = options;
    signal?.throwIfAborted();
    if (this.#released.has(runId)) return "began";
    let leader = this.#watched.get(runId);
    if (leader === undefined) {
      leader = new WatchedLeader(runId, this.#options, () => this.#remember(runId));
      this.#watched.set(runId, leader);
    }
    const watched = leader;
    watched.waiters += 1;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      return await new Promise<LeaderWaitEnd>((resolve, reject) => {
        watched.released.then(() => resolve("began"));
        timer = setTimeout(() => resolve("timeout"), options.timeoutMs);
        if (signal) {
          onAbort = () => reject(signal.reason);
          signal.addEventListener("abort", onAbort, { once: true });
        }
      });
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
      watched.waiters -= 1;
      // The last follower gave up (timeout, abort) before the leader began: nothing is left to tell.
      if (watched.waiters === 0 && this.#watched.get(runId) === watched) {
        watched.stop();
        this.#watched.delete(runId);
      }
    }
  }

  #remember(runId: string): void {
    this.#watched.delete(runId);
    this.#released.add(runId);
    if (this.#released.size > RELEASED_MEMORY) this.#released.delete(this.#released.values().next().value!);
  }

  /**
   * `llm` whose first call waits for the run's cache leader (see {@link wait}); later calls go at
   * once. A run stopped (`stopSignal`) while its call waits ends without it (`not_started`); an
   * aborted one rejects as an abort.
   */
  gate(
    llm: LlmClient,
    leader: CacheLeader,
    call: { runId: string; stopSignal?: AbortSignal | undefined; logger: DaemonLogger },
  ): LlmClient {
    let first: Promise<void> | undefined;
    return {
      createMessage: async (request, options) => {
        first ??= this.#gateFirst(leader, call, options?.signal);
        await first;
        return llm.createMessage(request, options);
      },
    };
  }

  async #gateFirst(
    leader: CacheLeader,
    call: { runId: string; stopSignal?: AbortSignal | undefined; logger: DaemonLogger },
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const signals = [signal, call.stopSignal].filter((s): s is AbortSignal => s !== undefined);
    const waiting = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    const since = performance.now();
    let end: LeaderWaitEnd;
    try {
      end = await this.wait(leader.run_id, { timeoutMs: leader.wait_ms, signal: waiting });
    } catch (error) {
      if (signal?.aborted)
        throw new LlmError("aborted", "The model call was aborted while it waited for its cache leader.", {
          cause: error,
        });
      throw new LlmError("not_started", "the run was stopped while its call waited for its cache leader", {
        cause: error,
      });
    }
    const waitedMs = Math.round(performance.now() - since);
    if (end === "timeout")
      call.logger.warn(
        { leader: leader.run_id, waitedMs },
        "the cache leader's response did not begin in time: the first call goes without it",
      );
    else call.logger.debug({ leader: leader.run_id, waitedMs }, "the cache leader's response began");
  }

  /** Stops every watch (the daemon stops); followers still waiting go on at their timeouts. */
  close(): void {
    for (const leader of this.#watched.values()) leader.stop();
    this.#watched.clear();
  }
}
