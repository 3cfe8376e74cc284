// The read-only shell classifier: decides whether a Bash tool call may run in a fork that must not
// change anything. It tokenizes the command line the way a POSIX shell (bash) would, then accepts
// it only when every simple command is a known reader with only reading options. Anything it does
// not understand is refused: a false "not read-only" costs the model one retry, a false "read-only"
// lets a fork write where it must not. See docs/tool-filters.md for the rules and their reasons.

/** The verdict on one command line. */
export interface ShellClassification {
  /** True only when every command of the line is known to read and never write, delete or run programs. */
  readonly readOnly: boolean;
  /** Why: names the first construct or command that is not read-only, or the commands that were checked. */
  readonly reason: string;
}

/**
 * Text bash may run as code even where the classifier sees data: a command substitution, process
 * substitution or arithmetic (`$(…)`, backquotes, `<(…)`, `>(…)`, `$[…]`, `$((…))`) anywhere —
 * quoted, in a here-document, or in a word after `$'…'` decoding — because builtins such as
 * `test -v 'a[$(cmd)]'`, `[ -v … ]` and `printf -v` evaluate array subscripts; and `/dev/tcp`,
 * `/dev/udp` anywhere, which bash opens as network connections. Checked on the raw command and on
 * every word's value, so a class of constructs is refused, not a list of payloads.
 */
