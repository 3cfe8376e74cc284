// The tokenizer: reads a command line into words, operators and redirections the way bash does.
// Command and process substitution, arithmetic expansion and here-strings are refused as soon as seen.
import { reject } from "./reject.js";

/** One shell word after quote removal. */
export interface Word {
  /** The value after quote removal; expansions (`$x`) are kept as written. */
  readonly value: string;
  /** The word as written, for messages. */
  readonly raw: string;
  /**
   * True when the run-time value cannot be known here: a parameter expansion, an unquoted glob or
   * brace pattern, `$'…'`. Such a word may become several words or start with `-`.
   */
  readonly dynamic: boolean;
  /** True when any part was quoted or escaped: such a word is never a keyword or an assignment. */
  readonly quoted: boolean;
  /** True when the word starts with an unquoted `NAME=` or `NAME+=` (an assignment in command position). */
  readonly assignment: boolean;
  /** True when the word is unquoted digits only (a file descriptor when it touches `<` or `>`). */
  readonly digitsOnly: boolean;
  /**
   * True when the word may become no argument or several (an unquoted expansion, a glob, a brace
   * pattern, `"$@"`): which argument ends up where is then decided at run time.
   */
  readonly fields: boolean;
}

export type ControlOp = ";" | "\n" | "&&" | "||" | "|" | "|&" | "&" | "(" | ")";

export type RedirectOp = "<" | ">" | ">>" | ">|" | "<>" | "<&" | ">&" | "&>" | "&>>" | "<<" | "<<-";

export interface Redirect {
  readonly kind: "redirect";
  readonly fd: string | undefined;
  readonly op: RedirectOp;
  readonly target: Word;
}

export type Token =
  | { readonly kind: "word"; readonly word: Word }
  | { readonly kind: "op"; readonly op: ControlOp }
  | Redirect;

interface PendingHeredoc {
  readonly delimiter: string;
  /** An unquoted delimiter means the body undergoes expansion, so it may hide `$(…)`. */
  readonly expands: boolean;
  readonly stripTabs: boolean;
}

/** Characters that end an unquoted word (bash's metacharacters). */
const METACHARACTERS = new Set([" ", "\t", "\n", ";", "&", "|", "(", ")", "<", ">"]);

/**
 * A tokenizer for the POSIX shell language as bash reads it: quotes, escapes, line continuations,
 * comments, control operators, redirections with descriptor prefixes and here-documents. Command and
 * process substitution, arithmetic expansion and here-strings are refused as soon as they are seen.
 */
export class Lexer {
  private pos = 0;
  private readonly tokens: Token[] = [];
  private pending: PendingHeredoc[] = [];

  constructor(private readonly src: string) {}

  run(): Token[] {
    const s = this.src;
    while (this.pos < s.length) {
      const c = s[this.pos]!;
      if (c === " " || c === "\t") {
        this.pos++;
      } else if (c === "\\" && s[this.pos + 1] === "\n") {
        this.pos += 2;
      } else if (c === "#") {
        // A comment only starts a word; `a#b` is one word (handled in readWord).
        while (this.pos < s.length && s[this.pos] !== "\n") this.pos++;
      } else if (c === "\n") {
        this.pos++;
        this.tokens.push({ kind: "op", op: "\n" });
        this.readHeredocBodies();
      } else if (c === ";") {
        if (s[this.pos + 1] === ";" || s[this.pos + 1] === "&") {
          reject("case-clause terminators (;; ;& ;;&) are not supported");
        }
        this.pos++;
        this.tokens.push({ kind: "op", op: ";" });
      } else if (c === "&") {
        if (s.startsWith("&&", this.pos)) {
          this.pos += 2;
          this.tokens.push({ kind: "op", op: "&&" });
        } else if (s.startsWith("&>>", this.pos)) {
          this.readRedirect(undefined, "&>>");
        } else if (s.startsWith("&>", this.pos)) {
          this.readRedirect(undefined, "&>");
        } else {
          this.pos++;
          this.tokens.push({ kind: "op", op: "&" });
        }
      } else if (c === "|") {
        const op = s.startsWith("||", this.pos) ? "||" : s.startsWith("|&", this.pos) ? "|&" : "|";
        this.pos += op.length;
        this.tokens.push({ kind: "op", op });
      } else if (c === "(" || c === ")") {
        this.pos++;
        this.tokens.push({ kind: "op", op: c });
      } else if (c === "<" || c === ">") {
        this.readRedirect(undefined, this.redirectOperator());
      } else {
        const word = this.readWord();
        const next = s[this.pos];
        if (
          (next === "<" || next === ">") &&
          !word.quoted &&
          /^\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(word.value)
        ) {
          reject(`the redirection ${word.value}${next} assigns a descriptor number to a shell variable`);
        }
        if ((next === "<" || next === ">") && word.digitsOnly) {
          // `2>file`: digits touching the operator name the descriptor.
          this.readRedirect(word.value, this.redirectOperator());
        } else {
          this.tokens.push({ kind: "word", word });
        }
      }
    }
    if (this.pending.length > 0) {
      reject(`here-document "${this.pending[0]!.delimiter}" has no body`);
    }
    return this.tokens;
  }

