// Reads a range of a stream in sequence order with an ordered consumer: the registry's tail (the
// newest runs) and its head (the runs the retention sweep removes) without reading the rest.
import {
  DeliverPolicy,
  type JsMsg,
  type MsgRequest,
  type NextMsgRequest,
  type StoredMsg,
} from "@nats-io/jetstream";
import type { ForkResources } from "./resources.js";

/** Options of {@link scanStream}. */
export interface ScanStreamOptions {
  /** Only subjects matching this filter (one subject, wildcards allowed: a 2.9 server takes one). */
  filter: string;
  /** First stream sequence to read. @default 1 */
  fromSeq?: number;
  /** Stop before this sequence (exclusive); messages stored later are not read either way. */
  beforeSeq?: number;
  /** Messages per pull. @default 256 */
  batch?: number;
}

/** A message a scan read, whether its consumer delivered it or the scan fetched it itself. */
export interface ScannedMessage {
  /** Stream sequence. */
  seq: number;
  subject: string;
  data: Uint8Array;
  /** When the stream stored it, in epoch milliseconds. */
  storedAtMs: number;
  /** The payload parsed as JSON. */
  json<T>(): T;
}

function delivered(message: JsMsg): ScannedMessage {
  return {
    seq: message.seq,
    subject: message.subject,
    data: message.data,
    storedAtMs: message.info.timestampNanos / 1e6,
    json: <T>() => message.json<T>(),
  };
}

function fetched(message: StoredMsg): ScannedMessage {
  return {
    seq: message.seq,
    subject: message.subject,
    data: message.data,
    storedAtMs: message.time.getTime(),
    json: <T>() => message.json<T>(),
  };
}

/** How long a scan's consumer may deliver nothing before the scan asks the stream whether it is done. */
const IDLE_CHECK_MS = 200;

/**
 * Yields the messages of `stream` matching `filter` from `fromSeq` on, in order, and stops at the last
 * one stored when the scan began (never waiting for new ones). Breaking out releases the consumer.
 */
export async function* scanStream(
  resources: ForkResources,
  stream: string,
  options: ScanStreamOptions,
): AsyncGenerator<ScannedMessage> {
  const fromSeq = Math.max(1, options.fromSeq ?? 1);
  // A consumer with nothing to deliver would wait for the next message: ask first whether there is one.
  const first = await nextStored(resources, stream, options.filter, fromSeq);
  if (!first) return;
  // The end is fixed now, so a scan of a stream being written to never chases the writes.
  const endSeq = options.beforeSeq ?? (await resources.jsm.streams.info(stream)).state.last_seq + 1;
  if (first.seq >= endSeq) return;
  yield* consumeRange(resources, stream, {
    filter: options.filter,
    startSeq: first.seq,
    endSeq,
    batch: options.batch,
  });
}

/** The range {@link consumeRange} reads. */
export interface ConsumeRangeOptions {
  /** Only subjects matching this filter. */
  filter: string;
  /** First stream sequence to read. */
  startSeq: number;
  /** Stop before this sequence (exclusive). */
  endSeq: number;
  /** Messages per pull. @default 256 */
  batch?: number | undefined;
  /** Quiet time after which the stream is asked whether anything is left. @default 200 */
  idleCheckMs?: number;
}

/**
 * Yields the messages matching `filter` in `[startSeq, endSeq)`, in order, with an ordered consumer,
 * and always ends. A consumer with nothing left to deliver never says so (what was there may have
 * been removed before it was delivered: a KV entry written again, a retention sweep), and one that
 * has lost its server-side state may deliver nothing for a while; so whenever it is quiet for
 * `idleCheckMs` the scan asks the stream for the next matching message itself: none in range ends
 * the scan, one is yielded (and skipped if the consumer delivers it later). The timer only decides
 * when to ask; the stream's answer decides what is read and when the scan is over.
 */
export async function* consumeRange(
  resources: ForkResources,
  stream: string,
  options: ConsumeRangeOptions,
): AsyncGenerator<ScannedMessage> {
  const { filter, endSeq } = options;
  const consumer = await resources.js.consumers.get(stream, {
    filter_subjects: filter,
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: options.startSeq,
  });
  const messages = await consumer.consume({ max_messages: options.batch ?? 256 });
  const deliveries = messages[Symbol.asyncIterator]();
  let nextSeq = options.startSeq;
  let waiting = deliveries.next();
  try {
    for (;;) {
      const result = await settledWithin(waiting, options.idleCheckMs ?? IDLE_CHECK_MS);
      if (result === undefined) {
        const next = await nextStored(resources, stream, filter, nextSeq);
        if (!next || next.seq >= endSeq) return;
        yield fetched(next);
        nextSeq = next.seq + 1;
        continue;
      }
      if (result.done || result.value.seq >= endSeq) return;
      waiting = deliveries.next();
      if (result.value.seq < nextSeq) continue; // already fetched while the consumer was quiet
      yield delivered(result.value);
      nextSeq = result.value.seq + 1;
      if (result.value.info.pending === 0) return;
    }
  } finally {
    messages.stop();
    // The delivery still awaited when the scan ended settles once the consumer stops; nobody reads it.
    waiting.catch(() => undefined);
  }
}

/** `promise`'s value, or `undefined` if it has not settled within `ms`. */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const quiet = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, quiet]);
  } finally {
    clearTimeout(timer);
  }
}

/** The first stored message of `stream` matching `filter` at or after `seq`, if any. */
async function nextStored(
  resources: ForkResources,
  stream: string,
  filter: string,
  seq: number,
): Promise<StoredMsg | null> {
  // `next_by_subj` is understood by STREAM.MSG.GET since nats-server 2.9 (the roles may use it; the
  // direct-get form needs another permission), though nats.js types it for direct gets only.
  const next: NextMsgRequest = { next_by_subj: filter, seq };
  return await resources.jsm.streams.getMessage(stream, next as unknown as MsgRequest);
}

/**
 * Yields the stored messages of `stream` matching `filter` from `fromSeq` on, one get each. For the
 * specs work queue, which admits no consumer beside the daemons' own; its messages are the live runs'.
 */
export async function* getEachMessage(
  resources: ForkResources,
  stream: string,
  options: { filter: string; fromSeq?: number },
): AsyncGenerator<StoredMsg> {
  let seq = Math.max(1, options.fromSeq ?? 1);
  for (;;) {
    const stored = await nextStored(resources, stream, options.filter, seq);
    if (!stored) return;
    yield stored;
    seq = stored.seq + 1;
  }
}