function evaluatedCode(text: string): string | undefined {
  // `$'…'` strings are checked as bash decodes them (`$'\x24(id)'` is `$(id)`).
  const decoded = text.replace(/\$'((?:[^'\\]|\\.)*)'/gs, (_match, body: string) => decodeAnsiC(body));
  for (const candidate of decoded === text ? [text] : [text, decoded]) {
    if (/\$\(|`|<\(|>\(|\$\[/.test(candidate)) {
      return "it contains a command substitution, process substitution or arithmetic that bash may evaluate even inside quotes (array subscripts of test -v, printf -v, …)";
    }
    if (/dev\/+(?:tcp|udp)/.test(candidate)) {
      return "it names /dev/tcp or /dev/udp, which bash opens as network connections";
    }
  }
  return undefined;
}

const ANSI_C_LETTERS: Readonly<Record<string, string>> = {
  n: "\n",
  t: "\t",
  r: "\r",
  a: "\x07",
  b: "\b",
  e: "\x1b",
  E: "\x1b",
  f: "\f",
  v: "\v",
};

/** A `$'…'` body as bash decodes it: `\xHH`, `\NNN`, `\uHHHH`, `\UHHHHHHHH`, `\cX` and the letter escapes. */
function decodeAnsiC(body: string): string {
  return body.replace(
    /\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|c.|.)/gs,
    (_m, esc: string) => {
      const head = esc[0] ?? "";
      if (head === "x" || head === "u" || head === "U") {
        const code = Number.parseInt(esc.slice(1), 16);
        return code <= 0x10ffff ? String.fromCodePoint(code) : "";
      }
      if (head >= "0" && head <= "7") return String.fromCharCode(Number.parseInt(esc, 8));
      if (head === "c") return String.fromCharCode(esc.charCodeAt(1) & 0x1f);
      return ANSI_C_LETTERS[esc] ?? esc;
    },
  );
}

/**
 * Classifies a shell command line as read-only or not.
 *
 * Read-only means: every simple command in every pipeline and list is on the list of known readers
 * (`cat`, `grep`, `ls`, `git status`, …) with only options that read, there is no output redirection
 * except to `/dev/null` or a descriptor duplication (`2>&1`), no command or process substitution,
 * no here-string, no variable assignment, no background job. The classifier is conservative: a
 * construct it does not parse is not read-only.
 *
 * It judges the command line only. Programs can still be steered by their environment or by files
 * they read (for example a repository's git config); see docs/tool-filters.md for what the executor
 * must provide.
 *
 * @param command - The command line as the model wrote it (the Bash tool's `command`).
 */
export function classifyShellCommand(command: string): ShellClassification {
  if (typeof command !== "string") return { readOnly: false, reason: "the command is not a string" };
  if (command.length > MAX_COMMAND_LENGTH) {
    return { readOnly: false, reason: `the command is longer than ${MAX_COMMAND_LENGTH} characters` };
  }
  const evaluated = evaluatedCode(command);
  if (evaluated !== undefined) return { readOnly: false, reason: evaluated };
  try {
    const program = parse(new Lexer(command).run());
    if (program.commands.length === 0) return { readOnly: false, reason: "the command is empty" };
    for (const redirect of program.redirects) {
      const problem = checkRedirect(redirect);
      if (problem !== undefined) return { readOnly: false, reason: problem };
    }
    const names: string[] = [];
    for (const simple of program.commands) {
      const inWords = simple.words
        .map((word) => evaluatedCode(word.value))
        .find((reason) => reason !== undefined);
      if (inWords !== undefined) return { readOnly: false, reason: inWords };
      const problem = checkSimpleCommand(simple.words, 0);
      if (problem !== undefined) return { readOnly: false, reason: problem };
      const name = simple.words[0]?.value;
      if (name !== undefined && !names.includes(name)) names.push(name);
    }
    return {
      readOnly: true,
      reason:
        names.length === 0
          ? "only redirections to /dev/null"
          : `every command is a known read-only command (${names.join(", ")})`,
    };
  } catch (error) {
    if (error instanceof Rejection) return { readOnly: false, reason: error.reason };
    throw error;
  }
}

/**
 * Splits a command line into its words after quote removal, for tests that compare the tokenizer with
 * a real shell. Returns `undefined` when the line is anything but one simple command of literal words.
 * @internal
 */
export function splitShellWords(command: string): string[] | undefined {
  try {
    const tokens = new Lexer(command).run();
    const words: string[] = [];
    for (const token of tokens) {
      if (token.kind !== "word" || token.word.dynamic) return undefined;
      words.push(token.word.value);
    }
    return words;
  } catch (error) {
    if (error instanceof Rejection) return undefined;
    throw error;
  }
}

/** Longer command lines are refused rather than parsed: no read-only command needs them. */
const MAX_COMMAND_LENGTH = 64 * 1024;
/** How deep `xargs`/`env` may nest other commands (`xargs env xargs …`). */
const MAX_NESTING = 4;

/** Thrown inside the classifier to stop at the first construct that is not read-only. Never escapes. */
class Rejection {
  constructor(readonly reason: string) {}
}

function reject(reason: string): never {
  throw new Rejection(reason);
}

// ---------------------------------------------------------------------------------------------
// Tokenizer
// ---------------------------------------------------------------------------------------------

/** One shell word after quote removal. */
interface Word {
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

type ControlOp = ";" | "\n" | "&&" | "||" | "|" | "|&" | "&" | "(" | ")";
type RedirectOp = "<" | ">" | ">>" | ">|" | "<>" | "<&" | ">&" | "&>" | "&>>" | "<<" | "<<-";

interface Redirect {
  readonly kind: "redirect";
  readonly fd: string | undefined;
  readonly op: RedirectOp;
  readonly target: Word;
}

type Token =
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
class Lexer {
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

// ---------------------------------------------------------------------------------------------
// Parser: lists, pipelines, subshells, brace groups, if/while/until/for
// ---------------------------------------------------------------------------------------------

interface SimpleCommand {
  readonly words: Word[];
}

interface Program {
  readonly commands: SimpleCommand[];
  /** Every redirection of the line, on simple commands and on compound commands alike. */
  readonly redirects: Redirect[];
}

/** Words that are reserved in command position; the ones not handled below are refused. */
const KEYWORDS = new Set([
  "!",
  "{",
  "}",
  "if",
  "then",
  "elif",
  "else",
  "fi",
  "while",
  "until",
  "do",
  "done",
  "for",
  "in",
  "case",
  "esac",
  "select",
  "function",
  "[[",
  "]]",
  "time",
  "coproc",
]);

type FrameKind = "top" | "(" | "{" | "if" | "then" | "elif" | "else" | "while" | "for" | "do";
/** Keywords that end a condition or a branch and open the next part: which frame they continue, and as what. */
const OPENERS: ReadonlyMap<string, { from: readonly FrameKind[]; becomes: FrameKind }> = new Map([
  ["then", { from: ["if", "elif"], becomes: "then" }],
  ["elif", { from: ["then"], becomes: "elif" }],
  ["else", { from: ["then"], becomes: "else" }],
  ["do", { from: ["while"], becomes: "do" }],
]);
interface Frame {
  kind: FrameKind;
  /** Commands completed directly in this frame; an empty body is a syntax error in bash. */
  commands: number;
}

/**
 * Flattens the token stream into its simple commands, checking the grammar enough that the commands
 * found are exactly the ones bash would run. Grouping does not matter for the verdict (every command
 * must be read-only, every redirection harmless), but a construct parsed wrongly could hide a command.
 */
function parse(tokens: readonly Token[]): Program {
  const commands: SimpleCommand[] = [];
  const redirects: Redirect[] = [];
  const stack: Frame[] = [{ kind: "top", commands: 0 }];
  type State = "start" | "command" | "after" | "for-name" | "for-in" | "for-words" | "for-do";
  let state: State = "start";
  /** The last operator or keyword that led into `start`: closers need a `;` or newline before them. */
  let previous = "begin";
  let current: SimpleCommand | undefined;

  const top = (): Frame => stack[stack.length - 1]!;
  const finishCommand = (): void => {
    if (current !== undefined) {
      commands.push(current);
      top().commands++;
      current = undefined;
    }
  };
  const requireSeparator = (keyword: string): void => {
    if (previous !== ";" && previous !== "\n") reject(`syntax: "${keyword}" must follow ";" or a newline`);
  };
  const nonEmpty = (keyword: string): Frame => {
    const frame = top();
    if (frame.commands === 0) reject(`syntax: empty command list before "${keyword}"`);
    return frame;
  };
  const close = (kinds: readonly FrameKind[], closer: string): void => {
    const frame = nonEmpty(closer);
    if (!kinds.includes(frame.kind)) reject(`syntax: unexpected "${closer}"`);
    stack.pop();
    top().commands++;
    state = "after";
  };
  const afterCommandOp = (op: ControlOp): void => {
    if (op === "&") reject("background jobs (&) are not allowed");
    if (op === "(") reject("syntax: unexpected ( (function definitions are not supported)");
    if (op === ")") {
      close(["("], ")");
      return;
    }
    state = "start";
    previous = op;
  };

  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    // `as State`: the closures above also assign it, which control-flow narrowing does not see.
    switch (state as State) {
      case "start": {
        if (token.kind === "redirect") {
          current = { words: [] };
          redirects.push(token);
          state = "command";
        } else if (token.kind === "word") {
          const word = token.word;
          if (!word.quoted && !word.dynamic && KEYWORDS.has(word.value)) {
            startKeyword(word.value);
          } else {
            if (word.assignment) {
              reject(
                `variable assignment ${word.raw} can change what a command does (PAGER, GIT_*, LD_PRELOAD …)`,
              );
            }
            current = { words: [word] };
            state = "command";
          }
        } else if (token.op === "(") {
          const next = tokens[i + 1];
          if (next?.kind === "op" && next.op === "(") {
            reject("arithmetic commands ((…)) are not supported");
          }
          stack.push({ kind: "(", commands: 0 });
          previous = "(";
        } else if (token.op === "\n") {
          // A newline after && || | continues the list; elsewhere it separates commands.
          if (previous !== "&&" && previous !== "||" && previous !== "|" && previous !== "|&")
            previous = "\n";
        } else if (token.op === ")") {
          requireSeparator(")");
          close(["("], ")");
        } else if (token.op === "&") {
          reject("background jobs (&) are not allowed");
        } else {
          reject(`syntax: missing command before "${token.op}"`);
        }
        break;
      }
      case "command": {
        if (token.kind === "word") {
          if (current!.words.length === 0 && token.word.assignment) {
            reject(`variable assignment ${token.word.raw} can change what a command does`);
          }
          current!.words.push(token.word);
        } else if (token.kind === "redirect") {
          redirects.push(token);
        } else {
          finishCommand();
          afterCommandOp(token.op);
        }
        break;
      }
      case "after": {
        if (token.kind === "redirect") redirects.push(token);
        else if (token.kind === "word")
          reject(`syntax: unexpected word ${token.word.raw} after a compound command`);
        else afterCommandOp(token.op);
        break;
      }
      case "for-name": {
        if (
          token.kind !== "word" ||
          token.word.quoted ||
          !/^[A-Za-z_][A-Za-z0-9_]*$/.test(token.word.value)
        ) {
          reject("syntax: for needs a variable name");
        }
        // The loop assigns its variable: an upper-case name can be an environment variable (PATH,
        // LD_PRELOAD, GIT_*) that steers the commands in the loop.
        if (!/^[a-z_][a-z0-9_]*$/.test(token.word.value)) {
          reject(`the for loop assigns ${token.word.value}; only lower-case loop variables are allowed`);
        }
        state = "for-in";
        break;
      }
      case "for-in":
      case "for-words": {
        if (token.kind === "word" && state === "for-in" && !token.word.quoted && token.word.value === "in") {
          state = "for-words";
        } else if (token.kind === "word" && state === "for-words") {
          // The loop's words are values, not commands: expansions in them are harmless.
        } else if (token.kind === "op" && (token.op === ";" || token.op === "\n")) {
          state = "for-do";
        } else {
          reject("syntax: unexpected token in a for loop header");
        }
        break;
      }
      case "for-do": {
        if (token.kind === "op" && token.op === "\n") break;
        if (token.kind !== "word" || token.word.quoted || token.word.value !== "do")
          reject('syntax: for needs "do"');
        top().kind = "do";
        state = "start";
        previous = "do";
        break;
      }
    }
  }

  function startKeyword(keyword: string): void {
    switch (keyword) {
      case "!":
        previous = "!";
        return;
      case "{":
        stack.push({ kind: "{", commands: 0 });
        previous = "{";
        return;
      case "}":
        requireSeparator("}");
        close(["{"], "}");
        return;
      case "if":
      case "while":
      case "until":
        stack.push({ kind: keyword === "if" ? "if" : "while", commands: 0 });
        previous = keyword;
        return;
      case "then":
      case "elif":
      case "else":
      case "do": {
        requireSeparator(keyword);
        const frame = nonEmpty(keyword);
        const opener = OPENERS.get(keyword)!;
        if (!opener.from.includes(frame.kind)) reject(`syntax: unexpected "${keyword}"`);
        frame.kind = opener.becomes;
        frame.commands = 0;
        previous = keyword;
        return;
      }
      case "fi":
        requireSeparator("fi");
        close(["then", "else"], "fi");
        return;
      case "done":
        requireSeparator("done");
        close(["do"], "done");
        return;
      case "for":
        stack.push({ kind: "for", commands: 0 });
        state = "for-name";
        return;
      default:
        reject(`the shell construct "${keyword}" is not supported; use simple commands, pipes and ; && ||`);
    }
  }

  const final = state as State;
  if (final === "command") finishCommand();
  if (final.startsWith("for-")) reject("syntax: incomplete for loop");
  if (final === "start" && ["&&", "||", "|", "|&", "!"].includes(previous)) {
    reject(`syntax: the line ends after "${previous}"`);
  }
  if (stack.length > 1) reject(`syntax: "${top().kind}" is not closed`);
  return { commands, redirects };
}

// ---------------------------------------------------------------------------------------------
// Redirections
// ---------------------------------------------------------------------------------------------

const DESCRIPTOR = /^(?:[0-9]+-?|-)$/;

function checkRedirect(redirect: Redirect): string | undefined {
  const { op, target } = redirect;
  const shown = `${redirect.fd ?? ""}${op}${target.raw}`;
  // bash opens a connection for any path that names /dev/tcp or /dev/udp after expansion, so a
  // target whose value is not known here, or that mentions them anywhere (`//dev/tcp`, `/./dev/…`),
  // is refused whatever the direction.
  if (/dev\/+(?:tcp|udp)/.test(target.value) || /dev\/+(?:tcp|udp)/.test(target.raw)) {
    return `the redirection ${shown} opens a network connection`;
  }
  switch (op) {
    case "<":
      // An unquoted leading `~` is tilde expansion: `~+` is $PWD, `~user` a home directory.
      return target.dynamic || target.raw.startsWith("~")
        ? `the input redirection ${shown} has a target known only at run time (it could be a network path)`
        : undefined;
    case "<<":
    case "<<-":
      return undefined;
    case "<&":
      return !target.dynamic && DESCRIPTOR.test(target.value)
        ? undefined
        : `the redirection ${shown} is not a descriptor duplication`;
    case ">&":
      if (!target.dynamic && DESCRIPTOR.test(target.value)) return undefined;
      break;
    default:
      break;
  }
  if (!target.dynamic && target.value === "/dev/null") return undefined;
  return `the output redirection ${shown} writes to a file (only /dev/null and duplications like 2>&1 are allowed)`;
}

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

/** Checks one command's arguments; returns why it is not read-only, or `undefined`. */
type Validator = (name: string, args: readonly Word[], depth: number) => string | undefined;

/** A stand-in for the arguments `xargs` appends at run time: unknown, possibly starting with `-`. */
const UNKNOWN_ARGUMENT: Word = {
  value: "<argument from stdin>",
  raw: "<argument from stdin>",
  dynamic: true,
  quoted: false,
  assignment: false,
  digitsOnly: false,
  fields: true,
};

function checkSimpleCommand(words: readonly Word[], depth: number): string | undefined {
  const name = words[0];
  if (name === undefined) return undefined;
  if (name.dynamic) return `the command name ${name.raw} is expanded at run time`;
  if (name.value.includes("/")) {
    return `${JSON.stringify(name.value)} is run by path; only known read-only commands run by name are allowed`;
  }
  const validate = COMMANDS.get(name.value);
  if (validate === undefined) return `${JSON.stringify(name.value)} is not a known read-only command`;
  return validate(name.value, words.slice(1), depth);
}

/** Commands whose every option reads: arbitrary (even unknown, glob-expanded) arguments are fine. */
const anyArguments: Validator = () => undefined;

/**
 * Commands with options that write or run programs need literal arguments: a glob or `$var` could
 * expand to `-o file` (a file named `-delete` in the directory is enough).
 */
function literalArguments(name: string, args: readonly Word[]): string | undefined {
  const dynamic = args.find((arg) => arg.dynamic);
  if (dynamic === undefined) return undefined;
  return `${name} has options that write files or run programs, so its arguments must be literal, but ${dynamic.raw} is expanded at run time`;
}

/** Wraps a validator so that it only runs once every argument is literal (see {@link literalArguments}). */
function literalOnly(validate: Validator): Validator {
  return (name, args, depth) => literalArguments(name, args) ?? validate(name, args, depth);
}

type ParsedArgument =
  | {
      readonly kind: "short";
      readonly letter: string;
      readonly value: string | undefined;
      readonly word: Word;
    }
  | { readonly kind: "long"; readonly name: string; readonly value: string | undefined; readonly word: Word }
  | { readonly kind: "operand"; readonly word: Word };

interface OptionGrammar {
  /** Short options with a required argument, attached (`-ofile`) or in the next word. */
  readonly shortWithArg?: string;
  /** Short options with an optional argument, attached only (`-i.bak`). */
  readonly shortOptionalArg?: string;
  /**
   * Long options that take the next word when written without `=`. Exact names only: treating an
   * abbreviation as taking an argument could hide the next word from the checks.
   */
  readonly longWithArg?: readonly string[];
  /** Stop at the first operand (getopt `+`, as xargs and env do) instead of GNU permutation. */
  readonly stopAtOperand?: boolean;
}

/**
 * Parses getopt-style arguments. Unknown short options count as flags without an argument: if one
 * really took an argument, the parse sees that argument as one more option to check, which errs on
 * the side of refusing.
 */
function parseOptions(
  args: readonly Word[],
  grammar: OptionGrammar,
): { parsed: ParsedArgument[]; operandsFrom: number } {
  const parsed: ParsedArgument[] = [];
  let i = 0;
  let operandsFrom = args.length;
  while (i < args.length) {
    const word = args[i]!;
    const v = word.value;
    i++;
    if (v === "--") {
      operandsFrom = Math.min(operandsFrom, i);
      for (; i < args.length; i++) parsed.push({ kind: "operand", word: args[i]! });
      break;
    }
    if (v.startsWith("--")) {
      const eq = v.indexOf("=");
      const name = eq === -1 ? v.slice(2) : v.slice(2, eq);
      let value: string | undefined = eq === -1 ? undefined : v.slice(eq + 1);
      if (value === undefined && grammar.longWithArg?.includes(name) && i < args.length)
        value = args[i++]!.value;
      parsed.push({ kind: "long", name, value, word });
    } else if (v.startsWith("-") && v.length > 1) {
      for (let j = 1; j < v.length; j++) {
        const letter = v[j]!;
        const rest = v.slice(j + 1);
        if (grammar.shortWithArg?.includes(letter)) {
          const value = rest !== "" ? rest : i < args.length ? args[i++]!.value : undefined;
          parsed.push({ kind: "short", letter, value, word });
          break;
        }
        if (grammar.shortOptionalArg?.includes(letter)) {
          parsed.push({ kind: "short", letter, value: rest, word });
          break;
        }
        parsed.push({ kind: "short", letter, value: undefined, word });
      }
    } else {
      parsed.push({ kind: "operand", word });
      if (grammar.stopAtOperand) {
        operandsFrom = i - 1;
        for (; i < args.length; i++) parsed.push({ kind: "operand", word: args[i]! });
        break;
      }
    }
  }
  if (!grammar.stopAtOperand) operandsFrom = args.length;
  return { parsed, operandsFrom };
}

/**
 * Whether a long option name, possibly abbreviated (getopt_long accepts any unambiguous prefix, so
 * `--out=x` is `--output=x`), names one of `dangerous`. `exact` lists real options that merely share a prefix.
 */
function longOptionIs(
  name: string,
  dangerous: readonly string[],
  exact: readonly string[] = [],
): string | undefined {
  if (exact.includes(name)) return undefined;
  return dangerous.find((option) => option.startsWith(name));
}

const sortValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {
    shortWithArg: "kotTS",
    longWithArg: ["key", "output", "field-separator", "temporary-directory", "buffer-size", "files0-from"],
  });
  for (const arg of parsed) {
    if (arg.kind === "short" && arg.letter === "o") return "sort -o writes its output to a file";
    if (arg.kind === "short" && arg.letter === "T")
      return "sort -T writes temporary files into the directory given";
    if (arg.kind === "long") {
      const option = longOptionIs(arg.name, ["output", "compress-program", "temporary-directory"]);
      if (option === "output") return "sort --output writes its output to a file";
      if (option === "temporary-directory") return "sort --temporary-directory writes temporary files there";
      if (option !== undefined) return "sort --compress-program runs a program";
    }
  }
  return undefined;
};

const uniqValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {
    shortWithArg: "fsw",
    longWithArg: ["skip-fields", "skip-chars", "check-chars"],
  });
  const operands = parsed.filter((arg) => arg.kind === "operand");
  if (operands.length > 1) return `uniq writes its output to its second operand (${operands[1]!.word.raw})`;
  return undefined;
};

const sedValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {
    shortWithArg: "efl",
    shortOptionalArg: "i",
    longWithArg: ["expression", "file", "line-length"],
  });
  const scripts: string[] = [];
  for (const arg of parsed) {
    if (arg.kind === "short") {
      if (arg.letter === "i") return "sed -i edits files in place";
      if (arg.letter === "f") return "sed -f reads its script from a file the classifier cannot inspect";
      if (arg.letter === "e") {
        if (arg.value === undefined) return "sed -e has no script";
        scripts.push(arg.value);
      }
    } else if (arg.kind === "long") {
      const option = longOptionIs(arg.name, ["in-place", "file", "expression"]);
      if (option === "in-place") return "sed --in-place edits files in place";
      if (option === "file") return "sed --file reads its script from a file the classifier cannot inspect";
      if (option === "expression") {
        if (arg.value === undefined) return "write sed --expression=SCRIPT or -e SCRIPT";
        scripts.push(arg.value);
      }
    }
  }
  if (scripts.length === 0) {
    const script = parsed.find((arg) => arg.kind === "operand");
    if (script === undefined) return undefined;
    scripts.push(script.word.value);
  }
  return checkSedScript(scripts.join("\n"));
};

