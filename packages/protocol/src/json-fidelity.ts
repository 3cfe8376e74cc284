// Where JSON text holds a value that a JavaScript reading cannot write back as sent. forkd reads a
// parent's request into JavaScript values and writes them with JSON.stringify, so an object's
// integer-like keys move to the front in ascending order, and a number comes back in JavaScript's
// shortest form (`1.0` as `1`, `1e16` as `10000000000000000`, an integer past 2^53 with other
// digits, `1e400` as `null`). A parent written in JavaScript never sends such text (its own SDK read
// the model's reply the same way); one in another language can, and inside a tool's schema or a
// tool call's input, which the provider renders as sent, the child's prompt then differs from the
// parent's (docs/fork-semantics.md, "What a JavaScript reading of JSON cannot keep"). This finds the
// first such value, so that the proxy can say so instead of letting the forks miss the cache unseen.

/** A value whose text a JavaScript reading of the JSON would not write back as sent. */
export interface UnkeptJsonValue {
  /** Where: keys and indexes from the top, joined by dots (`tools.2.input_schema.properties.x.default`). */
  path: string;
  /** How the text has it: a number's text, or an object's keys in their order (`"b", "2"`). */
  sent: string;
  /** How JSON.stringify writes it back. */
  written: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
/** The keys a JavaScript object lists first, in ascending order: array indexes, 0 to 2^32 − 2. */
const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;
const MAX_ARRAY_INDEX = 2 ** 32 - 2;

function isArrayIndex(key: string): boolean {
  return ARRAY_INDEX.test(key) && Number(key) <= MAX_ARRAY_INDEX;
}

function isJsonWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

/** The order JavaScript lists an object's keys in, given their first appearances in the text. */
function javaScriptKeyOrder(keys: readonly string[]): string[] {
  const indexes = keys.filter(isArrayIndex).sort((a, b) => Number(a) - Number(b));
  return [...indexes, ...keys.filter((key) => !isArrayIndex(key))];
}

function quotedList(keys: readonly string[]): string {
  return keys.map((key) => JSON.stringify(key)).join(", ");
}

/** Found: ends the walk at the first unkept value in scope. */
class Found {
  constructor(readonly value: UnkeptJsonValue) {}
}

// A walk of valid JSON text that builds no values: it keeps the path, reads each number's text and
// each object's keys, and compares them with what JSON.stringify would write.
class FidelityWalk {
  #pos = 0;
  readonly #path: (string | number)[] = [];

  constructor(
    private readonly text: string,
    private readonly inScope: (topKey: string) => boolean,
  ) {}

  walk(): void {
    this.#value();
  }

  #skipWhitespace(): void {
    while (isJsonWhitespace(this.text.charCodeAt(this.#pos))) this.#pos++;
  }

  #report(sent: string, written: string): void {
    const top = this.#path[0];
    if (typeof top === "string" && this.inScope(top)) {
      throw new Found({ path: this.#path.join("."), sent, written });
    }
  }

  #value(): void {
    this.#skipWhitespace();
    const code = this.text.charCodeAt(this.#pos);
    if (code === QUOTE) this.#string();
    else if (code === 0x7b /* { */) this.#object();
    else if (code === 0x5b /* [ */) this.#array();
    else if (code === 0x74 /* t */ || code === 0x6e /* n */) this.#pos += 4;
    else if (code === 0x66 /* f */) this.#pos += 5;
    else this.#number();
  }

  #number(): void {
    NUMBER.lastIndex = this.#pos;
    const match = NUMBER.exec(this.text);
    if (match === null) throw new SyntaxError(`not JSON at position ${this.#pos}`);
    this.#pos += match[0].length;
    const written = JSON.stringify(Number(match[0]));
    if (written !== match[0]) this.#report(match[0], written);
  }

  /** Skips a string; returns its value when `decode` asks for it. */
  #string(decode = false): string {
    const start = this.#pos;
    let escaped = false;
    for (this.#pos++; ; this.#pos++) {
      const code = this.text.charCodeAt(this.#pos);
      if (code === QUOTE) break;
      if (Number.isNaN(code)) throw new SyntaxError("unterminated string");
      if (code === BACKSLASH) {
        escaped = true;
        this.#pos++;
      }
    }
    this.#pos++;
    if (!decode) return "";
    return escaped
      ? (JSON.parse(this.text.slice(start, this.#pos)) as string)
      : this.text.slice(start + 1, this.#pos - 1);
  }

  #array(): void {
    this.#pos++;
    this.#skipWhitespace();
    if (this.text.charCodeAt(this.#pos) === 0x5d /* ] */) {
      this.#pos++;
      return;
    }
    for (let index = 0; ; index++) {
      this.#member(index);
      if (!this.#anotherMember()) return;
    }
  }

  /** Walks one member's value with its key or index on the path. */
  #member(at: string | number): void {
    this.#path.push(at);
    this.#value();
    this.#path.pop();
  }

  /** After a member: steps over the comma (true) or the closing bracket (false). */
  #anotherMember(): boolean {
    this.#skipWhitespace();
    const comma = this.text.charCodeAt(this.#pos) === 0x2c; /* , */
    this.#pos++;
    return comma;
  }

  #object(): void {
    this.#pos++;
    const keys: string[] = [];
    const seen = new Set<string>();
    this.#skipWhitespace();
    if (this.text.charCodeAt(this.#pos) === 0x7d /* } */) {
      this.#pos++;
      return;
    }
    do {
      this.#skipWhitespace();
      const key = this.#string(true);
      // A repeated key keeps the place of its first appearance, as in JSON.parse.
      if (!seen.has(key)) {
        seen.add(key);
        keys.push(key);
      }
      this.#skipWhitespace();
      this.#pos++; // :
      this.#member(key);
    } while (this.#anotherMember());
    const order = javaScriptKeyOrder(keys);
    if (order.some((key, i) => key !== keys[i])) this.#report(quotedList(keys), quotedList(order));
  }
}

/**
 * The first value in `text` that JSON.stringify of its JavaScript reading would write differently:
 * a number not in its shortest form, or an object whose integer-like keys do not come first and in
 * ascending order. Only values under a key of the top-level object that `inScope` accepts are
 * reported (a request's `max_tokens: 32.0` does not reach the prompt). Undefined when there is none, and for text that is
 * not JSON or is nested too deep to walk. Whitespace and string escapes are not reported: a provider
 * parses the body, so they do not reach the prompt.
 *
 * Linear in the text, but a walk in JavaScript: check `text === JSON.stringify(JSON.parse(text))`
 * first, which holds for every body a JavaScript client wrote.
 */
export function firstValueJsonCannotKeep(
  text: string,
  inScope: (topKey: string) => boolean = () => true,
): UnkeptJsonValue | undefined {
  try {
    new FidelityWalk(text, inScope).walk();
    return undefined;
  } catch (error) {
    if (error instanceof Found) return error.value;
    return undefined;
  }
}
