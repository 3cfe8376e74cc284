// Glob patterns turned into regular expressions (Node 20 has no fs.glob): `**`, `*`, `?`, `{a,b}`, `[…]`.
// Paths are matched with `/` separators, relative to the directory the search starts in.

const REGEX_SPECIAL = /[\\^$.*+?()[\]{}|]/;

/** The characters that make a path segment a pattern rather than a literal name. */
const MAGIC = /[*?[{]/;

/** Whether `pattern` contains glob syntax (otherwise it names one path literally). */
export function hasGlobMagic(pattern: string): boolean {
  return MAGIC.test(pattern);
}

/**
 * Compiles a glob into an anchored RegExp over `/`-separated relative paths.
 *
 * - `*` matches any run of characters within one segment, `?` one character (neither matches `/`);
 * - `**` as a whole segment matches zero or more segments (`a/**` also matches `a` itself);
 * - `{a,b}` matches either alternative (nestable, alternatives may contain globs);
 * - `[abc]`, `[a-z]`, `[!a]` / `[^a]` match one character of a class (never `/`);
 * - `\x` matches `x` literally; an unclosed `[` or `{` is literal.
 *
 * Leading dots are not special: `*` matches `.env`.
 */
export function globToRegExp(pattern: string): RegExp {
  return new RegExp(`^${translate(pattern)}$`);
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
  let body = "";
  let first = true;
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === "]" && !first) {
      // A class never matches the separator.
      return { regex: negate ? `[^/${body}]` : `(?![/])[${body}]`, end: i + 1 };
    }
    if (c === "\\" && i + 1 < pattern.length) {
      body += `\\${pattern[i + 1]}`;
      i += 2;
    } else {
      // Inside a class only `\`, `]`, `[` and `^` need escaping; `-` keeps its range meaning.
      body += c === "]" || c === "[" || c === "^" ? `\\${c}` : c;
      i++;
    }
    first = false;
  }
  return undefined;
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
