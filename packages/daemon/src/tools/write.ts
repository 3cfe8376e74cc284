// Write and Edit: the two tools that change files, confined to the workspace like every path.
import { stat } from "node:fs/promises";
import type { ToolOutcome } from "@forkd/core";
import {
  ABORTED,
  BINARY_SNIFF_BYTES,
  type Confined,
  confine,
  describeError,
  errnoCode,
  fail,
  looksBinary,
  ok,
  type ToolRun,
} from "./context.js";
import {
  openConfinedForRead,
  openConfinedForWrite,
  openProblemText,
  readOpenedFile,
} from "./open-confined.js";
import { capOutput } from "./output.js";
import { numberedLine } from "./read.js";

export interface WriteInput {
  file_path: string;
  content: string;
}

export interface EditInput {
  file_path: string;
  old_string: string;
  new_string: string;
  /** Replace every occurrence instead of requiring exactly one. @default false */
  replace_all?: boolean | undefined;
}

/**
 * Largest file Edit reads: it holds the whole file (and its edited copy) in the daemon's memory, and
 * a model's command can make a sparse file of any size in an instant. @unit bytes
 */
export const MAX_EDIT_FILE_BYTES = 16 * 1024 * 1024;

/** Lines of context shown around an edit. */
const SNIPPET_CONTEXT = 3;
/** Lines of a snippet shown at most. */
const SNIPPET_MAX_LINES = 30;

/**
 * Why a path may not be written: anything inside a `.git` directory (or a `.git` file) is git's
 * configuration, hooks and object store, and a `[diff] external`, a hook or a filter written there
 * runs on the next `git diff` or `git commit` (#11 finding 4). Compared case-insensitively: a
 * case-insensitive file system reads `.GIT` as `.git`.
 */
export function gitInternalsProblem(path: string): string | undefined {
  return path.split(/[\\/]/).some((segment) => segment.toLowerCase() === ".git")
    ? `${path} is inside .git: git's configuration, hooks and objects are not writable by tools (a config or hook written there would run on the next git command).`
    : undefined;
}

/** The path a Write or Edit may change: confined to the workspace, and not inside `.git`. */
async function writablePath(run: ToolRun, candidate: string): Promise<Confined> {
  const target = await confine(run, candidate);
  if (!target.ok) return target;
  const gitProblem = gitInternalsProblem(target.path);
  return gitProblem === undefined ? target : { ok: false, outcome: fail(gitProblem) };
}

/** What Write and Edit answer for a file they may not open. */
function refusal(
  path: string,
  problem: "directory" | "special" | "hidden" | "changed",
  tool: string,
): ToolOutcome {
  return problem === "directory"
    ? fail(`${path} is a directory; give ${tool} the path of a file.`)
    : fail(openProblemText(path, problem));
}

/**
 * Replaces the content of the regular file at the confined `path` (created if missing, with its
 * directories). Opened without blocking and checked on the descriptor: a FIFO a model made with
 * Bash fails the open at once (`ENXIO`) or is refused, where a blocking open held a libuv
 * thread-pool thread for ever; and a path swapped for a symlink after the check is refused, not
 * followed out of the workspace (see `open-confined.ts`).
 */
async function writeRegularFile(
  run: ToolRun,
  target: { path: string; root: string },
  content: string,
  tool: string,
): Promise<ToolOutcome | undefined> {
  const opened = await openConfinedForWrite(run, target.root, target.path);
  if (!opened.ok) return refusal(target.path, opened.problem, tool);
  try {
    await opened.handle.truncate(0);
    await opened.handle.writeFile(content, { signal: run.signal });
  } finally {
    await opened.handle.close();
  }
  return undefined;
}

export async function writeTool(input: WriteInput, run: ToolRun): Promise<ToolOutcome> {
  const target = await writablePath(run, input.file_path);
  if (!target.ok) return target.outcome;
  const path = target.path;
  try {
    const existing = await stat(path).catch(() => undefined);
    if (existing?.isDirectory()) return fail(`${path} is a directory; give Write the path of a file.`);
    run.signal.throwIfAborted();
    const refused = await writeRegularFile(run, target, input.content, "Write");
    if (refused !== undefined) return refused;
    const bytes = Buffer.byteLength(input.content);
    return ok(`${existing === undefined ? "Created" : "Overwrote"} ${path} (${bytes} bytes).`);
  } catch (error) {
    if (run.signal.aborted) return ABORTED;
    return fail(`Cannot write ${path}: ${describeError(error)}`);
  }
}