/**
 * Parses a GNU sed script far enough to find every command, and refuses the ones that write or run:
 * `w`/`W` (write a file), `e` (run a command), and the `s` flags `w` and `e`. Unknown commands are refused.
 */
function checkSedScript(script: string): string | undefined {
  const s = script;
  let i = 0;
  let depth = 0;
  const blanks = (): void => {
    while (s[i] === " " || s[i] === "\t") i++;
  };
  const toLineEnd = (): void => {
    while (i < s.length && s[i] !== "\n") i++;
  };
  /** Reads up to and including an unescaped `delimiter`; false when the line ends first. */
  const delimited = (delimiter: string): boolean => {
    while (i < s.length) {
      const c = s[i]!;
      if (c === "\\") i += 2;
      else if (c === delimiter) {
        i++;
        return true;
      } else if (c === "\n") return false;
      else i++;
    }
    return false;
  };
  const address = (second: boolean): boolean => {
    const c = s[i];
    if (c !== undefined && /[0-9]/.test(c)) {
      while (/[0-9]/.test(s[i] ?? "")) i++;
      if (s[i] === "~") {
        i++;
        while (/[0-9]/.test(s[i] ?? "")) i++;
      }
      return true;
    }
    if (second && (c === "+" || c === "~")) {
      i++;
      while (/[0-9]/.test(s[i] ?? "")) i++;
      return true;
    }
    if (c === "$") {
      i++;
      return true;
    }
    if (c === "/" || c === "\\") {
      const delimiter = c === "/" ? "/" : s[i + 1];
      if (delimiter === undefined || delimiter === "\n") return false;
      i += c === "/" ? 1 : 2;
      if (!delimited(delimiter)) return false;
      while (s[i] === "I" || s[i] === "M") i++;
      return true;
    }
    return !second;
  };

  while (i < s.length) {
    while (i < s.length && (s[i] === " " || s[i] === "\t" || s[i] === "\n" || s[i] === ";")) i++;
    if (i >= s.length) break;
    if (!address(false)) return "sed script: address not understood";
    blanks();
    if (s[i] === ",") {
      i++;
      blanks();
      if (!address(true)) return "sed script: address not understood";
    }
    blanks();
    while (s[i] === "!") {
      i++;
      blanks();
    }
    const command = s[i];
    i++;
    switch (command) {
      case "{":
        depth++;
        continue;
      case "#":
        toLineEnd();
        continue;
      case "a":
      case "i":
      case "c": {
        // Text to insert runs to the end of the line; a backslash continues it onto the next.
        blanks();
        if (s[i] === "\\") {
          i++;
          if (s[i] === "\n") i++;
        }
        const textStart = i;
        while (i < s.length && s[i] !== "\n") i += s[i] === "\\" ? 2 : 1;
        if (s.slice(textStart, i).includes(";")) return textWithSemicolon(command);
        continue;
      }
      case "r":
      case "R": {
        // Reads a file (to the end of the line): reading is fine.
        const nameStart = i;
        toLineEnd();
        if (s.slice(nameStart, i).includes(";")) return textWithSemicolon(command);
        continue;
      }
      case ":":
      case "b":
      case "t":
      case "T":
      case "v":
        while (i < s.length && s[i] !== "\n" && s[i] !== ";") i++;
        continue;
      case "w":
      case "W":
        return `sed ${command} command writes to a file`;
      case "e":
        return "sed e command runs a shell command";
      case "}":
        depth--;
        if (depth < 0) return "sed script: unexpected }";
        break;
      case "=":
      case "d":
      case "D":
      case "g":
      case "G":
      case "h":
      case "H":
      case "n":
      case "N":
      case "p":
      case "P":
      case "x":
      case "z":
      case "F":
        break;
      case "l":
      case "L":
      case "q":
      case "Q":
        blanks();
        while (/[0-9]/.test(s[i] ?? "")) i++;
        break;
      case "s":
      case "y": {
        const delimiter = s[i];
        if (delimiter === undefined || delimiter === "\n" || delimiter === "\\") {
          return `sed script: ${command} command not understood`;
        }
        i++;
        if (!delimited(delimiter) || !delimited(delimiter))
          return `sed script: unterminated ${command} command`;
        if (command === "s") {
          for (;;) {
            const flag = s[i];
            if (flag === "e") return "sed s///e runs the result as a shell command";
            if (flag === "w") return "sed s///w writes to a file";
            if (flag === undefined || !/[gpiImM0-9]/.test(flag)) break;
            i++;
          }
        }
        break;
      }
      default:
        return `sed script: command "${command ?? ""}" is not understood`;
    }
    blanks();
    const after = s[i];
    if (after === ";" || after === "\n") i++;
    else if (after !== undefined && after !== "}" && after !== "#") {
      return `sed script: unexpected "${after}" after the ${command} command`;
    }
  }
  if (depth !== 0) return "sed script: unbalanced braces";
  return undefined;
}

