// Reads one run's event log: replay from seq 1, then (optionally) follow live until the terminal
// event. An ordered consumer makes the read gap-free; seq checks make it duplicate-free.

import { type ForkEvent, forkEventCodec, isTerminalEvent } from "@forkd/protocol";
import { DeliverPolicy, type MsgRequest, type StoredMsg } from "@nats-io/jetstream";
import { watchReconnects } from "./reconnects.js";
import type { ForkResources } from "./resources.js";

/** An event with the stream sequence it was stored at. */
export interface LoggedEvent {
  event: ForkEvent;
  /** Sequence in the events stream; the fence for the next publish of this run. */
  streamSeq: number;
}

/** Options of {@link readEventLog}. */
export interface ReadEventLogOptions {
  /** Keep following after the stored events until the run's terminal event. @default true */
  follow?: boolean;
  /** Skip events up to and including this run seq. @default 0 */
  afterSeq?: number;
  /**
   * Start at this sequence of the events stream instead of the run's first event: a reader that needs
   * only what comes from a known event on (the run's end) skips replaying its whole log. @default 1
   */
  fromStreamSeq?: number;
  signal?: AbortSignal;
}

/** The last stored event of a run (one direct get), or null when the run has none. */
export async function lastLoggedEvent(resources: ForkResources, runId: string): Promise<LoggedEvent | null> {
  const stored = await resources.jsm.streams.getMessage(resources.subjects.streams.events, {
    last_by_subj: resources.subjects.events(runId),
  });
  if (!stored) return null;
  return { event: forkEventCodec.decode(stored.data), streamSeq: stored.seq };
}

/** How long a reader without a consumer keeps asking while the stream cannot answer (a leader election, quorum lost). @unit ms */
const GET_RETRY_WINDOW_MS = 30_000;
/** A consumer that served this long before it was lost is a new loss, worth a new consumer. @unit ms */
const CONSUMER_SETTLED_MS = 1_000;
/** Consumers lost one after another, each sooner than {@link CONSUMER_SETTLED_MS}, before the reader gives up on consumers. */
const QUICK_LOSSES_BEFORE_GETS = 3;
/** How often a reader without a consumer asks for the run's next event while none is stored. @unit ms */
export const EVENT_POLL_INTERVAL_MS = 250;

/** Where a read stands: the last run seq yielded and the stream sequence to read from next. */
class LogCursor {
  nextStreamSeq: number | undefined;
  constructor(public lastSeq: number) {}

  /** The event stored at `streamSeq`, or undefined when it is not one to yield (seen, foreign, corrupt). */
  accept(data: Uint8Array, streamSeq: number): LoggedEvent | undefined {
    this.nextStreamSeq = streamSeq + 1;
    let event: ForkEvent;
    try {
      event = forkEventCodec.decode(data);
    } catch {
      return undefined; // a foreign or corrupt message on the subject: not part of the run's log
    }
    if (event.seq <= this.lastSeq) return undefined;
    this.lastSeq = event.seq;
    return { event, streamSeq };
  }
}

/**
 * Yields the events of `runId` in seq order. With `follow`, waits for new events until a terminal
 * one; without, stops at the last event the stream leader had stored when the read began. Breaking
 * out of the loop releases the consumer.
 *
 * It reads through an ordered consumer. When that consumer is lost (its node died, the connection
 * was reset) it makes a new one from the event after the last it yielded. When no consumer can be
 * made — nats-server 2.9 keeps placing new consumers on a node that died, for as long as the node is
 * down — it reads on with one message get per event (the stream leader answers those), polling every
 * {@link EVENT_POLL_INTERVAL_MS} while following. Either way the read stays gap-free and
 * duplicate-free.
 */
