// Glob: files whose path matches a pattern, newest first.
import { lstat, stat } from "node:fs/promises";
import type { ToolOutcome } from "@forkd/core";
import { ABORTED, confine, describeError, errnoCode, fail, ok, type ToolRun } from "./context.js";
import { globToRegExp, maxGlobDepth, splitGlobBase } from "./glob-pattern.js";
import { capOutput } from "./output.js";
import { walkFiles } from "./walk.js";

/** Paths listed at most; the model is told when there were more. */
export const MAX_GLOB_RESULTS = 100;

export interface GlobInput {
  pattern: string;
  /** Directory to search; the run's cwd when absent. */
  path?: string | undefined;
}

/** Where a search starts: a directory or a single file inside the workspace. */
export type SearchRoot =
  | { ok: true; path: string; isDirectory: boolean }
  | { ok: false; outcome: ToolOutcome };

/** Confines a Glob/Grep `path` (default: the cwd) and checks that it exists. */
export async function resolveSearchRoot(run: ToolRun, path: string | undefined): Promise<SearchRoot> {
  const target =
    path === undefined || path === "" ? { ok: true as const, path: run.cwd } : await confine(run, path);
  if (!target.ok) return target;
  try {
    const info = await stat(target.path);
    return { ok: true, path: target.path, isDirectory: info.isDirectory() };
  } catch (error) {
    if (errnoCode(error) === "ENOENT")
      return { ok: false, outcome: fail(`Path does not exist: ${target.path}`) };
    return { ok: false, outcome: fail(`Cannot search ${target.path}: ${describeError(error)}`) };
  }
}

/** Directory names to skip in a walk, minus those the pattern names literally (`node_modules/x/**`). */
export function skipDirsFor(pattern: string, skipDirs: readonly string[]): Set<string> {
  const named = new Set(pattern.split("/"));
  return new Set(skipDirs.filter((name) => !named.has(name)));
}

export async function globTool(
  input: GlobInput,
  run: ToolRun,
  skipDirs: readonly string[],
): Promise<ToolOutcome> {
  const root = await resolveSearchRoot(run, input.path);
  if (!root.ok) return root.outcome;
  if (!root.isDirectory)
    return fail(`${root.path} is a file, not a directory; give Glob a directory as path.`);

  // A literal start (`src/lib/*.ts`, `../x/*`, `/abs/**`) is confined like any path, then walked.
  const { base, rest } = splitGlobBase(input.pattern);
  const start =
    base === "" ? { ok: true as const, path: root.path } : await confine({ ...run, cwd: root.path }, base);
  if (!start.ok) return start.outcome;
  try {
    // Only the newest MAX_GLOB_RESULTS are kept: a walk of a million matching names held them all,
    // about 100 MB, then sorted them in one turn of the event loop.
    const newest = new NewestFiles(MAX_GLOB_RESULTS);
    let swapped = 0;
    let stopped: string | undefined;
    if (rest === "") {
      const info = await lstat(start.path).catch(() => undefined);
      if (info !== undefined && !info.isDirectory()) newest.add({ path: start.path, mtimeMs: info.mtimeMs });
    } else {
      const regex = globToRegExp(rest);
      const walk = walkFiles(start.path, {
        signal: run.signal,
        skipDirs: skipDirsFor(rest, skipDirs),
        maxDepth: maxGlobDepth(rest),
        onSwapped: () => swapped++,
        onStopped: (reason) => {
          stopped = reason;
        },
      });
      for await (const entry of walk) {
        if (!regex.test(entry.relative)) continue;
        const info = await lstat(entry.path).catch(() => undefined);
        if (info !== undefined) newest.add({ path: entry.path, mtimeMs: info.mtimeMs });
      }
    }
    const note = swapped === 0 ? [] : [swappedNote(swapped)];
    if (stopped !== undefined) note.push(stoppedNote(stopped, "use a more specific path or pattern"));
    if (newest.seen === 0) return ok(["No files found", ...note].join("\n"));
    const shown = newest.files.map((f) => f.path);
    if (newest.seen > MAX_GLOB_RESULTS) {
      shown.push(
        `(Results are truncated: ${MAX_GLOB_RESULTS} of ${newest.seen} files shown. Use a more specific path or pattern.)`,
      );
    }
    return ok(
      capOutput([...shown, ...note].join("\n"), run.outputCapBytes, "use a more specific path or pattern"),
    );
  } catch (error) {
    if (run.signal.aborted) return ABORTED;
    return fail(`Glob failed: ${describeError(error)}`);
  }
}

/** Tells the model that a walk's limit stopped it before its end, and what to do. */
export function stoppedNote(reason: string, hint: string): string {
  return `(${reason}; the rest was not searched: ${hint})`;
}

/** Tells the model about directories a walk passed over because they were swapped as it opened them. */
export function swappedNote(count: number): string {
  return `(${count} director${count === 1 ? "y" : "ies"} changed into a symlink while being opened and ${count === 1 ? "was" : "were"} not searched)`;
}

type FileTime = { path: string; mtimeMs: number };

/** Newest first; equal times by path, so the order is stable. */
function newestFirst(a: FileTime, b: FileTime): number {
  return b.mtimeMs - a.mtimeMs || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
}

/** Sorts newest first (see {@link newestFirst}). */
export function sortNewestFirst(files: FileTime[]): void {
  files.sort(newestFirst);
}

/** The newest `limit` files of those added, newest first, and how many were added in all. */
class NewestFiles {
  readonly files: FileTime[] = [];
  seen = 0;

  constructor(readonly limit: number) {}

  add(file: FileTime): void {
    this.seen++;
    const { files } = this;
    if (files.length === this.limit && newestFirst(file, files.at(-1)!) >= 0) return;
    // Binary search for the first kept file that sorts after this one.
    let lo = 0;
    let hi = files.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (newestFirst(files[mid]!, file) <= 0) lo = mid + 1;
      else hi = mid;
    }
    files.splice(lo, 0, file);
    if (files.length > this.limit) files.pop();
  }
}
