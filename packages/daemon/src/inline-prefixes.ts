// Specs that carry their prefix inline, decoded with one shared copy per distinct prefix. Siblings of
// one parent (a fan-out, a parent that forks again and again) send the same prefix in every spec;
// validating it, hashing its cache key and serialising it for the provider once per prefix rather
// than once per spec is what a stored prefix (by reference) already gets from the prefix cache.
// forkd's client writes the prefix last (`spliceInlineSpec`), so a sibling's spec ends with the very
// bytes of a kept prefix: compared byte for byte, it is recognised without parsing it at all.
import { createHash } from "node:crypto";
import { sealSharedPrefix } from "@forkd/core/internal";
import { type ForkPrefix, type ForkSpec, forkSpecCodec } from "@forkd/protocol";
import { parseWireJson, splitInlineSpec } from "@forkd/protocol/internal";

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

const utf8 = new TextEncoder();

interface KeptPrefix {
  prefix: ForkPrefix;
  /** What it counts against the bound: its JSON's length and its bytes'. */
  size: number;
  /** Its JSON's bytes: those a spec in the spliced layout ends with when it carries this prefix. */
  tail: Uint8Array;
}

/**
 * How a spec with an inline prefix was decoded: `tail`, recognised by its last bytes (only the spec's
 * own fields parsed); `hash`, parsed whole and its prefix then found by its hash; `whole`, parsed and
 * validated whole.
 */
export type InlinePrefixDecode = "tail" | "hash" | "whole";

/**
 * Decodes fork specs as `forkSpecCodec.decode` does — the same checks, the same errors, the same
 * spec — but keeps the inline prefixes it validated, sealed (deeply frozen, so that their cache key
 * and request bytes are computed once for every run that shares them), under the SHA-256 of their
 * JSON as parsed from the spec. The key is computed here from the bytes each spec carries, never
 * taken from the sender: a spec whose prefix differs from a cached one by a byte has another key,
 * and a spec that fails validation adds nothing. The least recently used are dropped first, within
 * a bound on their total size (each prefix's JSON and the same JSON's bytes).
 */
export class InlinePrefixCache {
  readonly #maxBytes: number;
  readonly #entries = new Map<string, KeptPrefix>();
  /** Keys of the kept prefixes with a known tail, by the tail's length. */
  readonly #keysByTailLength = new Map<number, Set<string>>();
  #bytes = 0;
  readonly #onDecode: ((how: InlinePrefixDecode) => void) | undefined;

  /**
   * @param maxBytes total size of the kept prefixes: their JSON's length plus its bytes'. @unit bytes @default 67108864
   * @param onDecode told how each spec with an inline prefix was decoded (the daemon's metric).
   */
  constructor(maxBytes = 64 * 1024 * 1024, onDecode?: (how: InlinePrefixDecode) => void) {
    this.#maxBytes = maxBytes;
    this.#onDecode = onDecode;
  }

  /** Number of kept prefixes. */
  get size(): number {
    return this.#entries.size;
  }

  /** A spec, validated; its inline prefix is the shared copy when one was kept. @throws {ProtocolError} */
  decodeSpec(data: Uint8Array): ForkSpec {
    if (data.byteLength < MIN_CACHED_SPEC_BYTES) return forkSpecCodec.decode(data);
    // Over the limit: the full decode refuses it, with the codec's error.
    if (data.byteLength <= forkSpecCodec.maxBytes) {
      const recognised = this.#decodeByTail(data);
      if (recognised) return recognised;
    }
    const raw = parseWireJson(data, forkSpecCodec.maxBytes);
    const rawPrefix = isRawObject(raw) ? rawInlinePrefix(raw) : undefined;
    if (!isRawObject(raw) || rawPrefix === undefined) return forkSpecCodec.decode(data);
    const json = JSON.stringify(rawPrefix);
    const key = createHash("sha256").update(json).digest("hex");
    const kept = this.#entries.get(key);
    if (kept) {
      this.#onDecode?.("hash");
      this.#touch(key, kept);
      // The rest of the spec is checked as always; the prefix it carries is the one kept, byte for byte.
      const rest = forkSpecCodec.decode(JSON.stringify({ ...raw, prefix: { kind: "none" } }));
      return { ...rest, prefix: { kind: "inline", prefix: kept.prefix } };
    }
    const spec = forkSpecCodec.decode(data);
    this.#onDecode?.("whole");
    if (spec.prefix.kind === "inline") this.#keep(key, spec.prefix.prefix, json);
    return spec;
  }

  // A spec that ends with the bytes of a kept prefix, in the spliced layout: its own fields decoded
  // with the codec's checks, its prefix the kept one. Anything else, a refusal included, goes the full
  // way, so that a bad spec gets the codec's error for its whole bytes.
  #decodeByTail(data: Uint8Array): ForkSpec | undefined {
    const split = splitInlineSpec(data);
    if (!split) return undefined;
    const { prefixBytes } = split;
    for (const key of this.#keysByTailLength.get(prefixBytes.byteLength) ?? []) {
      const kept = this.#entries.get(key)!;
      if (!Buffer.from(prefixBytes.buffer, prefixBytes.byteOffset, prefixBytes.byteLength).equals(kept.tail))
        continue;
      let rest: ForkSpec;
      try {
        rest = forkSpecCodec.decode(split.rest);
      } catch {
        return undefined; // refused by the full decode, with the error the codec gives for the whole spec
      }
      this.#onDecode?.("tail");
      this.#touch(key, kept);
      return { ...rest, prefix: { kind: "inline", prefix: kept.prefix } };
    }
    return undefined;
  }

  #keep(key: string, prefix: ForkPrefix, json: string): void {
    const tail = utf8.encode(json);
    const size = json.length + tail.byteLength;
    if (size > this.#maxBytes) return;
    this.#entries.set(key, { prefix: sealSharedPrefix(prefix), size, tail });
    this.#bytes += size;
    const keys = this.#keysByTailLength.get(tail.byteLength) ?? new Set<string>();
    this.#keysByTailLength.set(tail.byteLength, keys.add(key));
    for (const [oldestKey, oldest] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#forget(oldestKey, oldest);
    }
  }

  #touch(key: string, kept: KeptPrefix): void {
    this.#entries.delete(key);
    this.#entries.set(key, kept);
  }

  #forget(key: string, kept: KeptPrefix): void {
    this.#entries.delete(key);
    this.#bytes -= kept.size;
    const keys = this.#keysByTailLength.get(kept.tail.byteLength);
    keys?.delete(key);
    if (keys?.size === 0) this.#keysByTailLength.delete(kept.tail.byteLength);
  }
}
