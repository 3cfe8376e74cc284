// Size and shape limits applied before any schema runs, so hostile input is cheap to refuse.

/** Largest fork spec accepted by the codec. A spec over NATS's default `max_payload` (1 MiB) must reference its prefix in the object store instead of inlining it. @unit bytes */
export const MAX_SPEC_BYTES = 4 * 1024 * 1024;
/** Largest stored prefix object accepted (a 1M-token conversation is ~4 MB of JSON). @unit bytes */
export const MAX_PREFIX_BYTES = 64 * 1024 * 1024;
/** Largest event, abort, registry entry or control message accepted. @unit bytes */
export const MAX_EVENT_BYTES = 1024 * 1024;
/**
 * Largest abort or permission answer accepted. These are small by nature (a reason of at most 4096
 * characters, even fully `\u`-escaped) and any parent can send them, so a daemon refuses a bigger
 * one before decoding it. @unit bytes
 */
export const MAX_CONTROL_BYTES = 32 * 1024;
/** Deepest JSON nesting accepted anywhere (tool inputs included). */
export const MAX_JSON_DEPTH = 128;
/** Longest run id: a single NATS subject token that is also a valid JetStream KV key. */
export const MAX_RUN_ID_LENGTH = 128;
/**
 * A client's default choice between an inline prefix and a reference: above this, the prefix is
 * uploaded once to the object store and every spec references it, so N forks of a 48k-token parent
 * (~190 KB) move it once, not N times, and specs stay small. @unit bytes
 */
export const INLINE_PREFIX_THRESHOLD_BYTES = 32 * 1024;
