// A directory walk for Glob and Grep: depth first, names sorted, symlinked directories not followed
// (no loops, no escapes), `.git` and `node_modules` skipped unless asked for. Its memory does not
// grow with a directory's size: entries are read one at a time, at most MAX_SORTED_ENTRIES of one
// directory are held, and the directories still to enter are capped (MAX_PENDING_DIRS).
import { constants, type Dir, type Dirent } from "node:fs";
import { open, opendir, readlink } from "node:fs/promises";
import { join } from "node:path";

/** Directory names a walk does not descend into by default. */
export const DEFAULT_SKIPPED_DIRS: readonly string[] = [".git", "node_modules"];

/** Entries a walk yields before it lets the event loop take a turn. */
const ENTRIES_PER_TURN = 1024;
/**
 * A directory with more entries is walked in the file system's order, not sorted by name; no more
 * than this many of one directory's entries are held at once.
 */
export const MAX_SORTED_ENTRIES = 50_000;
/**
 * Subdirectories a walk holds, seen and not yet entered, summed over the directories it is in. A
 * walk that would hold more stops there and says so: a directory of a million subdirectories held
 * a million names.
 */
export const MAX_PENDING_DIRS = 100_000;
/**
 * Directories of more than {@link MAX_SORTED_ENTRIES} entries a walk is inside at once, each held
 * open (one descriptor) while its entries are streamed. A walk that would open more stops there.
 */
export const MAX_OPEN_DIRS = 16;
/** Entries the system reads from a directory at a time. */
const DIR_BUFFER = 256;

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
  /** Called once, with a sentence for the model, when a limit stopped the walk before its end. */
  onStopped?: (reason: string) => void;
  /** Lower limits than {@link MAX_SORTED_ENTRIES}, {@link MAX_PENDING_DIRS} and {@link MAX_OPEN_DIRS}, for tests. */
  limits?: { maxSortedEntries?: number; maxPendingDirs?: number; maxOpenDirs?: number };
}

/** A directory being walked. */
interface Frame {
  dir: string;
  relative: string;
  depth: number;
  /** Its subdirectories read and not yet entered, in the order they are entered. */
  pending: Dirent[];
  next: number;
  /** Open while the rest of a directory too large to sort is streamed. */
  stream: Dir | undefined;
}

/**
 * Yields every non-directory entry below `root`. Unreadable directories are passed over.
 * Throws the signal's reason when aborted.
 */
