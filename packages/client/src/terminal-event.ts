// Waits for a run's terminal event as its log stores it — what `result()` needs — without a JetStream
// consumer while the run is young.
//
// Following the whole log through an ordered consumer costs the server a consumer made and deleted per
// run (two JetStream API requests, served one after the other with every daemon's claims and the
// parent's spec publishes), and costs the parent every event decoded and checked. Made as the spec
// travels, that consumer sat in the middle of every dispatch. `result()` needs one event only, and
// the stream answers "the last event of this run" in one read. So the parent hears the run's events
// on core NATS (a JetStream publish reaches plain subscribers of its subject too) and treats a
// terminal one as a hint: it asks the stream for the run's last stored event, and only that, stored,
// is the outcome. A hint is never the proof: a publish JetStream refused (a fenced daemon that lost
// the run) reaches core subscribers all the same, and no other parent may publish on a run's events
// subject (deploy/nats/accounts.conf).
//
// Hints can be lost: while the connection is away (a reconnect is followed by a read), or between
// servers of a cluster (a route cut as the run ends). So the hints serve a run's first seconds only —
// a dispatch, a short run — and then, or as soon as a hint does not hold (its event is not, or not yet,
// stored), the wait follows the log through a consumer, from the run's last stored event on: whatever
// hint was missed, the terminal event is at or after it.

import { isTerminalEvent, isTerminalEventType, type TerminalForkEvent } from "@forkd/protocol";
import type { Subscription } from "@nats-io/transport-node";
import { ClientError } from "./errors.js";
import { type LoggedEvent, lastLoggedEvent, readEventLog } from "./event-log.js";
import { flushSoon } from "./flush-soon.js";
import { type ReconnectWatch, watchReconnects } from "./reconnects.js";
import type { ForkResources } from "./resources.js";
import { eventHint } from "./terminal-watch.js";

/**
 * How long the wait relies on hints before it follows the log through a consumer: a hint lost without
 * a reconnect delays a result by at most this. @unit ms
 */
export const TERMINAL_HINTS_FOR_MS = 5_000;

/** A run's terminal event with the stream sequence it is stored at. */
export interface LoggedTerminalEvent extends LoggedEvent {
  event: TerminalForkEvent;
}

/** Options of {@link awaitTerminalEvent}. */
export interface AwaitTerminalEventOptions {
  signal?: AbortSignal;
  /** How long to rely on hints alone, from the first read. @default TERMINAL_HINTS_FOR_MS @unit ms */
  hintsForMs?: number;
  /**
   * The first read of the stored log also waits for this: the run's spec being stored (its launch).
   * Nothing is lost by reading later — an event stored before the read is read, one stored after it is
   * heard — and a fan-out's 100 waits made at once do not put 100 reads in the way of its first spec.
   * A rejection counts as settled (the caller reports a failed launch).
   */
  readAfter?: Promise<unknown>;
  /**
   * Whether the stored log is read once the subscription is at the server. False only where nothing
   * of the run can be stored before this call: its spec goes out later on the same connection (a
   * fresh run id, forked here), so every event comes after the subscription and is heard. Hints
   * lost to a reconnect are read for all the same, and the hints window still ends in following the
   * log. @default true
   */
  readFirst?: boolean;
  /**
   * Called once, when the first event of the run is heard: a daemon publishes one only once its claim
   * is stored. A hint like any other (see above): a heard event may be one JetStream refused, which a
   * daemon that lost the run sends — and that run was claimed too.
   */
  onHeard?: () => void;
}

/**
 * Resolves with `runId`'s terminal event once its log stores it (at once when it already does);
 * rejects with the signal's reason when `signal` aborts first.
 */
export function awaitTerminalEvent(
  resources: ForkResources,
  runId: string,
  options: AwaitTerminalEventOptions = {},
): Promise<LoggedTerminalEvent> {
  if (options.signal?.aborted) return Promise.reject(options.signal.reason);
  try {
    return new TerminalWait(resources, runId, options).settled;
  } catch (error) {
    return Promise.reject(error); // a closed connection refuses the subscription
  }
}

/** One wait: hints and reads of the last stored event, then (or instead) the log through a consumer. */
class TerminalWait {
  readonly settled: Promise<LoggedTerminalEvent>;
  readonly #resources: ForkResources;
  readonly #runId: string;
  /** Aborted once the wait is settled: stops the consumer's read. */
  readonly #ended = new AbortController();
  readonly #hints: Subscription;
  #hintsEnd: NodeJS.Timeout | undefined;
  readonly #reconnects: ReconnectWatch;
  #resolve!: (logged: LoggedTerminalEvent) => void;
  #reject!: (error: unknown) => void;
  #following = false;
  #reading = false;
  /** A read asked for while one was in flight; hinted when a terminal event was heard meanwhile. */
  #queued: { hinted: boolean } | undefined;

