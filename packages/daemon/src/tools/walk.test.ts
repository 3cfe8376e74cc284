// The walk's guards against a hostile tree: a directory of a million names must neither hold the
// event loop (it lets it turn every 1,024 entries) nor be sorted in one go (past 50,000 names it
// keeps the file system's order). Both at their exact boundaries.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_SORTED_ENTRIES, walkFiles } from "./walk.js";

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
const walkOptions = () => ({ signal: new AbortController().signal, skipDirs: new Set<string>() });

async function namesOf(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of walkFiles(dir, walkOptions())) names.push(entry.relative);
  return names;
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
});
