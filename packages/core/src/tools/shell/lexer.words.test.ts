// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are shell words; ${…} is shell syntax.
// The flags of each word the tokenizer reads, asserted on the tokens themselves: the validators decide
// on them (a dynamic word may become an option, a word with fields may become several arguments or
// none, an assignment in command position changes the environment), so each must be exactly right.
import { describe, expect, it } from "vitest";
import { Lexer } from "./lexer.js";
import { Rejection } from "./reject.js";

/** The one word `line` is read as, with its flags. */
function word(line: string) {
  const tokens = new Lexer(line).run();
  expect(tokens).toHaveLength(1);
  const token = tokens[0]!;
  if (token.kind !== "word") throw new Error(`${line} is not one word`);
  return token.word;
}

type Flags = {
  dynamic?: boolean;
  quoted?: boolean;
  fields?: boolean;
  assignment?: boolean;
  digitsOnly?: boolean;
};

/** Asserts the value and every flag of the word `line` (flags not named are false). */
function reads(line: string, value: string, flags: Flags = {}) {
  expect(word(line), line).toStrictEqual({
    value,
    raw: line,
    dynamic: flags.dynamic ?? false,
    quoted: flags.quoted ?? false,
    assignment: flags.assignment ?? false,
    digitsOnly: flags.digitsOnly ?? false,
    fields: flags.fields ?? false,
  });
}

describe("the tokenizer's words", () => {
  it("splits an unquoted expansion into fields, a quoted one only for $@", () => {
    reads("$x", "$x", { dynamic: true, fields: true });
    reads('a"$x"', "a$x", { dynamic: true, quoted: true });
    reads('a"$@"', "a$@", { dynamic: true, quoted: true, fields: true });
    reads('a"${@}"', "a${@}", { dynamic: true, quoted: true, fields: true });
    reads('"$1"', "$1", { dynamic: true, quoted: true });
    reads("$'x'", "$'x'", { dynamic: true, quoted: true });
    reads('$"x"', "x", { dynamic: true, quoted: true });
    reads("${ab}", "${ab}", { dynamic: true, fields: true });
    reads("${10}", "${10}", { dynamic: true, fields: true });
    reads("${@}", "${@}", { dynamic: true, fields: true });
    reads("}${x}", "}${x}", { dynamic: true, fields: true });
  });

  it("removes quotes and escapes as bash does, and marks what they touch as quoted", () => {
    reads('"a\\$b"', "a$b", { quoted: true });
    reads('"a\\"b"', 'a"b', { quoted: true });
    reads('"a\\\\b"', "a\\b", { quoted: true });
    reads('"a\\b"', "a\\b", { quoted: true });
    reads('"a\\\nb"', "ab", { quoted: true });
    reads("$\\x", "$x", { quoted: true });
    reads("a\\\nb", "ab");
    reads("\\*", "*", { quoted: true });
  });

  it("counts only unquoted digits as a descriptor number", () => {
    reads("12", "12", { digitsOnly: true });
    reads('1"2"', "12", { quoted: true });
    reads("1a", "1a");
    // The bounds of the range: 0 and 9 are digits; "." sorts below "0", and "" holds no digit at all.
    reads("0", "0", { digitsOnly: true });
    reads("9", "9", { digitsOnly: true });
    reads("1.5", "1.5");
    reads('""', "", { quoted: true });
  });

  it("finds globs and brace expansions only in their unquoted forms", () => {
    reads("a*", "a*", { dynamic: true, fields: true });
    reads("a[b]", "a[b]", { dynamic: true, fields: true });
    reads("a]", "a]");
    reads("{a,b}", "{a,b}", { dynamic: true, fields: true });
    reads("{a..b}", "{a..b}", { dynamic: true, fields: true });
    reads("{a','b}", "{a,b}", { quoted: true });
    reads("{a.'.'b}", "{a..b}", { quoted: true });
    reads("'{'a,b}", "{a,b}", { quoted: true });
    reads("{a,b'}'", "{a,b}", { quoted: true });
    reads("{a.b}", "{a.b}");
    reads("{a.}", "{a.}");
    reads("{a}b,c", "{a}b,c");
    reads("a,b}", "a,b}");
    reads("{a,b", "{a,b");
    // An unclosed bracket is no glob; a quoted dot before an unquoted one makes no sequence.
    reads("a[b", "a[b");
    reads("{a'.'.b}", "{a..b}", { quoted: true });
  });

  it("keeps an expansion's characters quoted inside double quotes, and reads $'…' and a lone $ exactly", () => {
    // "$*" and "$?" are one field each: their * and ? are no glob.
    reads('"$*"', "$*", { dynamic: true, quoted: true });
    reads('"$?"', "$?", { dynamic: true, quoted: true });
    reads("$1", "$1", { dynamic: true, fields: true });
    reads("$'a\\'b'", "$'a\\'b'", { dynamic: true, quoted: true });
    reads("a$'x'b", "a$'x'b", { dynamic: true, quoted: true });
    // A $ that starts no expansion is a literal character.
    reads("a$", "a$");
  });

  it("reads NAME= and NAME+= with an unquoted name and sign as an assignment, nothing else", () => {
    reads("x=1", "x=1", { assignment: true });
    reads("x+=1", "x+=1", { assignment: true });
    reads("_x9=", "_x9=", { assignment: true });
    reads("1x=1", "1x=1");
    reads("x-y=1", "x-y=1");
    reads("=1", "=1");
    reads("x+1", "x+1");
    reads('"x"=1', "x=1", { quoted: true });
    reads('x"="1', "x=1", { quoted: true });
    reads('x+"="1', "x+=1", { quoted: true });
    reads("x\\+=1", "x+=1", { quoted: true });
  });
});

