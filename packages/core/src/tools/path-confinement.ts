// Confines a path a tool wants to write to a root directory (the memory directory of a read-only fork,
// the workspace of a daemon run). The check follows symlinks the way the kernel does when the file is
// opened, including symlinks of the final component and of directories that exist only partly, so a
// symlink inside the root that points outside cannot carry a write out of it.
import { lstat, readlink } from "node:fs/promises";
import { posix } from "node:path";

/** Why a path was refused. */
export type ConfinedPathFailureCode =
  /** The path resolves outside the root. */
  | "outside_root"
  /** More symlinks than the kernel follows (a loop). */
  | "symlink_loop"
  /** Not a usable path: empty, a NUL byte, a relative cwd, a file used as a directory. */
  | "invalid_path"
  /** A component could not be inspected (permissions, I/O error): confinement cannot be proven. */
  | "unreadable";

/** The outcome of {@link resolveConfinedPath}. */
export type ConfinedPathResult =
  | {
      readonly ok: true;
      /**
       * The physical target: absolute, free of `.`/`..` and symlinks (for the part that exists). Writing to
       * this path instead of the candidate makes the check and the write agree (up to concurrent changes).
       */
      readonly path: string;
      /** The physical root the path was checked against. */
      readonly root: string;
    }
  | { readonly ok: false; readonly code: ConfinedPathFailureCode; readonly reason: string };

/** Options of {@link resolveConfinedPath}. */
export interface ResolveConfinedPathOptions {
  /** Stops the resolution between file-system calls; the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
  /** How many symlinks one resolution may follow before it counts as a loop. @default 40 (Linux's limit) */
  readonly maxSymlinks?: number | undefined;
}

/**
 * Resolves `candidate` (absolute, or relative to `cwd`) and checks that it lies inside `root` (the root
 * itself included).
 *
 * Symlinks are resolved component by component as the kernel would on open: a `..` after a symlink
 * goes to the parent of the symlink's target, a symlinked final component (even a dangling one) is
 * followed to its target, and once a component does not exist the rest is taken literally, as
 * `mkdir -p` would create it. The root is resolved the same way, so a root that is a symlink or does
 * not exist yet works. The candidate is checked twice, as written and after lexical normalisation
 * (`path.resolve`), because executors differ in which of the two they open; both must stay inside.
 *
 * Paths are POSIX paths. The check is made at call time: a process racing to swap a directory for a
 * symlink afterwards is not covered (write to the returned `path` with `O_NOFOLLOW` where that matters).
 *
 * @param root - The directory writes are confined to; relative to `cwd` when not absolute.
 * @param candidate - The path the tool was given.
 * @param cwd - The directory relative paths are resolved against; must be absolute.
 */
export async function resolveConfinedPath(
  root: string,
  candidate: string,
  cwd: string,
  options: ResolveConfinedPathOptions = {},
): Promise<ConfinedPathResult> {
  for (const [label, value] of [
    ["path", candidate],
    ["root", root],
    ["cwd", cwd],
  ] as const) {
    if (typeof value !== "string" || value === "") return invalid(`the ${label} is empty`);
    if (value.includes("\0")) return invalid(`the ${label} contains a NUL byte`);
  }
  if (!posix.isAbsolute(cwd)) return invalid(`the working directory ${JSON.stringify(cwd)} is not absolute`);
  const limits = { signal: options.signal, maxSymlinks: options.maxSymlinks ?? 40 };

  const physicalRoot = await physicalPath(joinRaw(cwd, root), limits);
  if (!physicalRoot.ok) return { ...physicalRoot, reason: `the root ${root}: ${physicalRoot.reason}` };

  const asWritten = await physicalPath(joinRaw(cwd, candidate), limits);
  if (!asWritten.ok) return asWritten;
  if (!isInside(physicalRoot.path, asWritten.path)) {
    return outside(candidate, asWritten.path, physicalRoot.path);
  }
  const normalised = posix.resolve(cwd, candidate);
  const lexical = await physicalPath(normalised, limits);
  if (!lexical.ok) return lexical;
  if (!isInside(physicalRoot.path, lexical.path)) {
    return outside(candidate, lexical.path, physicalRoot.path);
  }
  return { ok: true, path: asWritten.path, root: physicalRoot.path };
}

/** Whether `path` is `root` or below it; both must be physical, normalised absolute paths. */
function isInside(root: string, path: string): boolean {
  if (root === "/") return true;
  return path === root || path.startsWith(`${root}/`);
}

/** Joins without normalising: `a/link/..` must keep its `..` after the symlink for the kernel's semantics. */
function joinRaw(cwd: string, path: string): string {
  return path.startsWith("/") ? path : `${cwd}/${path}`;
}

function invalid(reason: string): ConfinedPathResult {
  return { ok: false, code: "invalid_path", reason };
}

function outside(candidate: string, resolved: string, root: string): ConfinedPathResult {
  const via = resolved === candidate ? "" : ` (it resolves to ${resolved})`;
  return { ok: false, code: "outside_root", reason: `${candidate} is outside ${root}${via}` };
}

type Physical =
  | { readonly ok: true; readonly path: string }
  | { readonly ok: false; readonly code: ConfinedPathFailureCode; readonly reason: string };

/**
 * Resolves an absolute path component by component with the kernel's semantics. Unlike
 * `fs.realpath`, it also resolves paths whose tail does not exist, and it follows a dangling symlink
 * to where a write through it would land.
 */
async function physicalPath(
  absolute: string,
  limits: { signal: AbortSignal | undefined; maxSymlinks: number },
): Promise<Physical> {
  // A stack of components still to walk, next one last, so a symlink's target can be pushed in front.
  const pending = components(absolute).reverse();
  let current = "/";
  /** Components appended since the first one that does not exist; `..` can walk back out of them. */
  let missing = 0;
  let followed = 0;
  while (pending.length > 0) {
    const part = pending.pop()!;
    if (part === "..") {
      current = posix.dirname(current);
      if (missing > 0) missing--;
      continue;
    }
    const next = current === "/" ? `/${part}` : `${current}/${part}`;
    if (missing > 0) {
      current = next;
      missing++;
      continue;
    }
    limits.signal?.throwIfAborted();
    let stats: Awaited<ReturnType<typeof lstat>>;
    try {
      stats = await lstat(next);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") {
        current = next;
        missing = 1;
        continue;
      }
      if (code === "ENOTDIR")
        return { ok: false, code: "invalid_path", reason: `${current} is not a directory` };
      return { ok: false, code: "unreadable", reason: `cannot inspect ${next} (${code ?? String(error)})` };
    }
    if (stats.isSymbolicLink()) {
      followed++;
      if (followed > limits.maxSymlinks) {
        return {
          ok: false,
          code: "symlink_loop",
          reason: `too many symlinks (a loop?) resolving ${absolute}`,
        };
      }
      let target: string;
      try {
        target = await readlink(next);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        return {
          ok: false,
          code: "unreadable",
          reason: `cannot read the symlink ${next} (${code ?? String(error)})`,
        };
      }
      if (target.startsWith("/")) current = "/";
      pending.push(...components(target).reverse());
      continue;
    }
    if (!stats.isDirectory() && pending.length > 0) {
      return { ok: false, code: "invalid_path", reason: `${next} is not a directory` };
    }
    current = next;
  }
  return { ok: true, path: current };
}

function components(path: string): string[] {
  return path.split("/").filter((part) => part !== "" && part !== ".");
}