/** Whether sed ends such text at a `;` differs between versions; either reading could hide a command. */
function textWithSemicolon(command: string): string {
  return `sed script: the text of the ${command} command contains ";", which sed versions read differently`;
}

/**
 * awk is read-only only without output redirection, pipes, `system` and `getline` (the simple rule:
 * any `>`, `|`, `system`, `getline` in the program refuses it, comparisons included), and without
 * gawk's `@` (directives and indirect calls, which can reach `system` by a computed name).
 */
const awkValidator: Validator = (name, args) => {
  let i = 0;
  let program: Word | undefined;
  while (i < args.length) {
    const word = args[i]!;
    const v = word.value;
    if (word.dynamic) return literalArguments(name, [word]);
    i++;
    if (v === "--") continue;
    if (v === "-F" || v === "-v" || v === "--field-separator" || v === "--assign") {
      if (args[i]?.dynamic) return literalArguments(name, [args[i]!]);
      i++;
      continue;
    }
    if (/^-[Fv]./.test(v) || /^--(?:field-separator|assign)=/.test(v)) continue;
    if (
      /^-f/.test(v) ||
      (v.startsWith("--") && longOptionIs(v.slice(2).split("=")[0]!, ["file"]) !== undefined)
    ) {
      return `${name} -f reads its program from a file the classifier cannot inspect`;
    }
    if (v.startsWith("-") && v.length > 1) {
      return `${name} option ${v} is not known to be read-only (gawk's -o, -p, -d, -i, -l, -e, -E write files or load code)`;
    }
    program = word;
    break;
  }
  if (program === undefined) return undefined;
  const banned = [">", "|", "system", "getline", "@"].find((token) => program.value.includes(token));
  if (banned !== undefined) {
    return `the ${name} program contains "${banned}" (output redirection, pipes, system, getline and @ can write or run programs)`;
  }
  return undefined;
};

