// Parses a request body from its bytes without ever making one string of the whole body.
//
// V8 puts every string longer than ~128 KiB in its large-object space: each such string is a memory
// mapping of its own, mapped and unmapped again once it dies. On the 2-core benchmark machine that
// costs ~1 ms per 190 kB body (half of it in the kernel), as much as everything else the simulator
// does with a 48k-token request. So a large body is cut at its own structure: the containers near the
// top (the body object, its `messages` and `tools` arrays, any element still too large) are built here,
// and everything below them is decoded and parsed by `JSON.parse` one piece at a time, each piece a
// string of young-generation size.
//
// Forks of one parent send the same ~190 kB of prefix again and again, so a piece seen before is not
// parsed again: its value comes from a memo of pieces by their exact bytes (ParsedPieces). A value
// from the memo is deeply frozen, since the next request with the same bytes gets the very same one.
//
// The result is exactly `JSON.parse(bytes.toString("utf8"))` (read as specified, where V8 misreads an
// escaped key: see parseJsonText), frozen where it came from the memo:
// every primitive and every small container is parsed by `JSON.parse` itself; the pieces are cut only
// at ASCII bytes (structural characters outside strings), where no UTF-8 sequence can be split;
// containers built here define their keys as `JSON.parse` does (own data properties, so `__proto__`
// is a key like any other, and a repeated key keeps its first place and its last value). A body the
// cutter finds malformed is handed whole to `JSON.parse`, so a syntax error reads as it always did.
//
// Asked for it ({@link Fidelity}), the parse also tells whether every value in the body is one a
// JavaScript reading keeps (a number in its shortest form, integer-like keys first and in order):
// only a body that fails that can hold prompt elements the provider renders differently from their
// JavaScript writing, and only for such a body does the simulator walk the text to find them
// (exchange.ts, verbatim.ts). The test is {@link keptByJavaScript} of each piece's text, made once per
// piece when it is parsed and kept in the memo with its value, so that a prefix sent again costs
// nothing more, and a look at the key order of each object the cutter builds; a body parsed whole is
// tested whole. Every body JSON.stringify wrote passes it.

import { keptByJavaScript, parseJsonText } from "@forkd/protocol/internal";

/** Bodies up to this size are parsed whole; so is every piece up to it. @unit bytes */
export const WHOLE_PARSE_BYTES = 64 * 1024;

/**
 * Containers nested deeper than this are parsed whole however large: each level cut scans its bytes
 * once more, so a body of deeply nested large arrays costs at most this many passes, not one per level.
 */
export const MAX_CUT_DEPTH = 4;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** Pieces at least this large are looked up in, and kept by, the memo of parsed pieces. @unit bytes */
export const MEMO_MIN_BYTES = 64;

/** The memo of parsed pieces holds at most this many bytes of pieces; past it, it starts again. @unit bytes */
export const MEMO_MAX_BYTES = 32 * 1024 * 1024;

/** Pieces of one length the memo keeps; a newer one pushes out the oldest. */
export const MEMO_PER_LENGTH = 8;

/**
 * Whether a parsed body's values are all as a JavaScript reading keeps them ({@link keptByJavaScript}):
 * `kept: true` says that `valuesJsonCannotKeep` of the body finds nothing; `kept: false` only
 * that it may find something.
 */
export interface Fidelity {
  kept: boolean;
}

/** Thrown by the cutter at anything it does not recognise; the body is then parsed whole. */
class NotCut extends Error {}

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}

/** One parsed piece of the memo. */
interface ParsedPiece {
  readonly bytes: Buffer;
  readonly value: unknown;
  /** {@link keptByJavaScript} of the piece's text; found when first asked for. */
  kept: boolean | undefined;
}

/** Parsed pieces by their exact bytes, so that a prefix sent again is compared, not parsed. */
class ParsedPieces {
  readonly #byLength = new Map<number, ParsedPiece[]>();
  #bytes = 0;

