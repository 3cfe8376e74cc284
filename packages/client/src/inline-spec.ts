// A spec that carries its prefix inline, written from bytes already checked: the prefix's (encoded and
// validated once per prefix object, as a stored prefix is) spliced after the rest of the spec
// (validated per fork). Encoding the whole spec per fork re-serialised and re-validated the prefix
// for every sibling.
import { type ForkSpecInput, forkSpecCodec } from "@forkd/protocol";
import { spliceInlineSpec } from "@forkd/protocol/internal";

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
