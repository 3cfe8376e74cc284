// Glob patterns turned into regular expressions (Node 20 has no fs.glob): `**`, `*`, `?`, `{a,b}`, `[…]`.
// Paths are matched with `/` separators, relative to the directory the search starts in.
import { RE2JS } from "re2js";

const REGEX_SPECIAL = /[\\^$.*+?()[\]{}|]/;

/** The characters that make a path segment a pattern rather than a literal name. */
const MAGIC = /[*?[{]/;

/** Whether `pattern` contains glob syntax (otherwise it names one path literally). */
export function hasGlobMagic(pattern: string): boolean {
  return MAGIC.test(pattern);
}

/** A compiled glob: whether a relative path matches, and the RE2 expression it was compiled to. */
export interface GlobMatcher {
  test(path: string): boolean;
  readonly source: string;
}

/**
 * Compiles a glob into an anchored RE2 expression over `/`-separated relative paths. RE2 (re2js)
 * matches in time linear in the path: the model writes the glob and makes the names it is matched
 * against, and a JavaScript RegExp of `*a*a*a*a*b` backtracked over a name of 200 `a`s for seconds
 * (hours with more stars) in the daemon's event loop.
 *
 * - `*` matches any run of characters within one segment, `?` one character (neither matches `/`);
 * - `**` as a whole segment matches zero or more segments (`a/**` also matches `a` itself);
 * - `{a,b}` matches either alternative (nestable, alternatives may contain globs);
 * - `[abc]`, `[a-z]`, `[!a]` / `[^a]` match one character of a class (never `/`);
 * - `\x` matches `x` literally; an unclosed `[` or `{` is literal.
 *
 * Leading dots are not special: `*` matches `.env`.
 */
export function globToRegExp(pattern: string): GlobMatcher {
  const source = `^${translate(pattern)}$`;
  const regex = RE2JS.compile(source);
  return { source, test: (path) => regex.matcher(path).find() };
}

function translate(pattern: string): string {
  let out = "";
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === "*") {
      if (pattern[i + 1] === "*") {
        const atSegmentStart = i === 0 || pattern[i - 1] === "/";
        const end = i + 2;
        if (atSegmentStart && (end === pattern.length || pattern[end] === "/")) {
          if (end === pattern.length) {
            // `**` at the end: everything below (and, after `a/`, `a` itself: handled by the caller's `/`).
            if (out.endsWith("/")) {
              out = `${out.slice(0, -1)}(?:/.*)?`;
            } else {
              out += ".*";
            }
            i = end;
          } else {
            // `**/`: zero or more whole segments.
            out += "(?:[^/]*/)*";
            i = end + 1;
          }
          continue;
        }
        // `**` inside a segment behaves as `*`.
        while (pattern[i] === "*") i++;
        out += "[^/]*";
        continue;
      }
      out += "[^/]*";
      i++;
    } else if (c === "?") {
      out += "[^/]";
      i++;
    } else if (c === "[") {
      const cls = readClass(pattern, i);
      if (cls === undefined) {
        out += "\\[";
        i++;
      } else {
        out += cls.regex;
        i = cls.end;
      }
    } else if (c === "{") {
      const alt = readAlternatives(pattern, i);
      if (alt === undefined) {
        out += "\\{";
        i++;
      } else {
        out += `(?:${alt.parts.map(translate).join("|")})`;
        i = alt.end;
      }
    } else if (c === "\\" && i + 1 < pattern.length) {
      out += escapeChar(pattern[i + 1]!);
      i += 2;
    } else {
      out += escapeChar(c);
      i++;
    }
  }
  return out;
}

function escapeChar(c: string): string {
  return REGEX_SPECIAL.test(c) ? `\\${c}` : c;
}

