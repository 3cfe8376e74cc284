// The walk's guards against a hostile tree: a directory of a million names must neither hold the
// event loop (it lets it turn every 1,024 entries), nor be sorted in one go (past 50,000 names it
// keeps the file system's order), nor be held in memory (it is read as it is walked), and the
// directories a walk holds to enter later are capped. Each at its exact boundary.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_OPEN_DIRS, MAX_PENDING_DIRS, MAX_SORTED_ENTRIES, type WalkOptions, walkFiles } from "./walk.js";

// The heap is measured after a full collection, so what it holds is what the walk keeps alive.
setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

let root: string | undefined;
afterEach(() => {
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** A directory of `count` empty files named `f-00000`…, created in descending name order. */
function directoryOf(count: number): string {
  root = mkdtempSync(join(tmpdir(), "forkd-walk-"));
  // Descending: a file system that lists in creation order (btrfs, a recent tmpfs) then lists them
  // unsorted too, so a walk that skipped the sort could not pass for one that sorted.
  for (let i = count - 1; i >= 0; i--) writeFileSync(join(root, name(i)), "");
  return root;
}

const name = (i: number) => `f-${String(i).padStart(5, "0")}`;
const walkOptions = (): WalkOptions => ({
  signal: new AbortController().signal,
  skipDirs: new Set<string>(),
});

async function namesOf(dir: string, options: Partial<WalkOptions> = {}): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of walkFiles(dir, { ...walkOptions(), ...options })) names.push(entry.relative);
  return names;
}

/** The names a walk yields and the reasons it gave for stopping early. */
async function walkWith(dir: string, limits: NonNullable<WalkOptions["limits"]>) {
  const stops: string[] = [];
  const names = await namesOf(dir, { limits, onStopped: (reason) => stops.push(reason) });
  return { names, stops };
}

/** Makes each of `paths` under `root`: a trailing `/` a directory, else an empty file. */
function tree(paths: string[]): string {
  root = mkdtempSync(join(tmpdir(), "forkd-walk-"));
  for (const path of paths) {
    if (path.endsWith("/")) mkdirSync(join(root, path), { recursive: true });
    else writeFileSync(join(root, path), "");
  }
  return root;
}

/** Counts event-loop turns (check phases) from now until `stop()`. */
function turnCounter() {
  let turns = 0;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    turns += 1;
    setImmediate(tick);
  };
  setImmediate(tick);
  return {
    get turns() {
      return turns;
    },
    stop: () => {
      stopped = true;
    },
  };
}

