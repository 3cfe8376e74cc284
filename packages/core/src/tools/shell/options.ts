// What every command's validator shares: its signature, getopt-style option parsing (with
// getopt_long's abbreviations), and the rule that commands with writing options take literal arguments.
import type { Word } from "./lexer.js";

/** How deep `xargs`/`env` may nest other commands (`xargs env xargs …`). */
export const MAX_NESTING = 4;

/** Checks one command's arguments; returns why it is not read-only, or `undefined`. */
export type Validator = (
  name: string,
  args: readonly Word[],
  depth: number,
  check: CommandCheck,
) => string | undefined;

/**
 * Checks a nested command (`xargs CMD …`, `env CMD …`) at a nesting depth: the classifier's own
 * check of a simple command, handed to validators so that they need not import the command table.
 */
export type CommandCheck = (words: readonly Word[], depth: number) => string | undefined;

/** A stand-in for the arguments `xargs` appends at run time: unknown, possibly starting with `-`. */
export const UNKNOWN_ARGUMENT: Word = {
  value: "<argument from stdin>",
  raw: "<argument from stdin>",
  dynamic: true,
  quoted: false,
  assignment: false,
  digitsOnly: false,
  fields: true,
};

/** Commands whose every option reads: arbitrary (even unknown, glob-expanded) arguments are fine. */
export const anyArguments: Validator = () => undefined;

/**
 * Commands with options that write or run programs need literal arguments: a glob or `$var` could
 * expand to `-o file` (a file named `-delete` in the directory is enough).
 */
export function literalArguments(name: string, args: readonly Word[]): string | undefined {
  const dynamic = args.find((arg) => arg.dynamic);
  if (dynamic === undefined) return undefined;
  return `${name} has options that write files or run programs, so its arguments must be literal, but ${dynamic.raw} is expanded at run time`;
}

/** Wraps a validator so that it only runs once every argument is literal (see {@link literalArguments}). */
export function literalOnly(validate: Validator): Validator {
  return (name, args, depth, check) => literalArguments(name, args) ?? validate(name, args, depth, check);
}

export type ParsedArgument =
  | {
      readonly kind: "short";
      readonly letter: string;
      readonly value: string | undefined;
      readonly word: Word;
    }
  | { readonly kind: "long"; readonly name: string; readonly value: string | undefined; readonly word: Word }
  | { readonly kind: "operand"; readonly word: Word };

export interface OptionGrammar {
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
export function parseOptions(
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
export function longOptionIs(
  name: string,
  dangerous: readonly string[],
  exact: readonly string[] = [],
): string | undefined {
  if (exact.includes(name)) return undefined;
  return dangerous.find((option) => option.startsWith(name));
}