export async function* readEventLog(
  resources: ForkResources,
  runId: string,
  options: ReadEventLogOptions = {},
): AsyncGenerator<LoggedEvent> {
  const follow = options.follow ?? true;
  const signal = options.signal;
  signal?.throwIfAborted();
  const cursor = new LogCursor(options.afterSeq ?? 0);
  cursor.nextStreamSeq = options.fromStreamSeq;
  // Without follow, the read ends at the run's last event as the stream leader has it when the read
  // starts. Not at the consumer's "nothing pending": a consumer placed on a replica still catching up
  // (a node back from a crash) sees a shorter log, and the read would end early.
  let lastSeqToRead = Number.POSITIVE_INFINITY;
  if (!follow) {
    const last = await lastLoggedEvent(resources, runId);
    if (!last || last.event.seq <= cursor.lastSeq) return;
    lastSeqToRead = last.event.seq;
  }
  let quickLosses = 0;
  for (;;) {
    let messages: Awaited<ReturnType<Awaited<ReturnType<typeof resources.js.consumers.get>>["consume"]>>;
    try {
      const consumer = await resources.js.consumers.get(resources.subjects.streams.events, {
        filter_subjects: resources.subjects.events(runId),
        ...(cursor.nextStreamSeq === undefined
          ? { deliver_policy: DeliverPolicy.All }
          : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: cursor.nextStreamSeq }),
      });
      // A short expiry means a short idle heartbeat: a consumer lost with a node is noticed in seconds.
      // A lost consumer ends the iteration (abort_on_missing_resource) instead of being remade inside
      // the client library: the new one is made here, after the last event read, where a test
      // proves it (event-log.integration.test.ts).
      messages = await consumer.consume({
        max_messages: 256,
        expires: 5_000,
        abort_on_missing_resource: true,
      });
    } catch {
      signal?.throwIfAborted();
      yield* readByGets(resources, runId, cursor, lastSeqToRead, signal);
      return;
    }
    const consumedSince = Date.now();
    const stop = () => messages.stop();
    signal?.addEventListener("abort", stop, { once: true });
    // An abort while the consumer was being created fired before the listener existed.
    if (signal?.aborted) stop();
    // After a reconnect the library's consumer may sit silent until its heartbeats run out (seen
    // after a partition ended in a reset): the reader makes a new one at once, after the last event.
    let reconnected = false;
    const reconnects = watchReconnects(resources.nc, () => {
      reconnected = true;
      stop();
    });
    try {
      for await (const message of messages) {
        const logged = cursor.accept(message.data, message.info.streamSequence);
        if (!logged) continue;
        yield logged;
        if (isTerminalEvent(logged.event) || cursor.lastSeq >= lastSeqToRead) return;
      }
      signal?.throwIfAborted();
      if (reconnected) continue;
      return;
    } catch {
      signal?.throwIfAborted();
      // The consumer is lost (deleted, gone with its node, or silent past its heartbeats): a successor
      // is made after the last event read. Consumers that keep being lost at once are given up on.
      quickLosses = Date.now() - consumedSince >= CONSUMER_SETTLED_MS ? 0 : quickLosses + 1;
      if (quickLosses < QUICK_LOSSES_BEFORE_GETS) continue;
      yield* readByGets(resources, runId, cursor, lastSeqToRead, signal);
      return;
    } finally {
      signal?.removeEventListener("abort", stop);
      messages.stop();
      reconnects.stop();
    }
  }
}

/**
 * Reads on from `cursor` without a consumer: one message get ("the first message of this subject at
 * or after this sequence") per event, asked of the stream leader. Gets that fail (no leader while
 * one is elected) are retried for {@link GET_RETRY_WINDOW_MS}.
 */
async function* readByGets(
  resources: ForkResources,
  runId: string,
  cursor: LogCursor,
  lastSeqToRead: number,
  signal: AbortSignal | undefined,
): AsyncGenerator<LoggedEvent> {
  const query = (seq: number) => ({ seq, next_by_subj: resources.subjects.events(runId) });
  let failingSince: number | undefined;
  for (;;) {
    signal?.throwIfAborted();
    let stored: StoredMsg | null;
    try {
      // next_by_subj is answered by nats-server 2.9 and later; the client's type lists only the
      // direct-get form of it.
      stored = await resources.jsm.streams.getMessage(
        resources.subjects.streams.events,
        query(cursor.nextStreamSeq ?? 1) as unknown as MsgRequest,
      );
      failingSince = undefined;
    } catch (error) {
      signal?.throwIfAborted();
      // A closed connection never answers again: only a leader being elected is worth the wait.
      if (resources.nc.isClosed()) throw error;
      failingSince ??= Date.now();
      if (Date.now() - failingSince > GET_RETRY_WINDOW_MS) throw error;
      await delay(EVENT_POLL_INTERVAL_MS, signal);
      continue;
    }
    if (stored === null) {
      // The leader answered: nothing stored after the cursor yet. Only a follower waits for more.
      if (lastSeqToRead !== Number.POSITIVE_INFINITY) return;
      await delay(EVENT_POLL_INTERVAL_MS, signal);
      continue;
    }
    const logged = cursor.accept(stored.data, stored.seq);
    if (!logged) continue;
    yield logged;
    if (isTerminalEvent(logged.event) || cursor.lastSeq >= lastSeqToRead) return;
  }
}

function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Reads a run's whole stored log (no following). */
export async function readStoredEvents(
  resources: ForkResources,
  runId: string,
  signal?: AbortSignal,
): Promise<LoggedEvent[]> {
  const events: LoggedEvent[] = [];
  for await (const logged of readEventLog(
    resources,
    runId,
    signal ? { follow: false, signal } : { follow: false },
  )) {
    events.push(logged);
  }
  return events;
}