const FIND_DENIED: Readonly<Record<string, string>> = {
  "-delete": "find -delete deletes files",
  "-exec": "find -exec runs a command",
  "-execdir": "find -execdir runs a command",
  "-ok": "find -ok runs a command",
  "-okdir": "find -okdir runs a command",
  "-fprint": "find -fprint writes to a file",
  "-fprint0": "find -fprint0 writes to a file",
  "-fprintf": "find -fprintf writes to a file",
  "-fls": "find -fls writes to a file",
};
const FIND_NO_ARGUMENT = new Set([
  ...["-depth", "-d", "-mount", "-xdev", "-noleaf", "-follow", "-daystart", "-ignore_readdir_race"],
  ...["-noignore_readdir_race", "-warn", "-nowarn", "-true", "-false", "-nouser", "-nogroup", "-empty"],
  ...["-executable", "-readable", "-writable", "-print", "-print0", "-ls", "-prune", "-quit"],
  ...["-not", "-a", "-and", "-o", "-or", "(", ")", "!", ",", "-help", "--help", "-version", "--version"],
]);
const FIND_ONE_ARGUMENT = new Set([
  ...["-maxdepth", "-mindepth", "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename"],
  ...["-regex", "-iregex", "-regextype", "-type", "-xtype", "-size", "-mtime", "-mmin", "-atime"],
  ...["-amin", "-ctime", "-cmin", "-newer", "-anewer", "-cnewer", "-perm", "-user", "-group", "-uid"],
  ...["-gid", "-links", "-inum", "-samefile", "-lname", "-ilname", "-fstype", "-used", "-context"],
  ...["-printf", "-files0-from"],
]);

/** find with an allow-list of tests and actions: anything else (-delete, -exec, -fprint, unknown) is refused. */
const findValidator: Validator = (_name, args) => {
  let i = 0;
  while (i < args.length) {
    const v = args[i]!.value;
    if (v === "-H" || v === "-L" || v === "-P" || /^-O[0-9]*$/.test(v)) i++;
    else if (v === "-D") i += 2;
    else break;
  }
  const startsExpression = (v: string): boolean =>
    (v.startsWith("-") && v.length > 1) || v === "(" || v === ")" || v === "!" || v === ",";
  while (i < args.length && !startsExpression(args[i]!.value)) i++;
  while (i < args.length) {
    const v = args[i]!.value;
    const denied = FIND_DENIED[v];
    if (denied !== undefined) return denied;
    if (FIND_NO_ARGUMENT.has(v)) i++;
    else if (FIND_ONE_ARGUMENT.has(v) || /^-newer[aBcmt][aBcmt]$/.test(v)) i += 2;
    else return `find ${v} is not known to be read-only`;
  }
  return undefined;
};

