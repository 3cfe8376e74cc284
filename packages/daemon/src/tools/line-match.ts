// Grep's matching, as pure functions of a pattern and a file's text: what runs on the regex worker
// (regex-worker.ts), away from the daemon's event loop.
import { RE2JS } from "re2js";
import { describeError } from "./context.js";

/** What Grep asks of one file's text. */
export type MatchOperation =
  /** Whether any line matches (`files_with_matches`): 1 or 0. */
  | "any"
  /** How many lines match (`count`). */
  | "count"
  /** The indices of the matching lines (`content`). */
  | "lines"
  /** The indices of the lines any match of a multi-line pattern touches (`multiline`). */
  | "multiline";

/** The pattern and flags Grep compiles once per call. */
export interface PatternSpec {
  pattern: string;
  ignoreCase: boolean;
  multiline: boolean;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * Compiles the pattern with RE2 (re2js): no backtracking, so a model's `^(a+)+$` cannot take time
 * exponential in the text (#11 finding 7). Its time is still the text's length times the pattern's
 * size, which is why matching runs on a worker. RE2's syntax is ripgrep's (Rust's regex crate is of
 * the same family): no backreferences, no lookaround. A `(?i)` prefix works as in ripgrep.
 */
export function compilePattern({ pattern, ignoreCase, multiline }: PatternSpec): Parsed<RE2JS> {
  let flags = multiline ? RE2JS.MULTILINE | RE2JS.DOTALL : 0;
  if (ignoreCase) flags |= RE2JS.CASE_INSENSITIVE;
  try {
    return { ok: true, value: RE2JS.compile(pattern, flags) };
  } catch (error) {
    return {
      ok: false,
      reason:
        `Invalid regular expression ${JSON.stringify(pattern)}: ${describeError(error)}. Grep uses RE2 syntax, as ` +
        "ripgrep does (no backreferences or lookaround); escape literal ( ) [ ] { } . * + ? | with a backslash.",
    };
  }
}

/**
 * Runs one operation on one file's text: a count for `any` and `count`, the line indices otherwise,
 * in order, as a typed array (moved, not copied, back from the worker: a file of five million short
 * lines can match on every one).
 */
export function runMatch(
  regex: RE2JS,
  operation: MatchOperation,
  text: string,
): number | Uint32Array<ArrayBuffer> {
  switch (operation) {
    case "any":
      return countMatchingLines(regex, text, 1);
    case "count":
      return countMatchingLines(regex, text);
    case "lines": {
      const found: number[] = [];
      forEachMatchingLine(regex, text, (index) => {
        found.push(index);
        return true;
      });
      return Uint32Array.from(found);
    }
    case "multiline":
      return Uint32Array.from(multilineMatches(regex, text));
  }
}

/** A CRLF file's lines end in `\r`, which is not part of the line: `$` must match before it. */
export function withoutCarriageReturn(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}

/**
 * Calls `visit` with the index of each matching line, in order, until it returns false. The text is
 * not split into lines first: for a file of short lines that is an array of millions of strings.
 * A newline that ends the text does not start one more (empty) line.
 */
function forEachMatchingLine(regex: RE2JS, text: string, visit: (index: number) => boolean): void {
  for (let start = 0, index = 0; start < text.length; index++) {
    const newline = text.indexOf("\n", start);
    const end = newline === -1 ? text.length : newline;
    if (regex.matcher(withoutCarriageReturn(text.slice(start, end))).find() && !visit(index)) return;
    start = end + 1;
  }
}

/** How many lines match, counting no further than `stopAt`. */
function countMatchingLines(regex: RE2JS, text: string, stopAt = Number.POSITIVE_INFINITY): number {
  let count = 0;
  forEachMatchingLine(regex, text, () => ++count < stopAt);
  return count;
}

/** Lines touched by any match of a global, multi-line regex over the whole text. */
function multilineMatches(regex: RE2JS, text: string): number[] {
  const lineStarts = [0];
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) lineStarts.push(i + 1);
  const lineOf = (offset: number) => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const found = new Set<number>();
  const matcher = regex.matcher(text);
  while (matcher.find()) {
    const start = matcher.start();
    const end = start + Math.max(0, matcher.end() - start - 1);
    for (let line = lineOf(start); line <= lineOf(end); line++) found.add(line);
  }
  return [...found].sort((a, b) => a - b);
}
