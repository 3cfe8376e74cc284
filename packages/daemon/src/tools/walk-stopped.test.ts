// Glob's and Grep's answers say when a walk's limit stopped it, and keep what it found before. The
// limits (100,000 directories to enter, 16 streamed directories) are lowered here through the
// walk's test-only option: their boundaries are tested in walk.test.ts.
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createBuiltinToolDispatcher } from "./dispatcher.js";

vi.mock("./walk.js", async (importOriginal) => {
  const walk = await importOriginal<typeof import("./walk.js")>();
  return {
    ...walk,
    walkFiles: (root: string, options: Parameters<typeof walk.walkFiles>[1]) =>
      walk.walkFiles(root, { ...options, limits: { maxPendingDirs: 1 } }),
  };
});

let ws: string;
beforeEach(async () => {
  ws = await realpath(await mkdtemp(join(tmpdir(), "forkd-walk-stopped-")));
  // The root's two subdirectories would be held at once: over the lowered limit of 1.
  await writeFile(join(ws, "top.txt"), "needle\n");
  for (const sub of ["a", "b"]) {
    await mkdir(join(ws, sub));
    await writeFile(join(ws, sub, "f.txt"), "needle\n");
  }
});
afterEach(async () => {
  await rm(ws, { recursive: true, force: true });
});

async function run(name: string, input: unknown): Promise<string> {
  const outcome = await createBuiltinToolDispatcher({ workspace: ws, bashPolicy: "full" }).execute(
    { id: "toolu_1", name, input },
    { runId: "run-1", turn: 1, cwd: ws, signal: new AbortController().signal },
  );
  expect(outcome.isError, outcome.content).toBe(false);
  return outcome.content;
}

const reason = "the walk stopped early: it would hold more than 1 directories still to search";

describe("a walk stopped by its limit", () => {
  it("Glob lists what it found and says why the rest was not searched", async () => {
    expect(await run("Glob", { pattern: "**/*.txt" })).toBe(
      `${join(ws, "top.txt")}\n(${reason}; the rest was not searched: use a more specific path or pattern)`,
    );
  });

  it("Grep lists what it found and says why the rest was not searched", async () => {
    expect(await run("Grep", { pattern: "needle" })).toBe(
      `Found 1 file\n${join(ws, "top.txt")}\n(${reason}; the rest was not searched: narrow the search with path or glob)`,
    );
  });
});
