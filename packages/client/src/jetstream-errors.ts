// The JetStream API errors forkd decides on, matched by type and code, never by their text (as
// nats.js's own KV does): a lost compare-and-set, a full stream, a resource another process made.
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";

/**
 * True when JetStream refused a write because another writer got there first: a KV update or create
 * (expected revision 0) whose revision no longer matches, or a publish whose
 * `Nats-Expected-Last-Subject-Sequence` does. Decided on the API error's code, never on its text.
 */
export function isWrongLastSequence(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamWrongLastSequence ||
      error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/**
 * True when JetStream could not store a write for lack of room: the stream or bucket reached its
 * `max_bytes` (a store failure, 10077) or the account or server has no storage left (10047).
 */
export function isStorageFull(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === STREAM_STORE_FAILED || error.code === INSUFFICIENT_RESOURCES)
  );
}

/**
 * True when JetStream refused to create a stream or consumer because one of that name already
 * exists: another process created it first (10058 stream name in use, 10013 consumer name in use,
 * 10148 consumer already exists).
 */
export function isAlreadyExists(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === STREAM_NAME_IN_USE ||
      error.code === CONSUMER_NAME_IN_USE ||
      error.code === CONSUMER_EXISTS)
  );
}

// JetStream API error codes that nats.js does not name.
const STREAM_STORE_FAILED = 10077;
const INSUFFICIENT_RESOURCES = 10047;
const STREAM_NAME_IN_USE = 10058;
const CONSUMER_NAME_IN_USE = 10013;
const CONSUMER_EXISTS = 10148;
