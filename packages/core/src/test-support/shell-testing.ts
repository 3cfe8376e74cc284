// What the tests of the shell classifier's modules share: verdict assertions, the characters random
// command lines are made of, and where bash is (the differential tests compare the classifier with it).
import { spawnSync } from "node:child_process";
import { expect } from "vitest";
import { classifyShellCommand } from "../tools/shell/classify.js";

/** Asserts that `command` is read-only. */
export function accepted(command: string): void {
  const verdict = classifyShellCommand(command);
  expect(verdict.readOnly, `${command}: ${verdict.reason}`).toBe(true);
}

/** Asserts that `command` is not read-only and that the reason mentions what was refused. */
export function refused(command: string, reasonIncludes: string | RegExp): void {
  const verdict = classifyShellCommand(command);
  expect(verdict.readOnly, `${command}: ${verdict.reason}`).toBe(false);
  if (typeof reasonIncludes === "string") expect(verdict.reason).toContain(reasonIncludes);
  else expect(verdict.reason).toMatch(reasonIncludes);
}

/** Characters (and a few words) random command lines are made of. */
export const SHELL_ALPHABET = [
  "a",
  "b",
  " ",
  "'",
  '"',
  "\\",
  "$",
  "#",
  "\n",
  ";",
  "|",
  "&",
  "(",
  ")",
  "<",
  ">",
  "{",
  "}",
  "*",
  "=",
  "-",
  "x",
  "`",
  "!",
];

/** Where bash is, if it is here: the differential tests compare the classifier with it. */
export const bashPath =
  spawnSync("bash", ["-c", "command -v bash"], { encoding: "utf8" }).stdout?.trim() ?? "";
export const bash = bashPath.startsWith("/");
