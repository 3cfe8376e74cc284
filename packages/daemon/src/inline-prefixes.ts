// Specs that carry their prefix inline, decoded with one shared copy per distinct prefix. Siblings of
// one parent (a fan-out, a parent that forks again and again) send the same prefix in every spec;
// validating it, hashing its cache key and serialising it for the provider once per prefix rather
// than once per spec is what a stored prefix (by reference) already gets from the prefix cache.
import { createHash } from "node:crypto";
import { sealSharedPrefix } from "@forkd/core/internal";
import { type ForkPrefix, type ForkSpec, forkSpecCodec } from "@forkd/protocol";
import { parseWireJson } from "@forkd/protocol/internal";

/**
 * Specs below this size are decoded as they are: an inline prefix this small costs less to validate
 * than to look up. @unit bytes
 */
export const MIN_CACHED_SPEC_BYTES = 4096;

type RawObject = Record<string, unknown>;

/** Whether a parsed JSON value is an object (not an array, not null). */
function isRawObject(value: unknown): value is RawObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The raw inline prefix of a parsed spec, if it has one. */
function rawInlinePrefix(raw: RawObject): object | undefined {
  const source = raw.prefix;
  if (source === null || typeof source !== "object") return undefined;
  const { kind, prefix } = source as { kind?: unknown; prefix?: unknown };
  return kind === "inline" && prefix !== null && typeof prefix === "object" ? prefix : undefined;
}

/**
 * Decodes fork specs as `forkSpecCodec.decode` does — the same checks, the same errors, the same
 * spec — but keeps the inline prefixes it validated, sealed (deeply frozen, so that their cache key
 * and request bytes are computed once for every run that shares them), under the SHA-256 of their
 * JSON as parsed from the spec. The key is computed here from the bytes each spec carries, never
 * taken from the sender: a spec whose prefix differs from a cached one by a byte has another key,
 * and a spec that fails validation adds nothing. The least recently used are dropped first, within
 * a bound on their total JSON size.
 */
export class InlinePrefixCache {
  readonly #maxBytes: number;
  readonly #entries = new Map<string, { prefix: ForkPrefix; size: number }>();
  #bytes = 0;

  /** @param maxBytes total JSON size of the kept prefixes. @unit bytes @default 67108864 */
  constructor(maxBytes = 64 * 1024 * 1024) {
    this.#maxBytes = maxBytes;
  }

  /** Number of kept prefixes. */
  get size(): number {
    return this.#entries.size;
  }

  /** A spec, validated; its inline prefix is the shared copy when one was kept. @throws {ProtocolError} */
  decodeSpec(data: Uint8Array): ForkSpec {
    if (data.byteLength < MIN_CACHED_SPEC_BYTES) return forkSpecCodec.decode(data);
    const raw = parseWireJson(data, forkSpecCodec.maxBytes);
    const rawPrefix = isRawObject(raw) ? rawInlinePrefix(raw) : undefined;
    if (!isRawObject(raw) || rawPrefix === undefined) return forkSpecCodec.decode(data);
    const json = JSON.stringify(rawPrefix);
    const key = createHash("sha256").update(json).digest("hex");
    const kept = this.#entries.get(key);
    if (kept) {
      this.#entries.delete(key);
      this.#entries.set(key, kept);
      // The rest of the spec is checked as always; the prefix it carries is the one kept, byte for byte.
      const rest = forkSpecCodec.decode(JSON.stringify({ ...raw, prefix: { kind: "none" } }));
      return { ...rest, prefix: { kind: "inline", prefix: kept.prefix } };
    }
    const spec = forkSpecCodec.decode(data);
    if (spec.prefix.kind === "inline" && json.length <= this.#maxBytes) {
      this.#entries.set(key, { prefix: sealSharedPrefix(spec.prefix.prefix), size: json.length });
      this.#bytes += json.length;
      for (const [oldestKey, oldest] of this.#entries) {
        if (this.#bytes <= this.#maxBytes) break;
        this.#entries.delete(oldestKey);
        this.#bytes -= oldest.size;
      }
    }
    return spec;
  }
}