describe("walkFiles", () => {
  it("lets the event loop turn after each 1,024 entries, and not before", async () => {
    const dir = directoryOf(1025);
    const counter = turnCounter();
    const turnsAt: number[] = [];
    try {
      // The directory is read (I/O, many turns) before the first entry; the entries then come
      // without I/O, so only the walk's own pauses let the loop turn.
      for await (const _ of walkFiles(dir, walkOptions())) turnsAt.push(counter.turns);
    } finally {
      counter.stop();
    }
    expect(turnsAt).toHaveLength(1025);
    expect(turnsAt[1023]).toBe(turnsAt[0]);
    expect(turnsAt[1024]).toBeGreaterThan(turnsAt[1023]!);
  });

  it("stops with the signal's reason at its next pause", async () => {
    const dir = directoryOf(2048);
    const controller = new AbortController();
    const seen: string[] = [];
    const walk = (async () => {
      for await (const entry of walkFiles(dir, { ...walkOptions(), signal: controller.signal })) {
        seen.push(entry.relative);
        // Aborted while the walk runs through its first 1,024 entries, without a turn of the loop.
        if (seen.length === 10) controller.abort(new Error("stop walking"));
      }
    })();
    await expect(walk).rejects.toThrow("stop walking");
    expect(seen).toHaveLength(1024);
  });

  it(`sorts a directory of ${MAX_SORTED_ENTRIES} entries by name, and keeps the file system's order past that`, async () => {
    const dir = directoryOf(MAX_SORTED_ENTRIES);
    const sorted = Array.from({ length: MAX_SORTED_ENTRIES }, (_, i) => name(i));
    expect(await namesOf(dir)).toEqual(sorted);

    writeFileSync(join(dir, name(MAX_SORTED_ENTRIES)), "");
    const listed = await namesOf(dir);
    expect(listed).toHaveLength(MAX_SORTED_ENTRIES + 1);
    expect([...listed].sort()).toEqual([...sorted, name(MAX_SORTED_ENTRIES)]);
    expect(listed).not.toEqual([...sorted, name(MAX_SORTED_ENTRIES)]);
  }, 60_000);

  it("holds no more of a directory than the entries it reads before it streams, however large", async () => {
    // The bound, scaled down through the test-only limit so that the directory is small enough to make
    // at once: 10,000 names against 500 sorted. With the limit at or above the count the walk holds
    // every name, as the read-everything walk did (about 90 bytes a name: 0.9 MB here, 18.2 MB for
    // 200,000 names with the real limit); streamed, it holds the first 501 and then its place.
    const count = 10_000;
    const maxSortedEntries = 500;
    root = mkdtempSync(join(tmpdir(), "forkd-walk-"));
    // touch, many names per process: far faster than a file at a time from here.
    execFileSync("sh", ["-c", `seq -f 'f-%06g' 0 ${count - 1} | xargs touch`], { cwd: root });
    // Which names were seen, allocated before the heap is first measured: a Set of the names would
    // grow with them and hide the walk's own growth.
    const seen = new Uint8Array(count);
    let yielded = 0;
    collectGarbage();
    const before = process.memoryUsage().heapUsed;
    const growth: number[] = [];
    for await (const entry of walkFiles(root, { ...walkOptions(), limits: { maxSortedEntries } })) {
      seen[Number(entry.relative.slice(2))]! += 1;
      // Sampled by the walk's progress, after a full collection: not by a timer's luck.
      if (++yielded % 2_000 === 0) {
        collectGarbage();
        growth.push(process.memoryUsage().heapUsed - before);
      }
    }
    expect(yielded).toBe(count);
    expect(seen.every((times) => times === 1)).toBe(true);
    const mb = growth.map((g) => (g / 1e6).toFixed(2)).join(" ");
    // Past the first 2,000 names, the walk holds none of those it yielded.
    expect(Math.max(...growth.slice(1)), `heap growth (MB) every 2,000 names: ${mb}`).toBeLessThan(0.4e6);
  }, 60_000);

  it(`stops before holding more than ${MAX_PENDING_DIRS} directories to enter, summed over the directories it is in, and says so`, async () => {
    // a/ is entered first, while b/ waits: 1 + a's 2 = 3 held at once.
    const dir = tree(["top.txt", "a/", "a/x/", "a/x/f", "a/y/", "a/y/f", "b/", "b/f"]);
    const all = ["top.txt", "a/x/f", "a/y/f", "b/f"];
    expect(await walkWith(dir, { maxPendingDirs: 3 })).toEqual({ names: all, stops: [] });
    const stopped = await walkWith(dir, { maxPendingDirs: 2 });
    expect(stopped.names).toEqual(["top.txt"]);
    expect(stopped.stops).toEqual([
      "the walk stopped early: it would hold more than 2 directories still to search",
    ]);
    expect(await walkWith(dir, {})).toEqual({ names: all, stops: [] });
  });

  it(`streams at most ${MAX_OPEN_DIRS} nested directories too large to sort, and says when it would open more`, async () => {
    // With 2 entries sortable, big/ (3 entries) and big/inner/ (3) are each streamed, held open.
    const dir = tree(["big/", "big/inner/", "big/inner/1", "big/inner/2", "big/inner/3", "big/a", "big/b"]);
    const all = ["big/inner/1", "big/inner/2", "big/inner/3", "big/a", "big/b"];
    const sortedAsSet = (names: string[]) => [...names].sort();
    const fits = await walkWith(dir, { maxSortedEntries: 2, maxOpenDirs: 2 });
    expect(fits.stops).toEqual([]);
    expect(sortedAsSet(fits.names)).toEqual(sortedAsSet(all));
    const stopped = await walkWith(dir, { maxSortedEntries: 2, maxOpenDirs: 1 });
    expect(stopped.stops).toEqual([
      "the walk stopped early: it would be inside more than 1 directories of over 2 entries at once",
    ]);
    expect(stopped.names.every((name) => !name.startsWith("big/inner/"))).toBe(true);
  });

  it("walks every file of a streamed directory once, its subdirectories read before and after it streams", async () => {
    const paths = ["d1/", "d1/f", "f1", "f2", "d2/", "d2/f", "f3", "d3/", "d3/g/", "d3/g/f", "f4", "f5"];
    const dir = tree(paths);
    const files = paths.filter((path) => !path.endsWith("/")).sort();
    for (const maxSortedEntries of [1, 2, 4, 8]) {
      const { names, stops } = await walkWith(dir, { maxSortedEntries });
      expect(stops).toEqual([]);
      expect([...names].sort()).toEqual(files);
      // Skipped and too-deep directories are not entered, whether read before streaming or met in
      // it (with 1 sortable, 2 of the root's 8 entries are read first: one of d1-d3 is streamed).
      const topFiles = ["f1", "f2", "f3", "f4", "f5"];
      const skipping = await namesOf(dir, {
        limits: { maxSortedEntries },
        skipDirs: new Set(["d1", "d2", "d3"]),
      });
      expect(skipping.sort()).toEqual(topFiles);
      expect((await namesOf(dir, { limits: { maxSortedEntries }, maxDepth: 1 })).sort()).toEqual(topFiles);
    }
  });
});