  /** Reads the operator at `pos` (which is `<` or `>`), refusing here-strings and process substitution. */
  private redirectOperator(): RedirectOp {
    const s = this.src;
    const at = (text: string): boolean => s.startsWith(text, this.pos);
    if (at("<<<")) reject("here-strings (<<<) are not allowed");
    if (at("<(") || at(">(")) reject("process substitution <(…) / >(…) runs a command");
    for (const op of ["<<-", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">"] as const) {
      if (at(op)) return op;
    }
    return reject("unexpected redirection");
  }

  private readRedirect(fd: string | undefined, op: RedirectOp): void {
    const s = this.src;
    this.pos += op.length;
    for (;;) {
      const c = s[this.pos];
      if (c === " " || c === "\t") this.pos++;
      else if (c === "\\" && s[this.pos + 1] === "\n") this.pos += 2;
      else break;
    }
    const c = s[this.pos];
    if (c === "(") reject("process substitution <(…) / >(…) runs a command");
    if (c === undefined || METACHARACTERS.has(c)) reject(`the redirection ${op} has no target`);
    const target = this.readWord();
    if (op === "<<" || op === "<<-") {
      if (target.dynamic) reject(`here-document delimiter ${target.raw} contains an expansion`);
      this.pending.push({ delimiter: target.value, expands: !target.quoted, stripTabs: op === "<<-" });
    }
    this.tokens.push({ kind: "redirect", fd, op, target });
  }

  /** Consumes the bodies of the here-documents opened on the line that just ended. */
  private readHeredocBodies(): void {
    const s = this.src;
    for (const doc of this.pending) {
      for (;;) {
        if (this.pos >= s.length) reject(`here-document "${doc.delimiter}" is not terminated`);
        const end = s.indexOf("\n", this.pos);
        const lineEnd = end === -1 ? s.length : end;
        const line = s.slice(this.pos, lineEnd);
        const next = end === -1 ? s.length : end + 1;
        if ((doc.stripTabs ? line.replace(/^\t+/, "") : line) === doc.delimiter) {
          this.pos = next;
          break;
        }
        if (doc.expands) {
          // bash joins a line ending in a backslash with the next before comparing it with the
          // delimiter, so the body could end somewhere this reader does not expect.
          if (line.endsWith("\\")) reject("a here-document line ends with a backslash continuation");
          this.scanExpansions(this.pos, lineEnd);
        }
        this.pos = next;
      }
    }
    this.pending = [];
  }

  /** Checks text that undergoes expansion but not word splitting (a here-document body). */
  private scanExpansions(from: number, to: number): void {
    const saved = this.pos;
    this.pos = from;
    while (this.pos < to) {
      const c = this.src[this.pos];
      if (c === "\\") this.pos += 2;
      else if (c === "`") reject("backquote command substitution runs a command");
      else if (c === "$") this.readDollar(true);
      else this.pos++;
    }
    this.pos = saved;
  }

