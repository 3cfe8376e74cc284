// Reads one run's event log: replay from seq 1, then (optionally) follow live until the terminal
// event. An ordered consumer makes the read gap-free; seq checks make it duplicate-free.

import { type ForkEvent, forkEventCodec, isTerminalEvent } from "@forkd/protocol";
import { DeliverPolicy } from "@nats-io/jetstream";
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

/** How long a reader keeps trying to (re)create its consumer, e.g. while a cluster replaces a lost node. @unit ms */
const CONSUMER_RETRY_WINDOW_MS = 30_000;
/** A consumer that served this long before it was lost is a new loss, with a window of its own. @unit ms */
const CONSUMER_SETTLED_MS = 1_000;

/**
 * Yields the events of `runId` in seq order. With `follow`, waits for new events until a terminal
 * one; without, stops at the last stored event. Breaking out of the loop releases the consumer.
 *
 * Right after a NATS node is lost, creating a consumer can time out (the meta leader may still place
 * it on the dead node): the reader tries again, resuming after the last event it yielded, so the
 * read stays gap-free and duplicate-free.
 */
export async function* readEventLog(
  resources: ForkResources,
  runId: string,
  options: ReadEventLogOptions = {},
): AsyncGenerator<LoggedEvent> {
  const follow = options.follow ?? true;
  const signal = options.signal;
  signal?.throwIfAborted();
  let lastSeq = options.afterSeq ?? 0;
  if (!follow) {
    // An empty log would otherwise leave the consumer waiting for a first message.
    const last = await lastLoggedEvent(resources, runId);
    if (!last || last.event.seq <= lastSeq) return;
  }
  let nextStreamSeq: number | undefined;
  let retryUntil = Date.now() + CONSUMER_RETRY_WINDOW_MS;
  for (let attempt = 0; ; attempt++) {
    let messages: Awaited<ReturnType<Awaited<ReturnType<typeof resources.js.consumers.get>>["consume"]>>;
    try {
      const consumer = await resources.js.consumers.get(resources.subjects.streams.events, {
        filter_subjects: resources.subjects.events(runId),
        ...(nextStreamSeq === undefined
          ? { deliver_policy: DeliverPolicy.All }
          : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: nextStreamSeq }),
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
    } catch (error) {
      signal?.throwIfAborted();
      if (Date.now() > retryUntil) throw error;
      await delay(Math.min(100 * 2 ** attempt, 1_000), signal);
      continue;
    }
    const consumedSince = Date.now();
    const stop = () => messages.stop();
    signal?.addEventListener("abort", stop, { once: true });
    // An abort while the consumer was being created fired before the listener existed.
    if (signal?.aborted) stop();
    // After a reconnect the library's consumer may sit silent until its heartbeats run out (seen
    // after a partition ended in a reset): the reader makes a new one at once, after the last event.
    let reconnected = false;
    const statuses = resources.nc.status()[Symbol.asyncIterator]();
    void (async () => {
      for (let next = await statuses.next(); !next.done; next = await statuses.next()) {
        if (next.value.type !== "reconnect") continue;
        reconnected = true;
        stop();
        return;
      }
    })().catch(() => undefined);
    try {
      for await (const message of messages) {
        nextStreamSeq = message.info.streamSequence + 1;
        let event: ForkEvent;
        try {
          event = forkEventCodec.decode(message.data);
        } catch {
          continue; // a foreign or corrupt message on the subject: not part of the run's log
        }
        if (event.seq <= lastSeq) continue;
        lastSeq = event.seq;
        yield { event, streamSeq: message.info.streamSequence };
        if (isTerminalEvent(event)) return;
        if (!follow && message.info.pending === 0) return;
      }
      signal?.throwIfAborted();
      if (reconnected) continue;
      return;
    } catch (error) {
      signal?.throwIfAborted();
      // The consumer is lost (deleted, gone with its node, or silent past its heartbeats). One that
      // had served for a while is a new loss: the window to replace it starts now, however long the
      // reader had followed quietly (a run waiting on a slow model, a cluster electing leaders after
      // a node was killed). One that failed at once counts against the current window, backing off.
      if (Date.now() - consumedSince >= CONSUMER_SETTLED_MS) {
        retryUntil = Date.now() + CONSUMER_RETRY_WINDOW_MS;
        attempt = -1;
      } else if (Date.now() > retryUntil) {
        throw error;
      } else {
        await delay(Math.min(100 * 2 ** attempt, 1_000), signal);
      }
    } finally {
      signal?.removeEventListener("abort", stop);
      messages.stop();
      void statuses.return?.();
    }
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