  /**
   * The piece `source[from, to)` parsed: from the memo if those bytes were parsed before. With
   * `check`, its `kept` is known (computed once per piece, then kept with it).
   */
  parse(source: Buffer, from: number, to: number, stats: CutStats | undefined, check: boolean): ParsedPiece {
    const length = to - from;
    const known = this.#byLength.get(length);
    if (known !== undefined) {
      for (const piece of known) {
        if (source.compare(piece.bytes, 0, length, from, to) === 0) {
          if (stats !== undefined) stats.memoHits++;
          if (check && piece.kept === undefined) {
            piece.kept = keptByJavaScript(piece.bytes.toString("utf8"));
          }
          return piece;
        }
      }
    }
    const text = source.toString("utf8", from, to);
    const value = deepFreeze(parseJsonText(text));
    if (this.#bytes + length > MEMO_MAX_BYTES) this.clear();
    const pieces = this.#byLength.get(length) ?? [];
    if (pieces.length === MEMO_PER_LENGTH) this.#bytes -= pieces.pop()!.bytes.length;
    // A copy: a view would keep the whole body alive for one piece of it.
    const piece: ParsedPiece = {
      bytes: Buffer.from(source.subarray(from, to)),
      value,
      kept: check ? keptByJavaScript(text) : undefined,
    };
    pieces.unshift(piece);
    this.#byLength.set(length, pieces);
    this.#bytes += length;
    return piece;
  }

  clear(): void {
    this.#byLength.clear();
    this.#bytes = 0;
  }

  /** Bytes of pieces held. @unit bytes */
  get bytes(): number {
    return this.#bytes;
  }
}

// One memo for the process, as a body's bytes mean the same JSON whichever server received them.
const parsedPieces = new ParsedPieces();

/** Bytes of pieces the process's memo holds, for tests of its bound. @unit bytes */
export function memoBytes(): number {
  return parsedPieces.bytes;
}

/** Empties the process's memo of parsed pieces (tests). */
export function clearMemo(): void {
  parsedPieces.clear();
}

/** What one {@link parseJsonBytes} did, for tests of its bounds. */
export interface CutStats {
  /** Bytes the cutter scanned for separators, over every container it cut. @unit bytes */
  scannedBytes: number;
  /** Whether the body went whole to `JSON.parse` in the end: small, not a container, or malformed. */
  parsedWhole: boolean;
  /** Pieces whose value came from the memo. */
  memoHits: number;
}

/**
 * The body's JSON value, as `JSON.parse` of its UTF-8 text gives it (and throwing what that throws),
 * without a string of the whole body when it is larger than {@link WHOLE_PARSE_BYTES}. With
 * `fidelity`, also sets `fidelity.kept` (see {@link Fidelity}).
 */
export function parseJsonBytes(bytes: Buffer, stats?: CutStats, fidelity?: Fidelity): unknown {
  if (bytes.length > WHOLE_PARSE_BYTES) {
    try {
      const cutter = new Cutter(bytes, stats, fidelity !== undefined);
      const start = cutter.skipWhitespace(0);
      const { value, end } = cutter.container(start, 0);
      if (cutter.skipWhitespace(end) === bytes.length) {
        if (fidelity !== undefined) fidelity.kept = cutter.kept;
        return value;
      }
    } catch {
      // Malformed (or cut where it cannot be): the whole parse below gives the value or the error.
    }
  }
  if (stats !== undefined) stats.parsedWhole = true;
  const text = bytes.toString("utf8");
  const value = parseJsonText(text);
  if (fidelity !== undefined) fidelity.kept = keptByJavaScript(text);
  return value;
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

class Cutter {
  readonly #bytes: Buffer;
  readonly #stats: CutStats | undefined;
  /** Whether {@link kept} is asked for. */
  readonly #check: boolean;
  /**
   * With `check`: whether every piece so far passes {@link keptByJavaScript} and every object built
   * here has its keys in JavaScript's order, each once (once false, nothing more is checked).
   */
  kept = true;

  constructor(bytes: Buffer, stats: CutStats | undefined, check: boolean) {
    this.#bytes = bytes;
    this.#stats = stats;
    this.#check = check;
  }

  skipWhitespace(at: number): number {
    const bytes = this.#bytes;
    let i = at;
    while (i < bytes.length && isWhitespace(bytes[i]!)) i++;
    return i;
  }

  /** The index just past the string whose opening quote is at `at`. */
  #stringEnd(at: number): number {
    const bytes = this.#bytes;
    let from = at + 1;
    for (;;) {
      const quote = bytes.indexOf(QUOTE, from);
      if (quote < 0) throw new NotCut();
      let backslashes = 0;
      while (bytes[quote - 1 - backslashes] === BACKSLASH) backslashes++;
      if (backslashes % 2 === 0) return quote + 1;
      from = quote + 1;
    }
  }

  /**
   * The container opening at `at` (after whitespace): the positions of its separators at its own
   * level (commas, and for an object the colon of each member) and the index just past its close.
   */
  #scan(at: number): { commas: number[]; colons: number[]; end: number } {
    const bytes = this.#bytes;
    const open = bytes[at];
    const close = open === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
    const commas: number[] = [];
    const colons: number[] = [];
    let nesting = 0;
    let i = at + 1;
    while (i < bytes.length) {
      const byte = bytes[i]!;
      if (byte === QUOTE) {
        i = this.#stringEnd(i);
        continue;
      }
      if (byte === OPEN_BRACE || byte === OPEN_BRACKET) nesting++;
      else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        if (nesting === 0) {
          if (byte !== close) throw new NotCut();
          if (this.#stats !== undefined) this.#stats.scannedBytes += i + 1 - at;
          return { commas, colons, end: i + 1 };
        }
        nesting--;
      } else if (nesting === 0) {
        if (byte === COMMA) commas.push(i);
        else if (byte === COLON) colons.push(i);
      }
      i++;
    }
    throw new NotCut();
  }