const GIT_READ_ONLY_SUBCOMMANDS = [
  "status",
  "log",
  "diff",
  "show",
  "branch",
  "rev-parse",
  "ls-files",
  "blame",
  "grep",
];
const GIT_GLOBAL_ALLOWED = new Set([
  ...["--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs"],
  ...["--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--version", "--help"],
]);
const GIT_GLOBAL_DENIED: Readonly<Record<string, string>> = {
  "-c": "git -c sets configuration, which can name programs to run (core.pager, diff.external, core.fsmonitor …)",
  "--config-env": "git --config-env sets configuration, which can name programs to run",
  "-C": "git -C changes into another directory whose repository configuration could run programs",
  "--git-dir": "git --git-dir selects a repository whose configuration could run programs",
  "--work-tree": "git --work-tree selects another work tree",
  "--exec-path": "git --exec-path selects the programs git runs",
  "-p": "git -p runs a pager",
  "--paginate": "git --paginate runs a pager",
};
const GIT_BRANCH_LISTING = new Set([
  ...["-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "-l", "--list", "--show-current"],
  ...["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"],
  ...["--color", "--no-color", "--column", "--no-column", "-i", "--ignore-case", "--omit-empty"],
  ...["--abbrev", "--no-abbrev", "-q", "--quiet"],
]);
/** git branch options after which operands are patterns or commits, not names of branches to create. */
const GIT_BRANCH_LIST_MODE = new Set([
  "-l",
  "--list",
  "--contains",
  "--no-contains",
  "--merged",
  "--no-merged",
  "--points-at",
]);

/** git: only read-only subcommands, no option that writes a file, runs a diff driver or a pager. */
const gitValidator: Validator = (_name, args) => {
  let i = 0;
  while (i < args.length && args[i]!.value.startsWith("-")) {
    const v = args[i]!.value;
    const option = v.split("=")[0]!;
    if (!GIT_GLOBAL_ALLOWED.has(v)) {
      return GIT_GLOBAL_DENIED[option] ?? `git global option ${v} is not known to be read-only`;
    }
    i++;
  }
  const subcommand = args[i]?.value;
  if (subcommand === undefined) return undefined;
  if (!GIT_READ_ONLY_SUBCOMMANDS.includes(subcommand)) {
    return `git ${subcommand} is not a read-only git subcommand (allowed: ${GIT_READ_ONLY_SUBCOMMANDS.join(", ")})`;
  }
  const rest = args.slice(i + 1);
  for (const word of rest) {
    const v = word.value;
    if (v.startsWith("--") && v.length > 2) {
      const option = longOptionIs(
        v.slice(2).split("=")[0]!,
        ["output", "ext-diff", "textconv", "open-files-in-pager"],
        ["text"],
      );
      if (option === "output") return `git ${subcommand} --output writes to a file`;
      if (option === "open-files-in-pager") return `git ${subcommand} --open-files-in-pager runs a program`;
      if (option !== undefined)
        return `git ${subcommand} --${option} runs an external diff or conversion program`;
    } else if (subcommand === "grep" && /^-[^-]/.test(v) && v.includes("O")) {
      return "git grep -O opens the matches in a pager program";
    }
  }
  if (subcommand === "branch") {
    const options = rest.filter((word) => word.value.startsWith("-"));
    const listing = options.some((word) => GIT_BRANCH_LIST_MODE.has(word.value.split("=")[0]!));
    for (const word of rest) {
      if (word.value.startsWith("-")) {
        if (!GIT_BRANCH_LISTING.has(word.value.split("=")[0]!)) {
          return `git branch ${word.value} changes branches; only listing is read-only`;
        }
      } else if (!listing) {
        return `git branch ${word.raw} creates a branch; use git branch --list PATTERN to filter the list`;
      }
    }
  }
  return undefined;
};

/** xargs runs another command with arguments from stdin: read-only when that command is, whatever it gets. */
const xargsValidator: Validator = (name, args, depth) => {
  if (depth >= MAX_NESTING) return `${name} nests commands too deeply`;
  const { parsed, operandsFrom } = parseOptions(args, {
    shortWithArg: "adEILnPs",
    shortOptionalArg: "eil",
    longWithArg: ["arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"],
    stopAtOperand: true,
  });
  const own = args.slice(0, operandsFrom);
  const literal = literalArguments(name, own);
  if (literal !== undefined) return literal;
  let replace: string | undefined;
  for (const arg of parsed) {
    // Any unambiguous prefix is the option, as getopt_long resolves it: `--pr=X`, even `--p=X`.
    if (arg.kind === "long" && longOptionIs(arg.name, ["process-slot-var"])) {
      return `${name} --process-slot-var sets an environment variable of the command it runs`;
    }
    if (arg.kind === "short" && arg.letter === "I") replace = arg.value;
    if (arg.kind === "short" && arg.letter === "i") replace = arg.value || "{}";
    if (arg.kind === "long" && longOptionIs(arg.name, ["replace"]) !== undefined) replace = arg.value || "{}";
  }
  const inner = args.slice(operandsFrom);
  if (inner.length === 0) return undefined; // runs echo
  if (replace !== undefined && replace !== "" && inner[0]!.value.includes(replace)) {
    return `${name} substitutes input into the command name`;
  }
  const innerWords = inner.map((word, index) =>
    index > 0 && replace !== undefined && replace !== "" && word.value.includes(replace)
      ? { ...word, dynamic: true }
      : word,
  );
  const problem = checkSimpleCommand([...innerWords, UNKNOWN_ARGUMENT], depth + 1);
  return problem === undefined
    ? undefined
    : `${name} runs ${inner[0]!.value}, which is not read-only: ${problem}`;
};

/** env without a command prints the environment; with one, it is read-only only if it changes nothing. */
const envValidator: Validator = (name, args, depth) => {
  if (depth >= MAX_NESTING) return `${name} nests commands too deeply`;
  const { parsed, operandsFrom } = parseOptions(args, {
    shortWithArg: "uCS",
    longWithArg: ["unset", "chdir", "split-string"],
    stopAtOperand: true,
  });
  for (const arg of parsed) {
    if (
      (arg.kind === "short" && arg.letter === "S") ||
      (arg.kind === "long" && longOptionIs(arg.name, ["split-string"]))
    ) {
      return "env -S runs the command line given as its argument";
    }
  }
  let start = operandsFrom;
  while (start < args.length && args[start]!.value.includes("=")) start++;
  if (start >= args.length) return undefined;
  if (start > 0) {
    return `${name} with options or assignments changes the environment of ${args[start]!.value} (PAGER, GIT_*, LD_PRELOAD …)`;
  }
  const problem = checkSimpleCommand(args.slice(start), depth + 1);
  return problem === undefined
    ? undefined
    : `${name} runs ${args[start]!.value}, which is not read-only: ${problem}`;
};

/** ripgrep: `--pre` and `--hostname-bin` run programs. */
const rgValidator: Validator = (_name, args) => {
  const runs = args.find((word) => /^--(?:pre|hostname-bin)(?:=|$)/.test(word.value));
  return runs === undefined ? undefined : `rg ${runs.value.split("=")[0]} runs a program`;
};

/** The Silver Searcher: `--pager` runs a program (getopt_long, so abbreviations count). */
const agValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {});
  const pager = parsed.find(
    (arg) => arg.kind === "long" && arg.name !== "" && longOptionIs(arg.name, ["pager"]),
  );
  return pager === undefined ? undefined : "ag --pager runs a program";
};

const TREE_LONG_OPTIONS = new Set([
  ...["help", "version", "inodes", "device", "noreport", "nolinks", "dirsfirst", "filesfirst", "charset"],
  ...[
    "filelimit",
    "si",
    "du",
    "prune",
    "timefmt",
    "ignore-case",
    "matchdirs",
    "metafirst",
    "gitignore",
    "sort",
  ],
]);