/** The tokens of `line`, each as text: a word's value, `op:` and the operator, or a redirection as written. */
function tokens(line: string): string[] {
  return new Lexer(line).run().map((token) => {
    if (token.kind === "word") return token.word.value;
    if (token.kind === "op") return `op:${token.op}`;
    if (token.kind === "redirect") return `${token.fd ?? ""}${token.op}${token.target.value}`;
    throw new Error(`unknown token ${JSON.stringify(token)}`);
  });
}

/** Asserts that the tokenizer alone refuses `line`, for `reason`. */
function refuses(line: string, reason: string) {
  let thrown: unknown;
  try {
    new Lexer(line).run();
  } catch (error) {
    thrown = error;
  }
  expect(thrown, line).toBeInstanceOf(Rejection);
  expect((thrown as Rejection).reason, line).toBe(reason);
}

describe("the tokenizer's tokens", () => {
  it("reads each control operator as an operator token", () => {
    expect(tokens("a && b & c | d || e |& f ; g")).toStrictEqual([
      "a",
      "op:&&",
      "b",
      "op:&",
      "c",
      "op:|",
      "d",
      "op:||",
      "e",
      "op:|&",
      "f",
      "op:;",
      "g",
    ]);
  });

  it("skips tabs, line continuations and comments between words, and a comment ends at the newline", () => {
    expect(tokens("a\tb")).toStrictEqual(["a", "b"]);
    expect(tokens("a \\\n b")).toStrictEqual(["a", "b"]);
    expect(tokens("a # c ; d\nb")).toStrictEqual(["a", "op:\n", "b"]);
  });

  it("reads unquoted digits touching < or > as the descriptor, an empty word never", () => {
    expect(tokens("0<f 9>g")).toStrictEqual(["0<f", "9>g"]);
    expect(tokens('"">f')).toStrictEqual(["", ">f"]);
  });

  it("refuses {name}> only when the whole word is a braced name", () => {
    expect(tokens("x{a}>f {a}x>f")).toStrictEqual(["x{a}", ">f", "{a}x", ">f"]);
    for (const name of ["a", "ab", "abc"]) {
      refuses(`{${name}}>f`, `the redirection {${name}}> assigns a descriptor number to a shell variable`);
    }
  });

  it("reads a here-document body as bash does: escapes hold, and $'…' is no quoting there", () => {
    // Escaped, $( and ` are literal; ( without a $ is text; $' is a $ and a quote.
    expect(tokens("cat <<E\n\\$(id) \\`id\\` f(x) it$'s\nE\n")).toStrictEqual(["cat", "<<E", "op:\n"]);
    // So $'$(id)' in a body runs id, and must be refused.
    refuses("cat <<E\n$'$(id)'\nE\n", "command substitution $(…) runs a command");
  });
});

describe("the tokenizer's own refusals", () => {
  // The classifier's line check (evaluated-code.ts) refuses these first; the tokenizer must refuse
  // them too, so that it never hands on a substitution as a word, whoever calls it.
  it("refuses every substitution and arithmetic form itself", () => {
    refuses("a$(id)", "command substitution $(…) runs a command");
    refuses("a$((1))", "arithmetic expansion $((…)) is not supported");
    refuses("a$[1]", "arithmetic expansion $[…] is not supported");
    refuses("a`id`", "backquote command substitution runs a command");
    refuses('"a`id`"', "backquote command substitution runs a command");
    refuses("cat <<EOF\n`id`\nEOF", "backquote command substitution runs a command");
    refuses("cat <(ls)", "process substitution <(…) / >(…) runs a command");
    refuses("tee >(ls)", "process substitution <(…) / >(…) runs a command");
  });

  it("refuses case-clause terminators and a backslash that ends the input", () => {
    refuses("a;&b", "case-clause terminators (;; ;& ;;&) are not supported");
    refuses("a;;b", "case-clause terminators (;; ;& ;;&) are not supported");
    // An escaped ; before an operator ; is a character of the word, no terminator.
    expect(tokens("a\\;;b")).toStrictEqual(["a;", "op:;", "b"]);
    refuses("a\\", "a trailing backslash at the end of the command");
  });

  it("reads &> and &>> as redirections of both outputs", () => {
    for (const op of ["&>", "&>>"] as const) {
      expect(new Lexer(`ls ${op}/dev/null`).run()[1]).toMatchObject({ kind: "redirect", op, fd: undefined });
    }
  });
});
