// The read-only shell classifier: decides whether a Bash tool call may run in a fork that must not
// change anything. It tokenizes the command line the way a POSIX shell (bash) would, then accepts
// it only when every simple command is a known reader with only reading options. Anything it does
// not understand is refused: a false "not read-only" costs the model one retry, a false "read-only"
// lets a fork write where it must not. See docs/tool-filters.md for the rules and their reasons.
import { checkSimpleCommand } from "./commands/index.js";
import { evaluatedCode } from "./evaluated-code.js";
import { Lexer } from "./lexer.js";
import { parse } from "./parser.js";
import { checkRedirect } from "./redirects.js";
import { Rejection } from "./reject.js";

/** The verdict on one command line. */
export interface ShellClassification {
  /** True only when every command of the line is known to read and never write, delete or run programs. */
  readonly readOnly: boolean;
  /** Why: names the first construct or command that is not read-only, or the commands that were checked. */
  readonly reason: string;
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
