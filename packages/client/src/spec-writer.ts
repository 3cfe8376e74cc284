// Specs written from parts already checked. A caller validates each spec's own fields once (the spec
// with `prefix: {kind: "none"}`, encoded with `forkSpecCodec`) and each prefix once per prefix object;
// encoding the whole spec per fork re-serialised and re-validated what siblings share — an inline
// prefix's bytes, or, for a stored prefix, every field a second time.
import { type ForkSpecInput, forkSpecCodec } from "@forkd/protocol";
import { spliceInlineSpec } from "@forkd/protocol/internal";
import type { StoredPrefixRef } from "./prefix-encoding.js";

const utf8 = new TextEncoder();

/**
 * Writes specs whose checks are shared. For each prefix (its bytes, or its stored reference) the first
 * spec is decoded whole — so that the prefix is known to pass where it sits, nested inside a spec —
 * and each later one's size is checked, which is all that can change: the own fields were checked by
 * the caller, and a prefix that passed in one spec passes in any (no rule of the spec's schema relates
 * the prefix to another field).
 */
export class SpecWriter {
  readonly #checkedInline = new WeakSet<Uint8Array>();
  readonly #checkedRefs = new WeakSet<StoredPrefixRef>();

  /**
   * The bytes of `spec` with `prefixBytes` (a prefix as `forkPrefixCodec` encodes it) inline, spliced
   * after the spec's own fields (the layout of `spliceInlineSpec`).
   * @throws {ProtocolError} as `forkSpecCodec.encode` would for the whole spec
   */
  inline(spec: Omit<ForkSpecInput, "prefix">, prefixBytes: Uint8Array): Uint8Array {
    const bytes = spliceInlineSpec(spec, prefixBytes);
    if (!this.#checkedInline.has(prefixBytes) || bytes.byteLength > forkSpecCodec.maxBytes) {
      forkSpecCodec.decode(bytes);
      this.#checkedInline.add(prefixBytes);
    }
    return bytes;
  }

  /**
   * The bytes of `spec` naming the stored prefix `ref`: the same bytes `forkSpecCodec.encode` writes
   * for `{...spec, prefix: {kind: "ref", hash, size}}`. `ref` is recognised by identity: pass the
   * object made once per prefix, as the prefix's encoding cache holds it.
   * @throws {ProtocolError} as `forkSpecCodec.encode` would for the whole spec
   */
  byReference(spec: Omit<ForkSpecInput, "prefix">, ref: StoredPrefixRef): Uint8Array {
    const bytes = utf8.encode(
      JSON.stringify({ ...spec, prefix: { kind: "ref", hash: ref.hash, size: ref.size } }),
    );
    if (!this.#checkedRefs.has(ref) || bytes.byteLength > forkSpecCodec.maxBytes) {
      forkSpecCodec.decode(bytes);
      this.#checkedRefs.add(ref);
    }
    return bytes;
  }
}
