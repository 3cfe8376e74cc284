// The commands the classifier knows, each with its validator.
import type { Word } from "../lexer.js";
import { anyArguments, literalOnly, type Validator } from "../options.js";
import { awkValidator } from "./awk.js";
import { dateValidator } from "./date.js";
import { envValidator } from "./env.js";
import { fileValidator } from "./file.js";
import { findValidator } from "./find.js";
import { gitValidator } from "./git.js";
import { printfValidator } from "./printf.js";
import { agValidator, rgValidator } from "./search.js";
import { sedValidator } from "./sed.js";
import { sortValidator } from "./sort.js";
import { testValidator } from "./test.js";
import { treeValidator } from "./tree.js";
import { uniqValidator } from "./uniq.js";
import { xargsValidator } from "./xargs.js";

/** Checks one simple command (its name and arguments); returns why it is not read-only, or `undefined`. */
export function checkSimpleCommand(words: readonly Word[], depth: number): string | undefined {
  const name = words[0];
  if (name === undefined) return undefined;
  if (name.dynamic) return `the command name ${name.raw} is expanded at run time`;
  if (name.value.includes("/")) {
    return `${JSON.stringify(name.value)} is run by path; only known read-only commands run by name are allowed`;
  }
  const validate = COMMANDS.get(name.value);
  if (validate === undefined) return `${JSON.stringify(name.value)} is not a known read-only command`;
  return validate(name.value, words.slice(1), depth, checkSimpleCommand);
}

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
