// JSON text to values, correct on every Node forkd supports. V8 12.8 and later (Node 24 and 26 among
// the lines forkd runs on) can decode an object key written with an escape (`"\""`, `"\n"`, `"\u0022"`)
// as the wrong string once an earlier parse in the process has left a matching map transition behind:
// `JSON.parse('{"h":[],"\\\\":0}')` makes `JSON.parse('{"h":1,"\\"":2}')` return the key `\`
// (https://github.com/nodejs/node/issues/63785). A conversation forwarded with a changed key is no
// longer the parent's, byte for byte, and two readers of one spec could disagree on its fields.
// Native parsing stays for every text without an escaped key, which is nearly all of them; the rest
// are read here.

import type { MAX_JSON_DEPTH } from "./limits.js";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

function isJsonWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

/**
 * Whether any object key in `text` is written with an escape, i.e. whether native `JSON.parse` could
 * misread it. Exact for valid JSON (a string followed by `:` is a key), and invalid JSON is refused by
 * either reader. Linear, and it jumps between quotes and backslashes with `indexOf` rather than
 * visiting each character: a conversation is mostly long strings, and a character loop cost as much
 * as the native parse it guards.
 */
export function hasEscapedKey(text: string): boolean {
  const length = text.length;
  let nextBackslash = text.indexOf("\\");
  if (nextBackslash === -1) return false;
  for (let open = text.indexOf('"'); open !== -1; ) {
    let close = text.indexOf('"', open + 1);
    while (close !== -1 && isEscapedAt(text, close)) close = text.indexOf('"', close + 1);
    if (close === -1) return false;
    if (nextBackslash !== -1 && nextBackslash < open) nextBackslash = text.indexOf("\\", open);
    if (nextBackslash === -1) return false;
    if (nextBackslash < close) {
      let next = close + 1;
      while (next < length && isJsonWhitespace(text.charCodeAt(next))) next++;
      if (text.charCodeAt(next) === COLON) return true;
    }
    open = text.indexOf('"', close + 1);
  }
  return false;
}

// Whether the quote at `at` is escaped: an odd run of backslashes before it.
function isEscapedAt(text: string, at: number): boolean {
  let run = 0;
  for (let i = at - 1; text.charCodeAt(i) === BACKSLASH; i--) run++;
  return run % 2 === 1;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

// A recursive-descent reader with JSON.parse's results: the same values, own `__proto__` data
// properties, the last of duplicate keys, a SyntaxError for anything JSON.parse refuses. Only texts
// with an escaped key come here; strings with escapes are still decoded natively, one string at a
// time, where V8 decodes them correctly.
class StrictJsonReader {
  #pos = 0;

  constructor(private readonly text: string) {}

  read(): unknown {
    const value = this.#value();
    this.#skipWhitespace();
    if (this.#pos !== this.text.length) this.#fail();
    return value;
  }

  #fail(): never {
    // An escape's backslash skips the next character, which can be one past the end.
    throw new SyntaxError(`not JSON at position ${Math.min(this.#pos, this.text.length)}`);
  }

  // Past the end, charCodeAt is NaN, which is neither whitespace nor any character the reader expects.
  #skipWhitespace(): void {
    while (isJsonWhitespace(this.text.charCodeAt(this.#pos))) this.#pos++;
  }

  #expect(code: number): void {
    if (this.text.charCodeAt(this.#pos) !== code) this.#fail();
    this.#pos++;
  }

  #value(): unknown {
    this.#skipWhitespace();
    const code = this.text.charCodeAt(this.#pos);
    if (code === QUOTE) return this.#string();
    if (code === 0x7b /* { */) return this.#object();
    if (code === 0x5b /* [ */) return this.#array();
    if (code === 0x74 /* t */) return this.#literal("true", true);
    if (code === 0x66 /* f */) return this.#literal("false", false);
    if (code === 0x6e /* n */) return this.#literal("null", null);
    return this.#number();
  }

  #literal<T>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.#pos)) this.#fail();
    this.#pos += word.length;
    return value;
  }

  #number(): number {
    NUMBER.lastIndex = this.#pos;
    const match = NUMBER.exec(this.text);
    if (!match) this.#fail();
    this.#pos += match[0].length;
    return Number(match[0]);
  }

  #string(): string {
    const start = this.#pos;
    let escaped = false;
    for (this.#pos++; ; this.#pos++) {
      const code = this.text.charCodeAt(this.#pos);
      if (code === QUOTE) {
        this.#pos++;
        // A lone string is decoded correctly by V8; only keys in objects are affected.
        return escaped
          ? (JSON.parse(this.text.slice(start, this.#pos)) as string)
          : this.text.slice(start + 1, this.#pos - 1);
      }
      // A raw control character, or the end of the text (NaN).
      if (!(code >= 0x20)) this.#fail();
      if (code === BACKSLASH) {
        escaped = true;
        this.#pos++;
      }
    }
  }

  #array(): unknown[] {
    this.#pos++;
    const array: unknown[] = [];
    this.#skipWhitespace();
    if (this.text.charCodeAt(this.#pos) === 0x5d /* ] */) {
      this.#pos++;
      return array;
    }
    for (;;) {
      array.push(this.#value());
      this.#skipWhitespace();
      if (this.text.charCodeAt(this.#pos) === 0x2c /* , */) {
        this.#pos++;
        continue;
      }
      this.#expect(0x5d);
      return array;
    }
  }

  #object(): Record<string, unknown> {
    this.#pos++;
    const object: Record<string, unknown> = {};
    this.#skipWhitespace();
    if (this.text.charCodeAt(this.#pos) === 0x7d /* } */) {
      this.#pos++;
      return object;
    }
    for (;;) {
      this.#skipWhitespace();
      if (this.text.charCodeAt(this.#pos) !== QUOTE) this.#fail();
      const key = this.#string();
      this.#skipWhitespace();
      this.#expect(COLON);
      const value = this.#value();
      // As JSON.parse defines a member: an own data property, so `__proto__` is a key like any other
      // (assignment would replace the prototype), and a repeated key keeps its place and takes the last value.
      Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
      this.#skipWhitespace();
      if (this.text.charCodeAt(this.#pos) === 0x2c /* , */) {
        this.#pos++;
        continue;
      }
      this.#expect(0x7d);
      return object;
    }
  }
}

/**
 * Reads JSON text as `JSON.parse` does, without reviver, and correctly where V8's native parser is
 * not (an escaped object key after certain earlier parses; see the module comment).
 * @param escapedKey whether `text` has an escaped key, when the caller's own scan already knows.
 * @throws SyntaxError for text that is not JSON, JSON.parse's own; RangeError for an escaped-key text
 *   nested deeper than the stack (thousands of levels; forkd's messages allow {@link MAX_JSON_DEPTH}).
 */
export function parseJsonText(text: string, escapedKey = hasEscapedKey(text)): unknown {
  if (!escapedKey) return JSON.parse(text);
  try {
    return readJsonStrictly(text);
  } catch (error) {
    // Whether a text is JSON is not what V8 gets wrong: where it refuses too, its refusal (with the
    // message users know) is the one thrown.
    JSON.parse(text);
    throw error;
  }
}

/**
 * The reader for texts with an escaped key, on its own (parseJsonText uses it; tests read its refusals).
 * @throws SyntaxError naming the position where the text stopped being JSON.
 */
export function readJsonStrictly(text: string): unknown {
  return new StrictJsonReader(text).read();
}
