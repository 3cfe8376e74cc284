// Worktree isolation on real git repositories made with `git init` in temporary directories.
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBuiltinToolDispatcher } from "./dispatcher.js";
import { createRunWorktree, WorktreeError } from "./worktree.js";

let root: string;
let repo: string;
let worktrees: string;

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=Test", "-c", "user.email=test@example.com", ...args], {
    cwd,
    encoding: "utf8",
  }).trim();
}

beforeEach(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), "forkd-worktree-")));
  repo = join(root, "repo");
  worktrees = join(root, "worktrees");
  await mkdir(join(repo, "src"), { recursive: true });
  git(repo, "init", "--quiet", "--initial-branch=main");
  await writeFile(join(repo, "src/app.ts"), "export const v = 1;\n");
  git(repo, "add", "--all");
  git(repo, "commit", "--quiet", "-m", "initial");
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("createRunWorktree", () => {
  it("creates a worktree on forkd/<runId>, commits its changes, and removes it keeping the branch", async () => {
    const head = git(repo, "rev-parse", "HEAD");
    const wt = await createRunWorktree({
      repoDir: join(repo, "src"),
      runId: "run-abc",
      baseRef: "HEAD",
      worktreesDir: worktrees,
    });
    expect(wt.path).toBe(join(worktrees, "run-abc"));
    expect(wt.branch).toBe("forkd/run-abc");
    expect(wt.repoDir).toBe(repo);
    expect(wt.baseSha).toBe(head);
    expect(wt.resumed).toBe(false);
    expect(await readFile(join(wt.path, "src/app.ts"), "utf8")).toBe("export const v = 1;\n");
    expect(git(wt.path, "branch", "--show-current")).toBe("forkd/run-abc");

    expect(await wt.commitChanges("nothing yet")).toBeNull();

    await writeFile(join(wt.path, "src/app.ts"), "export const v = 2;\n");
    await writeFile(join(wt.path, "NEW.md"), "new\n");
    const commit = await wt.commitChanges("fork run-abc: bump v");
    expect(commit).not.toBeNull();
    expect(commit!.sha).toMatch(/^[0-9a-f]{40}$/);
    expect(commit!.branch).toBe("forkd/run-abc");
    expect(commit!.files_changed.sort()).toEqual(["NEW.md", "src/app.ts"]);
    expect(git(repo, "rev-parse", "forkd/run-abc")).toBe(commit!.sha);
    expect(git(repo, "log", "-1", "--format=%an <%ae> %s", "forkd/run-abc")).toBe(
      "forkd <forkd@localhost> fork run-abc: bump v",
    );
    // The parent's checkout is untouched.
    expect(await readFile(join(repo, "src/app.ts"), "utf8")).toBe("export const v = 1;\n");
    expect(git(repo, "status", "--porcelain")).toBe("");

    await wt.remove();
    await expect(stat(wt.path)).rejects.toThrow();
    expect(git(repo, "worktree", "list", "--porcelain")).not.toContain("run-abc");
    expect(git(repo, "rev-parse", "forkd/run-abc")).toBe(commit!.sha);
    await wt.remove(); // idempotent
    await wt.remove({ deleteBranch: true });
    expect(git(repo, "branch", "--list", "forkd/run-abc")).toBe("");
  });

  it("reopens the worktree of a resumed run, keeping its work", async () => {
    const first = await createRunWorktree({ repoDir: repo, runId: "run-r", worktreesDir: worktrees });
    await writeFile(join(first.path, "wip.txt"), "work in progress\n");
    const again = await createRunWorktree({ repoDir: repo, runId: "run-r", worktreesDir: worktrees });
    expect(again.resumed).toBe(true);
    expect(again.path).toBe(first.path);
    expect(await readFile(join(again.path, "wip.txt"), "utf8")).toBe("work in progress\n");

    // The directory is gone (another machine, a cleaned tmp) but the branch has the committed work.
    await first.commitChanges("wip");
    await rm(first.path, { recursive: true, force: true });
    const third = await createRunWorktree({ repoDir: repo, runId: "run-r", worktreesDir: worktrees });
    expect(third.resumed).toBe(true);
    expect(await readFile(join(third.path, "wip.txt"), "utf8")).toBe("work in progress\n");
    await third.remove({ deleteBranch: true });
  });

  it("maps the parent's paths into the worktree for the notice and the dispatcher", async () => {
    const wt = await createRunWorktree({ repoDir: repo, runId: "run-map", worktreesDir: worktrees });
    expect(wt.mapping("/home/alice/project/src", "src")).toEqual({
      parentCwd: "/home/alice/project/src",
      worktreePath: join(wt.path, "src"),
    });
    expect(() => wt.mapping("/x", "../escape")).toThrow(WorktreeError);

    // A path into the shared checkout, copied from the conversation, lands in the worktree.
    const tools = createBuiltinToolDispatcher({
      workspace: wt.path,
      bashPolicy: "full",
      pathAliases: [wt.pathAlias],
    });
    const ctx = { runId: "run-map", turn: 1, cwd: wt.path, signal: new AbortController().signal };
    const out = await tools.execute(
      { id: "toolu_1", name: "Write", input: { file_path: join(repo, "src/new.ts"), content: "x\n" } },
      ctx,
    );
    expect(out.isError, out.content).toBe(false);
    expect(await readFile(join(wt.path, "src/new.ts"), "utf8")).toBe("x\n");
    await expect(stat(join(repo, "src/new.ts"))).rejects.toThrow();
    await wt.remove({ deleteBranch: true });
  });

  it("refuses a run id that cannot name a branch, a bad base ref, and a directory outside any repository", async () => {
    await expect(
      createRunWorktree({ repoDir: repo, runId: "../x", worktreesDir: worktrees }),
    ).rejects.toThrow(WorktreeError);
    await expect(
      createRunWorktree({ repoDir: repo, runId: "run-x", baseRef: "no-such-ref", worktreesDir: worktrees }),
    ).rejects.toThrow(/base ref "no-such-ref" is not a commit/);
    await mkdir(join(root, "plain"));
    await expect(
      createRunWorktree({ repoDir: join(root, "plain"), runId: "run-y", worktreesDir: worktrees }),
    ).rejects.toThrow(/not a git repository/);
  });
});
