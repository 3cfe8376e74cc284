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

/**
 * Yields the events of `runId` in seq order. With `follow`, waits for new events until a terminal
 * one; without, stops at the last stored event. Breaking out of the loop releases the consumer.
 */
export async function* readEventLog(
  resources: ForkResources,
  runId: string,
  options: ReadEventLogOptions = {},
): AsyncGenerator<LoggedEvent> {
  const follow = options.follow ?? true;
  const signal = options.signal;
  signal?.throwIfAborted();
  if (!follow) {
    // An empty log would otherwise leave the consumer waiting for a first message.
    const last = await lastLoggedEvent(resources, runId);
    if (!last || last.event.seq <= (options.afterSeq ?? 0)) return;
  }
  const consumer = await resources.js.consumers.get(resources.subjects.streams.events, {
    filter_subjects: resources.subjects.events(runId),
    deliver_policy: DeliverPolicy.All,
  });
  const messages = await consumer.consume({ max_messages: 256 });
  const stop = () => messages.stop();
  signal?.addEventListener("abort", stop, { once: true });
  let lastSeq = options.afterSeq ?? 0;
  try {
    for await (const message of messages) {
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
  } finally {
    signal?.removeEventListener("abort", stop);
    messages.stop();
  }
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