  private readWord(): Word {
    const s = this.src;
    const start = this.pos;
    const chars: { c: string; quoted: boolean }[] = [];
    let quoted = false;
    let dynamic = false;
    let fields = false;
    const push = (text: string, isQuoted: boolean): void => {
      for (const c of text) chars.push({ c, quoted: isQuoted });
    };
    for (;;) {
      const c = s[this.pos];
      if (c === undefined || METACHARACTERS.has(c)) break;
      if (c === "\\") {
        const next = s[this.pos + 1];
        if (next === "\n") {
          this.pos += 2;
        } else {
          // A backslash at the very end of the input: bash keeps it after some lines and drops it
          // after others (`'x<newline>'\\` loses it), so its meaning is not certain: not understood.
          if (next === undefined) reject("a trailing backslash at the end of the command");
          push(next!, true);
          quoted = true;
          this.pos += 2;
        }
      } else if (c === "'") {
        const end = s.indexOf("'", this.pos + 1);
        if (end === -1) reject("unterminated single quote");
        push(s.slice(this.pos + 1, end), true);
        quoted = true;
        this.pos = end + 1;
      } else if (c === '"') {
        quoted = true;
        this.pos++;
        const inQuotes = this.readDoubleQuoted(push);
        dynamic = inQuotes.dynamic || dynamic;
        fields = inQuotes.fields || fields;
      } else if (c === "`") {
        reject("backquote command substitution runs a command");
      } else if (c === "$") {
        const expansion = this.readDollar(false);
        push(expansion.text, expansion.dynamic);
        dynamic = expansion.dynamic || dynamic;
        quoted = expansion.quoted || quoted;
        // Unquoted, a parameter expansion is split into fields (`$'…'` and `$"…"` are quoted).
        fields = (expansion.dynamic && !expansion.quoted) || fields;
      } else {
        push(c, false);
        this.pos++;
      }
    }
    const value = chars.map((ch) => ch.c).join("");
    const patterns = hasGlob(chars) || hasBraceExpansion(chars);
    return {
      value,
      raw: s.slice(start, this.pos),
      dynamic: dynamic || patterns,
      fields: fields || patterns,
      quoted,
      assignment: isAssignment(chars),
      digitsOnly: chars.length > 0 && chars.every((ch) => !ch.quoted && ch.c >= "0" && ch.c <= "9"),
    };
  }

  /**
   * Reads a double-quoted string whose opening quote was consumed; returns whether it expands
   * anything, and whether it may become several fields (`"$@"`).
   */
  private readDoubleQuoted(push: (text: string, quoted: boolean) => void): {
    dynamic: boolean;
    fields: boolean;
  } {
    const s = this.src;
    let dynamic = false;
    let fields = false;
    for (;;) {
      const c = s[this.pos];
      if (c === undefined) reject("unterminated double quote");
      if (c === '"') {
        this.pos++;
        return { dynamic, fields };
      }
      if (c === "\\") {
        const next = s[this.pos + 1];
        if (next === "\n") {
          this.pos += 2;
        } else if (next === "$" || next === "`" || next === '"' || next === "\\") {
          push(next, true);
          this.pos += 2;
        } else {
          push("\\", true);
          this.pos++;
        }
      } else if (c === "`") {
        reject("backquote command substitution runs a command");
      } else if (c === "$") {
        const expansion = this.readDollar(true);
        push(expansion.text, true);
        dynamic = expansion.dynamic || dynamic;
        // biome-ignore lint/suspicious/noTemplateCurlyInString: ${@} is shell syntax.
        fields = expansion.text === "$@" || expansion.text === "${@}" || fields;
      } else {
        push(c, true);
        this.pos++;
      }
    }
  }