/** tree: `-o FILE` writes its output to a file and `-R` writes 00Tree.html files in every directory. */
const treeValidator: Validator = (_name, args) => {
  for (const word of args) {
    const v = word.value;
    if (v.startsWith("--") && v.length > 2) {
      if (!TREE_LONG_OPTIONS.has(v.slice(2).split("=")[0]!)) return `tree ${v} is not known to be read-only`;
    } else if (/^-[^-]/.test(v) && (v.includes("o") || v.includes("R"))) {
      return `tree ${v} writes files (-o writes the listing to a file, -R writes 00Tree.html files)`;
    }
  }
  return undefined;
};

/** date: `-s` and an operand that is not `+FORMAT` set the system clock. */
const dateValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {
    shortWithArg: "dfrs",
    shortOptionalArg: "I",
    longWithArg: ["date", "file", "reference", "set", "rfc-3339"],
  });
  for (const arg of parsed) {
    if (arg.kind === "short" && arg.letter === "s") return "date -s sets the system clock";
    if (arg.kind === "long" && arg.name !== "" && longOptionIs(arg.name, ["set"]))
      return "date --set sets the system clock";
    if (arg.kind === "operand" && !arg.word.value.startsWith("+")) {
      return `date ${arg.word.raw} would set the system clock (only +FORMAT operands are read-only)`;
    }
  }
  return undefined;
};

/** file: `-C` / `--compile` writes a compiled magic file. */
const fileValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {
    shortWithArg: "eFfmP",
    longWithArg: ["exclude", "exclude-quiet", "separator", "files-from", "magic-file", "parameter"],
  });
  for (const arg of parsed) {
    if (arg.kind === "short" && arg.letter === "C") return "file -C writes a compiled magic file";
    if (arg.kind === "long" && arg.name !== "" && longOptionIs(arg.name, ["compile"])) {
      return "file --compile writes a compiled magic file";
    }
  }
  return undefined;
};

/** printf: `-v NAME` assigns a shell variable (PATH included), and only the first word can be that option. */
const printfValidator: Validator = (name, args) => {
  const first = args[0];
  if (first === undefined) return undefined;
  if (first.dynamic)
    return `the first argument of ${name} could expand to -v, which assigns a shell variable`;
  if (first.value.startsWith("-v")) return `${name} -v assigns a shell variable`;
  return undefined;
};

/** A variable name, or one with a literal numeric subscript: what `-v` and `-R` may test. */
const TESTABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(?:\[[0-9]+\])?$/;

/**
 * test and `[` (bash builtins): the operand of `-v NAME` and `-R NAME` is a variable reference
 * whose array subscript bash evaluates as arithmetic, expanding `$(…)` and recursing into the
 * values of the variables it names — so `test -v "x[${d}(cmd)]"` with `d='$'`, or `test -v 'x[i]'`
 * with `i='a[$(cmd)]'`, runs `cmd` (#11 finding 1, as a class). Refused: any argument that may
 * become several or none (which one is the operator is then decided at run time: a glob can list a
 * file named `-v`), and after a literal `-v`/`-R` or an argument known only at run time (it may be
 * `-v`), anything but a literal variable name. `-eq` and the other comparisons of the builtin do not
 * evaluate arithmetic (only `[[ … ]]`'s do, and it is refused).
 */
const testValidator: Validator = (name, args) => {
  const operands =
    name === "[" && args.at(-1)?.value === "]" && !args.at(-1)!.dynamic ? args.slice(0, -1) : args;
  for (let i = 0; i < operands.length; i++) {
    const word = operands[i]!;
    if (word.fields) {
      return `${name} ${word.raw} may expand to several arguments or none, so which of them bash reads as -v (which evaluates code in an array subscript) is decided at run time`;
    }
    const previous = operands[i - 1];
    if (previous === undefined) continue;
    const mayName = previous.dynamic || previous.value === "-v" || previous.value === "-R";
    if (mayName && (word.dynamic || (word.value.includes("[") && !TESTABLE_NAME.test(word.value)))) {
      return `${name} ${previous.raw} ${word.raw}: bash evaluates the array subscript of a name after -v or -R as arithmetic, which can run commands; only a literal variable name may follow -v, -R or an argument known only at run time`;
    }
  }
  return undefined;
};

/**
 * Commands none of whose options write or run programs (checked against GNU coreutils, grep, diffutils,
 * jq and util-linux), so any argument, even one a glob produces, is fine.
 */
const READ_ONLY_ANY_ARGUMENTS = [
  ...["cat", "head", "tail", "wc", "ls", "grep", "egrep", "fgrep", "stat", "du", "df", "pwd", "echo"],
  ...["which", "type", "whoami", "printenv", "cut", "tr", "nl", "diff", "cmp", "comm"],
  ...["basename", "dirname", "realpath", "readlink", "jq", "true", "false", "uname", "tac"],
  ...["rev", "seq", "id", "paste", "column", "fold", "expand", "unexpand", "od", "hexdump", "strings"],
  ...["md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum"],
];

const COMMANDS: ReadonlyMap<string, Validator> = new Map<string, Validator>([
  ...READ_ONLY_ANY_ARGUMENTS.map((name): [string, Validator] => [name, anyArguments]),
  ["printf", printfValidator],
  ["test", testValidator],
  ["[", testValidator],
  ["sort", literalOnly(sortValidator)],
  ["uniq", literalOnly(uniqValidator)],
  ["sed", literalOnly(sedValidator)],
  ["awk", awkValidator],
  ["gawk", awkValidator],
  ["mawk", awkValidator],
  ["find", literalOnly(findValidator)],
  ["git", literalOnly(gitValidator)],
  ["xargs", xargsValidator],
  ["env", literalOnly(envValidator)],
  ["rg", literalOnly(rgValidator)],
  ["ag", literalOnly(agValidator)],
  ["tree", literalOnly(treeValidator)],
  ["date", literalOnly(dateValidator)],
  ["file", literalOnly(fileValidator)],
]);

/**
 * Names of the commands the classifier can accept (each still subject to its option checks).
 */
export const READ_ONLY_SHELL_COMMANDS: readonly string[] = [...COMMANDS.keys()].sort();