/** Reads `[…]` starting at `start`; undefined when it is not closed. */
function readClass(pattern: string, start: number): { regex: string; end: number } | undefined {
  let i = start + 1;
  let negate = false;
  if (pattern[i] === "!" || pattern[i] === "^") {
    negate = true;
    i++;
  }
  const ranges: [number, number][] = [];
  let first = true;
  /** The code point at `at` (after a `\`, the one it escapes), and where the next one starts. */
  const readPoint = (at: number): [number, number] => {
    const escaped = pattern[at] === "\\" && at + 1 < pattern.length;
    const from = escaped ? at + 1 : at;
    const point = pattern.codePointAt(from)!;
    return [point, from + (point > 0xffff ? 2 : 1)];
  };
  while (i < pattern.length) {
    if (pattern[i] === "]" && !first) {
      return { regex: classRegex(ranges, negate), end: i + 1 };
    }
    first = false;
    const [low, next] = readPoint(i);
    i = next;
    if (pattern[i] === "-" && i + 1 < pattern.length && pattern[i + 1] !== "]") {
      const [high, after] = readPoint(i + 1);
      i = after;
      // An out-of-order range matches nothing, as in fnmatch.
      if (low <= high) ranges.push([low, high]);
    } else {
      ranges.push([low, low]);
    }
  }
  return undefined;
}

const SLASH = 0x2f;

/**
 * A class as RE2 writes it, every character as `\x{…}` (nothing in it is syntax). A class never
 * matches the separator: `/` is taken out of a positive class's ranges (RE2 has no lookahead to
 * exclude it afterwards) and put into a negated one's.
 */
function classRegex(ranges: readonly [number, number][], negate: boolean): string {
  const hex = (point: number) => `\\x{${point.toString(16)}}`;
  const item = ([low, high]: readonly [number, number]) =>
    low === high ? hex(low) : `${hex(low)}-${hex(high)}`;
  if (negate) return `[^/${ranges.map(item).join("")}]`;
  const kept: [number, number][] = [];
  for (const [low, high] of ranges) {
    if (high < SLASH || low > SLASH) kept.push([low, high]);
    else {
      if (low < SLASH) kept.push([low, SLASH - 1]);
      if (high > SLASH) kept.push([SLASH + 1, high]);
    }
  }
  // Only `/` was in it: a class that matches nothing.
  return kept.length === 0 ? "[^\\x{0}-\\x{10ffff}]" : `[${kept.map(item).join("")}]`;
}

/** Reads `{a,b,…}` starting at `start` (nested braces kept whole); undefined when not closed. */
function readAlternatives(pattern: string, start: number): { parts: string[]; end: number } | undefined {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (let i = start + 1; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\" && i + 1 < pattern.length) {
      current += c + pattern[i + 1];
      i++;
    } else if (c === "{") {
      depth++;
      current += c;
    } else if (c === "}" && depth > 0) {
      depth--;
      current += c;
    } else if (c === "}") {
      parts.push(current);
      return { parts, end: i + 1 };
    } else if (c === "," && depth === 0) {
      parts.push(current);
      current = "";
    } else {
      current += c;
    }
  }
  return undefined;
}

/**
 * Splits a pattern into the literal directory it starts from and the glob below it:
 * `src/lib/**\/*.ts` → `{ base: "src/lib", rest: "**\/*.ts" }`; `/abs/dir/*.md` → `{ base: "/abs/dir", … }`.
 * `rest` is empty when the pattern has no glob syntax at all.
 */
export function splitGlobBase(pattern: string): { base: string; rest: string } {
  const segments = pattern.split("/");
  const firstMagic = segments.findIndex((s) => hasGlobMagic(s));
  if (firstMagic === -1) return { base: pattern, rest: "" };
  const baseSegments = segments.slice(0, firstMagic);
  let base = baseSegments.join("/");
  if (base === "" && pattern.startsWith("/")) base = "/";
  return { base, rest: segments.slice(firstMagic).join("/") };
}

/**
 * How many path segments below the base a pattern can match at most; `Infinity` with `**`.
 * Lets a walk stop descending early for patterns like `*.ts` or `src/*\/index.ts`.
 */
export function maxGlobDepth(pattern: string): number {
  if (pattern.includes("**")) return Number.POSITIVE_INFINITY;
  // Braces may hide a `/` (`{a,b/c}`): count the deepest alternative roughly by the total slashes.
  return pattern.split("/").length;
}
