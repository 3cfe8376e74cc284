// A spec that carries its prefix inline, written from bytes already checked: the prefix's (encoded and
// validated once per prefix object, as a stored prefix is) spliced after the rest of the spec
// (validated per fork). Encoding the whole spec per fork re-serialised and re-validated the prefix
// for every sibling.
import { type ForkSpecInput, forkSpecCodec } from "@forkd/protocol";

const utf8 = new TextEncoder();
const INLINE_OPENING = utf8.encode(',"prefix":{"kind":"inline","prefix":');
const CLOSING = utf8.encode("}}");

/**
 * The bytes of `spec` with `prefixBytes` (a prefix as `forkPrefixCodec` encodes it) as its inline
 * prefix: `spec`'s own fields first, `prefix` last. Checks nothing; see {@link InlineSpecWriter}.
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

/**
 * Writes inline specs whose checks are shared. A caller validates each spec's own fields (the spec with
 * `prefix: {kind: "none"}`, encoded with `forkSpecCodec`) and each prefix's bytes (`forkPrefixCodec`);
 * this writer decodes the first spec of each prefix whole — so that the prefix is known to pass where
 * it sits, nested inside a spec — and checks each later one's size, which is all that can change.
 */
export class InlineSpecWriter {
  readonly #checked = new WeakSet<Uint8Array>();

  /** The spec's bytes. @throws {ProtocolError} as `forkSpecCodec.encode` would for the whole spec */
  write(spec: Omit<ForkSpecInput, "prefix">, prefixBytes: Uint8Array): Uint8Array {
    const bytes = spliceInlineSpec(spec, prefixBytes);
    if (!this.#checked.has(prefixBytes) || bytes.byteLength > forkSpecCodec.maxBytes) {
      forkSpecCodec.decode(bytes);
      this.#checked.add(prefixBytes);
    }
    return bytes;
  }
}