  constructor(resources: ForkResources, runId: string, options: AwaitTerminalEventOptions) {
    this.#resources = resources;
    this.#runId = runId;
    this.settled = new Promise<LoggedTerminalEvent>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    let onHeard = options.onHeard;
    this.#hints = resources.nc.subscribe(resources.subjects.events(runId), {
      callback: (error, message) => {
        if (error) return this.#followLog(); // not allowed to subscribe, or the subscription is gone
        const hint = eventHint(message.data, runId);
        if (hint === undefined) return;
        if (onHeard !== undefined) {
          const heard = onHeard;
          onHeard = undefined;
          heard();
        }
        if (isTerminalEventType(hint.type)) this.#readLast(true);
      },
    });
    // Hints sent while the connection was away are lost: the log is read again after each reconnect.
    this.#reconnects = watchReconnects(resources.nc, () => this.#readLast(false));
    // Registered once there is something to stop (the subscription above throws on a closed connection).
    const signal = options.signal;
    signal?.addEventListener("abort", () => this.#settle({ error: signal.reason }), {
      once: true,
      signal: this.#ended.signal,
    });
    // Once the subscription is at the server every later ending is heard: read what ended before. A
    // wait that reads nothing first needs no flush: the run's spec goes out after the subscription on
    // this connection, so the spec's acknowledgement (`readAfter`) already comes after the server has
    // the subscription — a PING and its PONG less inside every dispatch (bench #2).
    const launched = options.readAfter?.catch(() => undefined);
    const atServer = options.readFirst === false ? Promise.resolve() : flushSoon(resources.nc);
    atServer.then(
      async () => {
        await launched;
        if (this.#ended.signal.aborted || this.#following) return;
        this.#hintsEnd = setTimeout(() => this.#followLog(), options.hintsForMs ?? TERMINAL_HINTS_FOR_MS);
        if (options.readFirst !== false) this.#readLast(false);
      },
      () => this.#followLog(),
    );
  }

  /** Reads the run's last stored event; one read at a time, a hint heard during one is read after it. */
  #readLast(hinted: boolean): void {
    if (this.#reading) {
      this.#queued = { hinted: hinted || (this.#queued?.hinted ?? false) };
      return;
    }
    this.#reading = true;
    lastLoggedEvent(this.#resources, this.#runId).then(
      (last) => {
        this.#reading = false;
        if (this.#following || this.#ended.signal.aborted) return;
        if (last !== null && isTerminalEvent(last.event))
          return this.#settle({ logged: { event: last.event, streamSeq: last.streamSeq } });
        if (hinted) return this.#followLog(); // heard, not stored (refused, or not yet): the log decides
        const queued = this.#queued;
        this.#queued = undefined;
        if (queued) this.#readLast(queued.hinted);
      },
      () => {
        this.#reading = false;
        this.#followLog(); // the stream could not answer: the consumer's reader knows how to wait
      },
    );
  }

  /**
   * Follows the log through a consumer: the authority, whatever hints were missed. It starts at the
   * run's last stored event, not its first: a run still going after the hints' time is usually a long
   * one, and only its end is wanted, not thousands of deltas replayed and decoded.
   */
  #followLog(): void {
    if (this.#following || this.#ended.signal.aborted) return;
    this.#following = true;
    this.#stopHints();
    void (async () => {
      // Unreadable now (no stream leader): the whole log, which the reader knows how to wait for.
      const last = await lastLoggedEvent(this.#resources, this.#runId).catch(() => null);
      for await (const logged of readEventLog(this.#resources, this.#runId, {
        follow: true,
        signal: this.#ended.signal,
        ...(last !== null ? { fromStreamSeq: last.streamSeq } : {}),
      })) {
        if (isTerminalEvent(logged.event))
          return this.#settle({ logged: { event: logged.event, streamSeq: logged.streamSeq } });
      }
      // The read ended without one (its connection closed): nothing more can be heard here.
      this.#settle({
        error: new ClientError("aborted", `stopped waiting for run ${this.#runId}: its event log ended`),
      });
    })().catch((error: unknown) => this.#settle({ error }));
  }

  #stopHints(): void {
    this.#hints.unsubscribe();
    clearTimeout(this.#hintsEnd);
    this.#reconnects.stop();
  }

  #settle(outcome: { logged: LoggedTerminalEvent } | { error: unknown }): void {
    if (this.#ended.signal.aborted) return;
    this.#ended.abort();
    this.#stopHints();
    if ("logged" in outcome) this.#resolve(outcome.logged);
    else this.#reject(outcome.error);
  }
}
