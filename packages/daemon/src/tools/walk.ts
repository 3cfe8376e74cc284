// A directory walk for Glob and Grep: depth first, names sorted, symlinked directories not followed
// (no loops, no escapes), `.git` and `node_modules` skipped unless asked for.
import { constants } from "node:fs";
import { open, opendir, readlink } from "node:fs/promises";
import { join } from "node:path";

/** Directory names a walk does not descend into by default. */
export const DEFAULT_SKIPPED_DIRS: readonly string[] = [".git", "node_modules"];

/** Entries a walk yields before it lets the event loop take a turn. */
const ENTRIES_PER_TURN = 1024;
/** A directory with more entries is walked in the file system's order, not sorted by name. */
export const MAX_SORTED_ENTRIES = 50_000;

/** One non-directory entry found by {@link walkFiles}. */
export interface WalkEntry {
  /** Absolute path. */
  path: string;
  /** Path relative to the walk's root, `/`-separated. */
  relative: string;
  /** `symlink` entries are not resolved: a reader must confine them before following. */
  kind: "file" | "symlink" | "other";
}

export interface WalkOptions {
  signal: AbortSignal;
  /** Directory names not descended into. */
  skipDirs: ReadonlySet<string>;
  /** Entries deeper than this many segments below the root are not visited. @default Infinity */
  maxDepth?: number;
  /** Called for each directory passed over because it was swapped for a symlink as it was opened. */
  onSwapped?: () => void;
}

/**
 * Yields every non-directory entry below `root`. Unreadable directories are passed over.
 * Throws the signal's reason when aborted.
 */
export async function* walkFiles(root: string, options: WalkOptions): AsyncGenerator<WalkEntry> {
  const maxDepth = options.maxDepth ?? Number.POSITIVE_INFINITY;
  const stack: { dir: string; relative: string; depth: number }[] = [{ dir: root, relative: "", depth: 0 }];
  let sinceYield = 0;
  while (stack.length > 0) {
    options.signal.throwIfAborted();
    const { dir, relative, depth } = stack.pop()!;
    const entries = await readDirSorted(dir, options.onSwapped);
    const subdirs: typeof stack = [];
    for (const entry of entries) {
      const childRelative = relative === "" ? entry.name : `${relative}/${entry.name}`;
      const childPath = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (depth + 1 < maxDepth && !options.skipDirs.has(entry.name)) {
          subdirs.push({ dir: childPath, relative: childRelative, depth: depth + 1 });
        }
        continue;
      }
      const kind = entry.isFile() ? "file" : entry.isSymbolicLink() ? "symlink" : "other";
      yield { path: childPath, relative: childRelative, kind };
      // A consumer that needs no I/O per entry (Glob's name match) would otherwise run through a
      // directory of a million names in one turn of the event loop: seconds without a presence beat.
      if (++sinceYield >= ENTRIES_PER_TURN) {
        sinceYield = 0;
        await new Promise((resolve) => setImmediate(resolve));
        options.signal.throwIfAborted();
      }
    }
    // Pushed in reverse so the stack pops them in name order.
    for (let i = subdirs.length - 1; i >= 0; i--) stack.push(subdirs[i]!);
  }
}

/**
 * The entries of `dir`, sorted by name when there are few enough. The directory is opened with
 * O_NOFOLLOW and listed through its descriptor, which must still be at `dir`: another run's command
 * can swap a directory the walk saw for a symlink to one outside the workspace before it is opened,
 * and `opendir` by name follows it.
 */
async function readDirSorted(dir: string, onSwapped: (() => void) | undefined) {
  let descriptor: Awaited<ReturnType<typeof open>> | undefined;
  try {
    descriptor = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    const fdPath = `/proc/self/fd/${descriptor.fd}`;
    if ((await readlink(fdPath)) !== dir) {
      onSwapped?.();
      return [];
    }
    const handle = await opendir(fdPath);
    const entries = [];
    for await (const entry of handle) entries.push(entry);
    // Name order makes a walk's order the same on every machine; a directory too large to sort
    // within one turn of the event loop (a million names take a second) keeps the file system's.
    if (entries.length <= MAX_SORTED_ENTRIES) {
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    }
    return entries;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ELOOP") onSwapped?.();
    return [];
  } finally {
    await descriptor?.close();
  }
}
