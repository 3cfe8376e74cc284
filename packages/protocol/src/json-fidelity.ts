// Where JSON text holds a value that a JavaScript reading cannot write back as sent. forkd reads a
// parent's request into JavaScript values and writes them with JSON.stringify, so an object's
// integer-like keys move to the front in ascending order, and a number comes back in JavaScript's
// shortest form (`1.0` as `1`, `1e16` as `10000000000000000`, an integer past 2^53 with other
// digits, `1e400` as `null`). A parent written in JavaScript never sends such text (its own SDK read
// the model's reply the same way); one in another language can, and inside a tool's schema or a
// tool call's input, which the provider renders as sent, the child's prompt then differs from the
// parent's (docs/fork-semantics.md, "What a JavaScript reading of JSON cannot keep"). This finds
// where such values are, with their exact text, so that a fork can send that text back as it came.

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

/**
 * Told of each value a JavaScript reading would write differently (a number, or an object's keys) as
 * the walk reaches it: a number while its own member is open, an object's keys while the object's is.
 */
type UnkeptListener = () => void;

/** Told where each member's value starts and ends (`start` after whitespace, `end` just past it). */
interface MemberSpans {
  enter(path: readonly (string | number)[], start: number): void;
  leave(path: readonly (string | number)[], end: number): void;
}

// A walk of valid JSON text that builds no values: it keeps the path, reads each number's text and
// each object's keys, and compares them with what JSON.stringify would write.
class FidelityWalk {
  #pos = 0;
  readonly #path: (string | number)[] = [];

  constructor(
    private readonly text: string,
    private readonly onUnkept: UnkeptListener,
    private readonly spans: MemberSpans,
  ) {}

  walk(): void {
    this.#value();
    this.#skipWhitespace();
    // Text cut short leaves the walk past its end; the walk checks nothing else of the grammar.
    if (this.#pos !== this.text.length) throw new SyntaxError(`not JSON at position ${this.#pos}`);
  }

  #skipWhitespace(): void {
    while (isJsonWhitespace(this.text.charCodeAt(this.#pos))) this.#pos++;
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
    if (JSON.stringify(Number(match[0])) !== match[0]) this.onUnkept();
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
    this.#skipWhitespace();
    this.spans.enter(this.#path, this.#pos);
    this.#value();
    this.spans.leave(this.#path, this.#pos);
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
    if (order.some((key, i) => key !== keys[i])) this.onUnkept();
  }
}

/** A value of JSON text that a JavaScript reading would not write back as sent, with its exact text. */
export interface UnkeptValueText {
  /** Keys and indexes from the top: the innermost object or array holding what would be written differently. */
  at: (string | number)[];
  /** Its exact text. */
  text: string;
}

/**
 * The innermost objects and arrays of `text` holding a value that JSON.stringify of its JavaScript
 * reading would write differently (a number, or the object's own keys), each with its exact text;
 * only under a top-level key `inScope` accepts. Each is as small as can carry the difference, so that
 * whatever JavaScript code copies around it, it is still found, and the text it stands for is short.
 * Empty for text a JavaScript client wrote, and for text that is not JSON or is nested too deep to
 * walk. A walk of the whole text: check `text === JSON.stringify(JSON.parse(text))` first.
 */
export function valuesJsonCannotKeep(
  text: string,
  inScope: (topKey: string) => boolean = () => true,
): UnkeptValueText[] {
  const found: UnkeptValueText[] = [];
  // Every open member, with where it starts, and for an object or an array whether it holds one.
  const open: { start: number; container: boolean; unkept: boolean }[] = [];
  const spans: MemberSpans = {
    enter(_path, start) {
      const code = text.charCodeAt(start);
      open.push({ start, container: code === 0x7b /* { */ || code === 0x5b /* [ */, unkept: false });
    },
    leave(path, end) {
      const member = open.pop()!;
      const top = path[0];
      if (member.unkept && typeof top === "string" && inScope(top)) {
        found.push({ at: [...path], text: text.slice(member.start, end) });
      }
    },
  };
  // The innermost open object or array holds what is reported: a number's container, or the object
  // whose keys move. A number right under a top-level key has none to give.
  const mark: UnkeptListener = () => {
    const holder = open.findLast((member) => member.container);
    if (holder !== undefined) holder.unkept = true;
  };
  try {
    new FidelityWalk(text, mark, spans).walk();
  } catch {
    return [];
  }
  return found;
}

/**
 * The exact text of the member `key` of the object `text` holds (the last, if repeated, as
 * `JSON.parse` keeps the last); undefined when there is none, or `text` is not JSON.
 */
export function memberTextOf(text: string, key: string): string | undefined {
  let start = 0;
  let found: string | undefined;
  const spans: MemberSpans = {
    enter(path, at) {
      if (path.length === 1 && path[0] === key) start = at;
    },
    leave(path, end) {
      if (path.length === 1 && path[0] === key) found = text.slice(start, end);
    },
  };
  try {
    new FidelityWalk(text, () => {}, spans).walk();
  } catch {
    return undefined;
  }
  return found;
}
