// The byte layout in which forkd's client writes a spec that carries its prefix inline: the spec's own
// fields, then the prefix's bytes (encoded once per prefix object) spliced in last. Siblings of one
// parent send the same prefix bytes at the end of every spec, so a reader that kept a prefix can
// recognise it by comparing bytes instead of parsing, walking and hashing it again (the daemon's
// `InlinePrefixCache`). The layout is a convention, not a requirement: a spec written any other way
// is valid JSON all the same and is decoded in full.
import type { ForkSpecInput } from "./spec.js";

const utf8 = new TextEncoder();
const INLINE_OPENING = utf8.encode(',"prefix":{"kind":"inline","prefix":');
const CLOSING = utf8.encode("}}");
const NONE_PREFIX_CLOSING = utf8.encode(',"prefix":{"kind":"none"}}');

/**
 * The bytes of `spec` with `prefixBytes` (a prefix as `forkPrefixCodec` encodes it) as its inline
 * prefix: `spec`'s own fields first, `prefix` last. Checks nothing.
 */
export function spliceInlineSpec(spec: Omit<ForkSpecInput, "prefix">, prefixBytes: Uint8Array): Uint8Array {
  const rest = utf8.encode(JSON.stringify({ ...spec, prefix: undefined }));
  const bytes = new Uint8Array(rest.byteLength - 1 + INLINE_OPENING.byteLength + prefixBytes.byteLength + 2);
  bytes.set(rest.subarray(0, rest.byteLength - 1)); // without its closing brace
  let at = rest.byteLength - 1;
  bytes.set(INLINE_OPENING, at);
  at += INLINE_OPENING.byteLength;
  bytes.set(prefixBytes, at);
  bytes.set(CLOSING, at + prefixBytes.byteLength);
  return bytes;
}

/** A spec in the spliced layout, cut where its inline prefix begins. */
export interface SplitInlineSpec {
  /**
   * The spec's own fields with `"prefix":{"kind":"none"}` in place of the inline one, to decode as a
   * spec. When these bytes are a valid JSON object and `prefixBytes` is one complete JSON value, the
   * whole spec is exactly this object with `prefix` set to `{kind: "inline", prefix: <that value>}`:
   * the cut can only sit between two of the object's members (see {@link splitInlineSpec}).
   */
  readonly rest: Uint8Array;
  /** The bytes between the opening of the inline prefix and the spec's last two braces. */
  readonly prefixBytes: Uint8Array;
}

/**
 * Cuts a spec written by {@link spliceInlineSpec} into its own fields and its prefix's bytes, without
 * parsing either; `undefined` when the bytes do not have that shape. Checks nothing: the caller
 * decodes `rest` and must know `prefixBytes` to be one complete, valid JSON value (for the daemon,
 * bytes equal to those of a prefix it decoded before), or else decode the whole spec.
 *
 * Why the cut is safe when `rest` decodes: `rest` is the spec's bytes up to the first
 * `,"prefix":{"kind":"inline","prefix":` followed by `,"prefix":{"kind":"none"}}`. For that to be one
 * JSON object, the cut must fall outside any string (inside one, the next `"` would close it and the
 * bare word `prefix` could not follow) and at the object's top level, after a complete member (in a
 * nested container the final brace would leave the object open; in an array, a `:` cannot follow).
 * The whole spec is then that object's members, then the member `"prefix":{"kind":"inline","prefix":
 * <value>}`, then the closing brace — a later duplicate `prefix` wins in JSON.parse, as it does here.
 */
export function splitInlineSpec(data: Uint8Array): SplitInlineSpec | undefined {
  const end = data.byteLength - CLOSING.byteLength;
  if (end <= 0 || data[end] !== CLOSING[0] || data[end + 1] !== CLOSING[1]) return undefined;
  const cut = Buffer.from(data.buffer, data.byteOffset, data.byteLength).indexOf(INLINE_OPENING);
  if (cut < 1) return undefined;
  const prefixStart = cut + INLINE_OPENING.byteLength;
  if (prefixStart >= end) return undefined;
  const rest = new Uint8Array(cut + NONE_PREFIX_CLOSING.byteLength);
  rest.set(data.subarray(0, cut));
  rest.set(NONE_PREFIX_CLOSING, cut);
  return { rest, prefixBytes: data.subarray(prefixStart, end) };
}