  /**
   * Reads what follows a `$`. Plain parameter expansions (`$x`, `${x}`, `$1`, `$?`) are allowed but make
   * the word dynamic; every form that can run a command or that the classifier does not evaluate is refused.
   */
  private readDollar(inDoubleQuotes: boolean): { text: string; dynamic: boolean; quoted: boolean } {
    const s = this.src;
    const start = this.pos;
    // bash removes a backslash-newline before it looks at what follows `$`, so `$\<newline>(` is `$(`.
    if (s[this.pos + 1] === "\\" && s[this.pos + 2] === "\n") reject("a line continuation directly after $");
    const next = s[this.pos + 1];
    if (next === "(") {
      reject(
        s[this.pos + 2] === "("
          ? "arithmetic expansion $((…)) is not supported"
          : "command substitution $(…) runs a command",
      );
    }
    if (next === "[") reject("arithmetic expansion $[…] is not supported");
    if (next === "{") {
      const close = s.indexOf("}", this.pos + 2);
      if (close === -1) reject("unterminated parameter expansion (no closing brace)");
      const inner = s.slice(this.pos + 2, close);
      // Operators inside ${…} can assign, run prompt expansion (@P) or nest $(…): only plain names pass.
      if (!/^#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])$/.test(inner)) {
        reject(`parameter expansion \${${inner}} uses operators the classifier does not evaluate`);
      }
      this.pos = close + 1;
      return { text: s.slice(start, this.pos), dynamic: true, quoted: false };
    }
    if (next === "'" && !inDoubleQuotes) {
      // ANSI-C quoting: escapes like \x69 could spell an option, so its value counts as unknown.
      let i = this.pos + 2;
      while (i < s.length && s[i] !== "'") i += s[i] === "\\" ? 2 : 1;
      if (i >= s.length) reject("unterminated $'…' string");
      this.pos = i + 1;
      return { text: s.slice(start, this.pos), dynamic: true, quoted: true };
    }
    if (next === '"' && !inDoubleQuotes) {
      // $"…" is a translated string: the double-quoted part follows and is read by the caller.
      this.pos++;
      return { text: "", dynamic: true, quoted: true };
    }
    if (next !== undefined && /[A-Za-z_]/.test(next)) {
      let i = this.pos + 2;
      while (i < s.length && /[A-Za-z0-9_]/.test(s[i]!)) i++;
      this.pos = i;
      return { text: s.slice(start, i), dynamic: true, quoted: false };
    }
    if (next !== undefined && /[0-9@*#?$!-]/.test(next)) {
      this.pos += 2;
      return { text: s.slice(start, this.pos), dynamic: true, quoted: false };
    }
    this.pos++;
    return { text: "$", dynamic: false, quoted: false };
  }
}

function hasGlob(chars: readonly { c: string; quoted: boolean }[]): boolean {
  let openBracket = false;
  for (const { c, quoted } of chars) {
    if (quoted) continue;
    if (c === "*" || c === "?") return true;
    if (c === "[") openBracket = true;
    else if (c === "]" && openBracket) return true;
  }
  return false;
}

/** `{a,b}` and `{1..3}` expand to several words; anything that looks like one counts as dynamic. */
function hasBraceExpansion(chars: readonly { c: string; quoted: boolean }[]): boolean {
  const open = chars.findIndex((ch) => !ch.quoted && ch.c === "{");
  if (open === -1) return false;
  let close = -1;
  for (let i = chars.length - 1; i > open; i--) {
    if (!chars[i]!.quoted && chars[i]!.c === "}") {
      close = i;
      break;
    }
  }
  for (let i = open + 1; i < close; i++) {
    const ch = chars[i]!;
    if (ch.quoted) continue;
    if (ch.c === ",") return true;
    if (ch.c === "." && chars[i + 1]?.c === "." && !chars[i + 1]!.quoted) return true;
  }
  return false;
}

function isAssignment(chars: readonly { c: string; quoted: boolean }[]): boolean {
  let i = 0;
  while (i < chars.length && !chars[i]!.quoted && /[A-Za-z0-9_]/.test(chars[i]!.c)) {
    if (i === 0 && /[0-9]/.test(chars[0]!.c)) return false;
    i++;
  }
  if (i === 0) return false;
  if (chars[i]?.c === "+" && !chars[i]!.quoted) i++;
  return chars[i]?.c === "=" && !chars[i]!.quoted;
}