export async function editTool(input: EditInput, run: ToolRun): Promise<ToolOutcome> {
  const target = await writablePath(run, input.file_path);
  if (!target.ok) return target.outcome;
  const path = target.path;
  if (input.old_string === input.new_string) {
    return fail("old_string and new_string are identical: there is nothing to change.");
  }
  try {
    let text: string;
    try {
      const opened = await openConfinedForRead(run, path);
      if (!opened.ok) return refusal(path, opened.problem, "Edit");
      let data: Buffer;
      try {
        if (opened.info.size > MAX_EDIT_FILE_BYTES) {
          return fail(
            `${path} is too large for Edit (${opened.info.size} bytes; at most ${MAX_EDIT_FILE_BYTES}). Change it with Bash (sed, a script) where allowed.`,
          );
        }
        data = await readOpenedFile(opened.handle, opened.info.size, run.signal);
      } finally {
        await opened.handle.close();
      }
      if (looksBinary(data.subarray(0, BINARY_SNIFF_BYTES))) {
        return fail(`${path} is a binary file; Edit changes text files only.`);
      }
      text = data.toString("utf8");
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" && input.old_string === "") {
        // An empty old_string on a missing file creates it, as Claude Code's Edit does.
        return await writeTool({ file_path: path, content: input.new_string }, run);
      }
      if (code === "ENOENT") {
        return fail(
          `File does not exist: ${path}. Use Write to create a file, or Glob to find the right path.`,
        );
      }
      if (code === "EISDIR") return fail(`${path} is a directory; give Edit the path of a file.`);
      throw error;
    }

    if (input.old_string === "") {
      if (text !== "") {
        return fail(
          `old_string is empty but ${path} is not: give the exact text to replace (Read the file first), or use Write to replace the whole file.`,
        );
      }
      const refused = await writeRegularFile(run, target, input.new_string, "Edit");
      if (refused !== undefined) return refused;
      return ok(
        `Edited ${path}: wrote its first content.\n${snippet(input.new_string, 0, input.new_string)}`,
      );
    }

    let oldString = input.old_string;
    let newString = input.new_string;
    let count = occurrences(text, oldString);
    if (count === 0 && text.includes("\r\n") && !oldString.includes("\r\n")) {
      // The model writes \n; this file uses \r\n.
      oldString = oldString.replaceAll("\n", "\r\n");
      newString = newString.replaceAll("\n", "\r\n");
      count = occurrences(text, oldString);
    }
    if (count === 0) {
      return fail(
        `old_string was not found in ${path}. It must match the file exactly, including whitespace and ` +
          "indentation (without Read's line-number prefixes). Read the file and copy the text to replace.",
      );
    }
    if (count > 1 && input.replace_all !== true) {
      return fail(
        `old_string occurs ${count} times in ${path}. Include more surrounding lines to make it unique, ` +
          "or set replace_all to true to change every occurrence.",
      );
    }
    // Known before it is built: every occurrence of a one-character old_string replaced by a long
    // new_string multiplies the file, in the daemon's memory and then on disk.
    const length =
      text.length + (input.replace_all === true ? count : 1) * (newString.length - oldString.length);
    if (length > MAX_EDIT_FILE_BYTES) {
      return fail(
        `The edited ${path} would be too large for Edit (${length} characters; at most ${MAX_EDIT_FILE_BYTES}). Make a smaller change, or use Bash where allowed.`,
      );
    }
    const at = text.indexOf(oldString);
    const updated =
      input.replace_all === true
        ? text.split(oldString).join(newString)
        : text.slice(0, at) + newString + text.slice(at + oldString.length);
    run.signal.throwIfAborted();
    const refused = await writeRegularFile(run, target, updated, "Edit");
    if (refused !== undefined) return refused;
    const what = count === 1 ? "1 occurrence" : `${count} occurrences`;
    const shown = snippet(updated, at, newString);
    return ok(
      capOutput(`Edited ${path}: replaced ${what}. Around the first change:\n${shown}`, run.outputCapBytes),
    );
  } catch (error) {
    if (run.signal.aborted) return ABORTED;
    return fail(`Cannot edit ${path}: ${describeError(error)}`);
  }
}

/** Non-overlapping occurrences of `needle` (not empty) in `haystack`. */
function occurrences(haystack: string, needle: string): number {
  let count = 0;
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) count++;
  return count;
}

/** Numbered lines around the text inserted at `at`, so the model sees the result without a Read. */
function snippet(text: string, at: number, inserted: string): string {
  const lines = text.split("\n");
  const firstLine = text.slice(0, at).split("\n").length - 1;
  const lastLine = firstLine + inserted.split("\n").length - 1;
  const from = Math.max(0, firstLine - SNIPPET_CONTEXT);
  const to = Math.min(lines.length - 1, lastLine + SNIPPET_CONTEXT, from + SNIPPET_MAX_LINES - 1);
  const out: string[] = [];
  for (let i = from; i <= to; i++) out.push(numberedLine(i + 1, lines[i]!.replace(/\r$/, "")));
  return out.join("\n");
}