export async function* walkFiles(root: string, options: WalkOptions): AsyncGenerator<WalkEntry> {
  const maxDepth = options.maxDepth ?? Number.POSITIVE_INFINITY;
  const maxSorted = options.limits?.maxSortedEntries ?? MAX_SORTED_ENTRIES;
  const maxPending = options.limits?.maxPendingDirs ?? MAX_PENDING_DIRS;
  const maxOpen = options.limits?.maxOpenDirs ?? MAX_OPEN_DIRS;
  const stack: Frame[] = [];
  let pendingTotal = 0;
  let openTotal = 0;
  let sinceYield = 0;
  const stop = (reason: string) => options.onStopped?.(reason);

  // A sorted directory's subdirectories are entered after its files; those of a directory too large
  // to sort after the files among its first entries, then each as the stream reaches it.
  const cutShortBy = (count: number): string | undefined =>
    pendingTotal + count > maxPending
      ? `the walk stopped early: it would hold more than ${maxPending.toLocaleString("en-US")} directories still to search`
      : undefined;

  const child = (frame: Frame, entry: Dirent) => ({
    path: join(frame.dir, entry.name),
    relative: frame.relative === "" ? entry.name : `${frame.relative}/${entry.name}`,
  });
  const enters = (frame: Frame, entry: Dirent) =>
    frame.depth + 1 < maxDepth && !options.skipDirs.has(entry.name);

  try {
    let next: { dir: string; relative: string; depth: number } | undefined = {
      dir: root,
      relative: "",
      depth: 0,
    };
    while (true) {
      options.signal.throwIfAborted();
      if (next !== undefined) {
        // Enter a directory: read up to one more entry than can be sorted.
        const { dir, relative, depth } = next;
        next = undefined;
        const listing = await openListing(dir, options.onSwapped);
        if (listing !== undefined) {
          const read: Dirent[] = [];
          let ended = false;
          try {
            while (read.length <= maxSorted) {
              const entry = await listing.read();
              if (entry === null) {
                ended = true;
                break;
              }
              read.push(entry);
            }
          } catch {
            ended = true;
          }
          // Name order makes a walk's order the same on every machine; a directory too large to sort
          // within one turn of the event loop (a million names take a second) keeps the file system's.
          if (ended) {
            await listing.close().catch(() => {});
            read.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
          } else if (openTotal + 1 > maxOpen) {
            await listing.close().catch(() => {});
            stop(
              `the walk stopped early: it would be inside more than ${maxOpen} directories of over ${maxSorted.toLocaleString("en-US")} entries at once`,
            );
            return;
          } else {
            openTotal += 1;
          }
          const frame: Frame = {
            dir,
            relative,
            depth,
            pending: [],
            next: 0,
            stream: ended ? undefined : listing,
          };
          stack.push(frame);
          for (let i = 0; i < read.length; i++) {
            const entry = read[i]!;
            if (entry.isDirectory()) {
              if (enters(frame, entry)) frame.pending.push(entry);
              continue;
            }
            yield { ...child(frame, entry), kind: kindOf(entry) };
            if (++sinceYield >= ENTRIES_PER_TURN) {
              sinceYield = 0;
              await turn(options.signal);
            }
          }
          const cut = cutShortBy(frame.pending.length);
          if (cut !== undefined) {
            stop(cut);
            return;
          }
          pendingTotal += frame.pending.length;
        }
        continue;
      }
      const frame = stack.at(-1);
      if (frame === undefined) return;
      if (frame.next < frame.pending.length) {
        // The next subdirectory already read: released as it is entered.
        const entry = frame.pending[frame.next]!;
        frame.pending[frame.next] = undefined as unknown as Dirent;
        frame.next += 1;
        pendingTotal -= 1;
        const { path, relative } = child(frame, entry);
        next = { dir: path, relative, depth: frame.depth + 1 };
        continue;
      }
      if (frame.stream !== undefined) {
        // A directory too large to sort: its next entry, read now.
        let entry: Dirent | null;
        try {
          entry = await frame.stream.read();
        } catch {
          entry = null;
        }
        if (entry !== null) {
          if (entry.isDirectory()) {
            if (enters(frame, entry)) {
              const { path, relative } = child(frame, entry);
              next = { dir: path, relative, depth: frame.depth + 1 };
            }
            continue;
          }
          yield { ...child(frame, entry), kind: kindOf(entry) };
          // A consumer that needs no I/O per entry (Glob's name match) would otherwise run through a
          // directory of a million names in one turn of the event loop: seconds without a presence beat.
          if (++sinceYield >= ENTRIES_PER_TURN) {
            sinceYield = 0;
            await turn(options.signal);
          }
          continue;
        }
        await frame.stream.close().catch(() => {});
        frame.stream = undefined;
        openTotal -= 1;
      }
      stack.pop();
    }
  } finally {
    // Aborted, stopped or returned early by the consumer: close what is still open.
    for (const frame of stack) await frame.stream?.close().catch(() => {});
  }
}

const kindOf = (entry: Dirent): WalkEntry["kind"] =>
  entry.isFile() ? "file" : entry.isSymbolicLink() ? "symlink" : "other";

async function turn(signal: AbortSignal): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  signal.throwIfAborted();
}

/**
 * `dir`, opened for listing, or undefined when it cannot be. The directory is opened with O_NOFOLLOW
 * and listed through its descriptor, which must still be at `dir`: another run's command can swap a
 * directory the walk saw for a symlink to one outside the workspace before it is opened, and
 * `opendir` by name follows it.
 */
async function openListing(dir: string, onSwapped: (() => void) | undefined): Promise<Dir | undefined> {
  let descriptor: Awaited<ReturnType<typeof open>> | undefined;
  try {
    descriptor = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    const fdPath = `/proc/self/fd/${descriptor.fd}`;
    if ((await readlink(fdPath)) !== dir) {
      onSwapped?.();
      return undefined;
    }
    // The listing opens the descriptor's directory, not a name: it stays the checked one.
    return await opendir(fdPath, { bufferSize: DIR_BUFFER });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ELOOP") onSwapped?.();
    return undefined;
  } finally {
    await descriptor?.close();
  }
}
