// Whether JSON text holds no value that a JavaScript reading would write differently: the cheap test
// that says a request body need not be walked (json-fidelity.ts, about 1.3 ms at a 48k-token body)
// for the values the provider renders otherwise than JavaScript writes them. The simulator runs it
// on every body it parses; forkd's proxy and fork --from, on every request they keep a turn of.
// Every body a JavaScript client wrote passes it.
//
// Comparing the text with JSON.stringify of its value would say the same of such bodies, but on
// Node 20 JSON.stringify costs as much as JSON.parse (~0.5 ms at 190 kB). This looks only at what the
// walk reports: numbers (outside strings) and object keys. It jumps from string to string with
// `indexOf`, never visiting a string's characters in JavaScript: ~0.07 ms at 190 kB, ~0.01 ms at 18 kB.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const MINUS = 0x2d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
/** The keys a JavaScript object lists first, in ascending order: array indexes, 0 to 2^32 − 2. */
const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;
const MAX_ARRAY_INDEX = 2 ** 32 - 2;
/** An object's state once it has had a key that is not an array index: no index may follow. */
const OTHER_KEY_SEEN = Number.POSITIVE_INFINITY;

function isWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}

// Whether the quote at `at` is escaped: an odd run of backslashes before it.
function isEscapedAt(text: string, at: number): boolean {
  let run = 0;
  for (let i = at - 1; text.charCodeAt(i) === BACKSLASH; i--) run++;
  return run % 2 === 1;
}

/**
 * Whether a JavaScript reading of `text` (valid JSON) keeps every value as written: each number
 * outside strings is as JSON.stringify writes it, and each object's array-index keys (`"0"`, `"42"`)
 * come before its other keys and in ascending order, as JavaScript lists them. That is what the walk
 * of `valuesJsonCannotKeep` looks for, anywhere in the text: true means it finds nothing. Whitespace and string escapes are not looked at (a provider
 * parses them away). A key repeated is taken as one that may move, the only way this errs, and the safe
 * one: JSON.stringify never repeats a key.
 */
export function keptByJavaScript(text: string): boolean {
  const length = text.length;
  // For each open object (and array, unused), the last array-index key it had (-1: none yet), or
  // OTHER_KEY_SEEN once it had another key.
  const order: number[] = [];
  let nextBackslash = text.indexOf("\\");
  let i = 0;
  while (i < length) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      let close = text.indexOf('"', i + 1);
      while (close !== -1 && isEscapedAt(text, close)) close = text.indexOf('"', close + 1);
      if (close === -1) return false;
      let after = close + 1;
      while (isWhitespace(text.charCodeAt(after))) after++;
      if (text.charCodeAt(after) === COLON) {
        // A key: only one that starts with a digit, or is written with an escape (`"\u0031"`), can
        // be an array index.
        if (nextBackslash !== -1 && nextBackslash < i) nextBackslash = text.indexOf("\\", i);
        const escaped = nextBackslash !== -1 && nextBackslash < close;
        let index = -1;
        if (escaped || isDigit(text.charCodeAt(i + 1))) {
          const key = escaped ? (JSON.parse(text.slice(i, close + 1)) as string) : text.slice(i + 1, close);
          if (ARRAY_INDEX.test(key) && Number(key) <= MAX_ARRAY_INDEX) index = Number(key);
        }
        const top = order.length - 1;
        if (index < 0) order[top] = OTHER_KEY_SEEN;
        else if (index <= order[top]!) return false;
        else order[top] = index;
        after++;
      }
      i = after;
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      order.push(-1);
      i++;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      order.pop();
      i++;
    } else if (code === MINUS || isDigit(code)) {
      NUMBER.lastIndex = i;
      const number = NUMBER.exec(text)?.[0];
      if (number === undefined || JSON.stringify(Number(number)) !== number) return false;
      i += number.length;
    } else {
      i++;
    }
  }
  return true;
}
