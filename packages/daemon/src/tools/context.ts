// What every built-in tool receives for one call, and the two things they all do: answer with an
// outcome (never throw) and turn a path the model wrote into a real path inside the workspace.
import { stat } from "node:fs/promises";
import { isAbsolute, sep } from "node:path";
import type { ToolOutcome } from "@forkd/core";
import { resolveConfinedPath } from "@forkd/core/internal";

/**
 * An absolute directory that stands for one inside the workspace: a path the model copied from the
 * parent's conversation (`from`, e.g. the parent's checkout) is re-rooted at `to` before confinement.
 */
export interface PathAlias {
  from: string;
  to: string;
}

/** One call's view of the dispatcher: where it may work and how much it may say. */
export interface ToolRun {
  /** Absolute root every path is confined to. */
  workspace: string;
  /** The run's working directory, already confined; relative paths resolve against it. */
  cwd: string;
  signal: AbortSignal;
  /** @unit bytes */
  outputCapBytes: number;
  pathAliases: readonly PathAlias[];
  /** Files no tool may read or change: the daemon's credential files. */
  hidden?: HiddenFiles | undefined;
}

/**
 * Files known by device and inode, so that every path to one (a symlink, `..`, another mount of the
 * same directory) is recognised.
 */
export interface HiddenFiles {
  has(info: { dev: number; ino: number }): boolean;
}

/**
 * The files at `paths` as they are now (a missing one is skipped). Taken at each call: a credential
 * file the operator rotates is a new inode.
 */
export async function hiddenFilesOf(paths: readonly string[]): Promise<HiddenFiles> {
  const ids = new Set<string>();
  for (const path of paths) {
    const info = await stat(path).catch(() => undefined);
    if (info !== undefined) ids.add(`${info.dev}:${info.ino}`);
  }
  return { has: (info) => ids.has(`${info.dev}:${info.ino}`) };
}

/** A successful result. */
export function ok(content: string): ToolOutcome {
  return { content, isError: false };
}

/** A failed result: the model reads `content` and decides what to do next. */
export function fail(content: string): ToolOutcome {
  return { content, isError: true };
}

/** The outcome of a call stopped by its abort signal. */
export const ABORTED: ToolOutcome = fail("Aborted: the tool call was cancelled before it finished.");

/** A path resolved into the workspace, or the outcome that tells the model why it was refused. */
export type Confined =
  | {
      ok: true;
      /** The physical path: no symlinks, no `..`. */
      path: string;
      /** The workspace's physical path, which {@link path} lies in. */
      root: string;
    }
  | { ok: false; outcome: ToolOutcome };

/**
 * Resolves `candidate` (absolute, or relative to the run's cwd) into the workspace, following `..`
 * and symlinks; a path that ends up outside is refused.
 */
export async function confine(run: ToolRun, candidate: string): Promise<Confined> {
  const aliased = applyAliases(candidate, run.pathAliases);
  const result = await resolveConfinedPath(run.workspace, aliased, run.cwd, { signal: run.signal });
  if (result.ok) {
    // The sandbox covers these for Bash; the file tools run in the daemon's own process. Scrubbing a
    // Read's output is not enough: Grep's "found" is an oracle, and Edit can rewrite the value.
    const info = run.hidden === undefined ? undefined : await stat(result.path).catch(() => undefined);
    if (info !== undefined && run.hidden?.has(info) === true) {
      return {
        ok: false,
        outcome: fail(
          `Path refused: ${candidate} is one of the daemon's credential files; no tool may read or change it.`,
        ),
      };
    }
    return { ok: true, path: result.path, root: result.root };
  }
  return {
    ok: false,
    outcome: fail(
      `Path refused: ${candidate} resolves outside the workspace ${run.workspace} (${result.reason}). ` +
        "Only files inside the workspace can be used; use a path below it.",
    ),
  };
}

/** Re-roots an absolute path that lies under an alias's `from` at its `to`. */
export function applyAliases(candidate: string, aliases: readonly PathAlias[]): string {
  if (!isAbsolute(candidate)) return candidate;
  for (const { from, to } of aliases) {
    const root = from.endsWith(sep) && from.length > 1 ? from.slice(0, -1) : from;
    if (candidate === root) return to;
    if (candidate.startsWith(root + sep)) return to + candidate.slice(root.length);
  }
  return candidate;
}

/** A Node error's `code` (`ENOENT`, …), if it has one. */
export function errnoCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}

/** A short description of anything thrown. */
export function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Whether the first bytes of a file look binary (a NUL byte, as git and grep decide). */
export function looksBinary(head: Uint8Array): boolean {
  return head.includes(0);
}

/** Bytes read from the start of a file to decide whether it is binary. @unit bytes */
export const BINARY_SNIFF_BYTES = 8192;
