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

/**
 * Yields the messages of `stream` matching `filter` from `fromSeq` on, in order, and stops at the last
 * one stored when the scan reached it (never waiting for new ones). Breaking out releases the consumer.
 */
export async function* scanStream(
  resources: ForkResources,
  stream: string,
  options: ScanStreamOptions,
): AsyncGenerator<JsMsg> {
  const fromSeq = Math.max(1, options.fromSeq ?? 1);
  // A consumer with nothing to deliver would wait for the next message: ask first whether there is one.
  // `next_by_subj` is understood by STREAM.MSG.GET since nats-server 2.9 (the roles may use it; the
  // direct-get form needs another permission), though nats.js types it for direct gets only.
  const next: NextMsgRequest = { next_by_subj: options.filter, seq: fromSeq };
  const first = await resources.jsm.streams.getMessage(stream, next as unknown as MsgRequest);
  if (!first) return;
  if (options.beforeSeq !== undefined && first.seq >= options.beforeSeq) return;
  const consumer = await resources.js.consumers.get(stream, {
    filter_subjects: options.filter,
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: first.seq,
  });
  const messages = await consumer.consume({ max_messages: options.batch ?? 256 });
  try {
    for await (const message of messages) {
      if (options.beforeSeq !== undefined && message.seq >= options.beforeSeq) return;
      yield message;
      if (message.info.pending === 0) return;
    }
  } finally {
    messages.stop();
  }
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
    const next: NextMsgRequest = { next_by_subj: options.filter, seq };
    const stored = await resources.jsm.streams.getMessage(stream, next as unknown as MsgRequest);
    if (!stored) return;
    yield stored;
    seq = stored.seq + 1;
  }
}