  /** The value between `from` and `to` (whitespace around it allowed): parsed whole, or cut again if it is a large container. */
  #value(from: number, to: number, depth: number): unknown {
    const start = this.skipWhitespace(from);
    const byte = this.#bytes[start];
    const large = to - from > WHOLE_PARSE_BYTES && depth <= MAX_CUT_DEPTH;
    if (large && (byte === OPEN_BRACE || byte === OPEN_BRACKET)) {
      const { value, end } = this.container(start, depth);
      if (this.skipWhitespace(end) !== to) throw new NotCut();
      return value;
    }
    const check = this.#check && this.kept;
    if (to - from >= MEMO_MIN_BYTES) {
      const piece = parsedPieces.parse(this.#bytes, from, to, this.#stats, check);
      if (check && piece.kept !== true) this.kept = false;
      return piece.value;
    }
    const text = this.#bytes.toString("utf8", from, to);
    const value = parseJsonText(text);
    if (check && !keptByJavaScript(text)) this.kept = false;
    return value;
  }

  /** The object or array opening at `at`, built from its members, and the index just past it. */
  container(at: number, depth: number): { value: unknown; end: number } {
    const bytes = this.#bytes;
    const open = bytes[at];
    if (open !== OPEN_BRACE && open !== OPEN_BRACKET) throw new NotCut();
    const { commas, colons, end } = this.#scan(at);
    const close = end - 1;
    const empty = commas.length === 0 && this.skipWhitespace(at + 1) === close;
    if (open === OPEN_BRACKET) {
      const array: unknown[] = [];
      if (!empty) {
        let from = at + 1;
        for (const comma of [...commas, close]) {
          array.push(this.#value(from, comma, depth + 1));
          from = comma + 1;
        }
      }
      return { value: array, end };
    }
    const object: Record<string, unknown> = {};
    // The keys in the text's order: JSON.stringify would write them in Object.keys order, integer-like
    // ones first, and each once.
    const keys: string[] | undefined = this.#check && this.kept ? [] : undefined;
    if (!empty) {
      if (colons.length !== commas.length + 1) throw new NotCut();
      let from = at + 1;
      commas.push(close);
      for (let m = 0; m < colons.length; m++) {
        const colon = colons[m]!;
        const next = commas[m]!;
        if (colon < from || colon > next) throw new NotCut();
        const key = JSON.parse(bytes.toString("utf8", from, colon)) as unknown;
        if (typeof key !== "string") throw new NotCut();
        keys?.push(key);
        // As JSON.parse defines it: an own data property, never a setter (`__proto__`).
        Object.defineProperty(object, key, {
          value: this.#value(colon + 1, next, depth + 1),
          writable: true,
          enumerable: true,
          configurable: true,
        });
        from = next + 1;
      }
    }
    if (keys !== undefined && !sameKeys(Object.keys(object), keys)) this.kept = false;
    return { value: object, end };
  }
}
