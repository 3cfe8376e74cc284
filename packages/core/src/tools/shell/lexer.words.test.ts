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

describe("the tokenizer's own refusals", () => {
  // The classifier's line check (evaluated-code.ts) refuses these first; the tokenizer must refuse
  // them too, so that it never hands on a substitution as a word, whoever calls it.
  it("refuses every substitution and arithmetic form itself", () => {
    const refuses = (line: string, reason: string) => {
      let thrown: unknown;
      try {
        new Lexer(line).run();
      } catch (error) {
        thrown = error;
      }
      expect(thrown, line).toBeInstanceOf(Rejection);
      expect((thrown as Rejection).reason, line).toBe(reason);
    };
    refuses("a$(id)", "command substitution $(…) runs a command");
    refuses("a$((1))", "arithmetic expansion $((…)) is not supported");
    refuses("a$[1]", "arithmetic expansion $[…] is not supported");
    refuses("a`id`", "backquote command substitution runs a command");
    refuses('"a`id`"', "backquote command substitution runs a command");
    refuses("cat <<EOF\n`id`\nEOF", "backquote command substitution runs a command");
    refuses("cat <(ls)", "process substitution <(…) / >(…) runs a command");
    refuses("tee >(ls)", "process substitution <(…) / >(…) runs a command");
  });

  it("reads &> and &>> as redirections of both outputs", () => {
    for (const op of ["&>", "&>>"] as const) {
      expect(new Lexer(`ls ${op}/dev/null`).run()[1]).toMatchObject({ kind: "redirect", op, fd: undefined });
    }
  });
});
