// A hostile model against git and Grep (#11 findings 4 and 7): it may not write git's internals,
// a bare repository it plants is not used, and no pattern can freeze the daemon's event loop.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBuiltinToolDispatcher, probeSandbox, type Sandbox } from "@forkd/daemon";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const workspace = mkdtempSync(join(tmpdir(), "forkd-tool-git-"));
let sandbox: Sandbox;
beforeAll(() => {
  const probed = probeSandbox();
  if (typeof probed === "string") throw new Error(`these tests need bubblewrap: ${probed}`);
  sandbox = probed;
});
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

const tools = () => createBuiltinToolDispatcher({ workspace, bashPolicy: "read-only", sandbox, secrets: [] });
const call = (name: string, input: Record<string, unknown>) =>
  tools().execute(
    { id: "toolu_1", name, input },
    { runId: "run-1", turn: 1, cwd: workspace, signal: new AbortController().signal },
  );

describe("git's internals", () => {
  it.each([
    ".git/config",
    ".git/hooks/pre-commit",
    "sub/.git/config",
    ".GIT/config",
    "a/../.git/info/attributes",
  ])("are not writable with Write or Edit: %s", async (relative) => {
    const write = await call("Write", {
      file_path: join(workspace, relative),
      content: "[diff]\n\texternal = touch pwned\n",
    });
    expect(write.isError).toBe(true);
    expect(write.content).toMatch(/inside \.git/);
    const edit = await call("Edit", {
      file_path: join(workspace, relative),
      old_string: "a",
      new_string: "b",
    });
    expect(edit.content).toMatch(/inside \.git/);
  });

  it("a bare repository planted in the workspace is not used by git", async () => {
    for (const [file, content] of [
      ["HEAD", "ref: refs/heads/main\n"],
      ["config", "[core]\n\tbare = true\n[diff]\n\texternal = touch pwned\n"],
      ["objects/.keep", ""],
      ["refs/heads/.keep", ""],
    ] as const) {
      expect((await call("Write", { file_path: join(workspace, file), content })).isError).toBe(false);
    }
    const out = await call("Bash", { command: "git log" });
    expect(out.content).toMatch(/cannot use bare repository/);
  });
});

describe("git's config under the full policy", () => {
  it("stays read-only in the sandbox, so no Bash command plants what a later git diff runs; commits still work", async () => {
    const repo = join(workspace, "repo");
    mkdirSync(repo);
    execFileSync("git", ["init", "-q", repo]);
    const full = createBuiltinToolDispatcher({ workspace: repo, bashPolicy: "full", sandbox, secrets: [] });
    const bash = (command: string) =>
      full.execute(
        { id: "toolu_g", name: "Bash", input: { command } },
        { runId: "run-1", turn: 1, cwd: repo, signal: new AbortController().signal },
      );
    const planted = await bash(
      "git config diff.external 'touch pwned'; printf '[diff]\\n\\texternal = touch pwned\\n' >> .git/config; " +
        "echo 'touch pwned' > .git/hooks/pre-commit; echo '* diff=x' > .git/info/attributes; echo done",
    );
    expect(planted.content).toMatch(/Read-only file system/);
    expect(readFileSync(join(repo, ".git/config"), "utf8")).not.toContain("pwned");
    expect(existsSync(join(repo, ".git/hooks/pre-commit"))).toBe(false);
    const commit = await bash(
      "echo committed > f && git add f && git -c user.name=t -c user.email=t@example.com commit -qm one && git diff HEAD~0 && git log --oneline",
    );
    expect(commit.content).toMatch(/one\nExit code: 0$/);
    expect(existsSync(join(repo, "pwned"))).toBe(false);
  });
});

describe("git's hooks and info under the full policy, in a repository made without them", () => {
  it("stay unplantable: a hook written where none was would run on the next commit outside the sandbox", async () => {
    // Repositories made by other tools (or with an empty template) have no .git/hooks or .git/info:
    // what is missing when the sandbox starts could not be mounted read-only.
    const repo = join(workspace, "bare-template");
    mkdirSync(repo);
    execFileSync("git", ["init", "-q", "--template=", repo]);
    expect(existsSync(join(repo, ".git/hooks"))).toBe(false);
    const full = createBuiltinToolDispatcher({ workspace: repo, bashPolicy: "full", sandbox, secrets: [] });
    const planted = await full.execute(
      {
        id: "toolu_h",
        name: "Bash",
        input: {
          command:
            "mkdir -p .git/hooks .git/info; printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit; " +
            "chmod +x .git/hooks/pre-commit; echo '* diff=x' > .git/info/attributes; echo done",
        },
      },
      { runId: "run-1", turn: 1, cwd: repo, signal: new AbortController().signal },
    );
    expect(planted.content).toMatch(/Read-only file system/);
    expect(existsSync(join(repo, ".git/hooks/pre-commit"))).toBe(false);
    expect(existsSync(join(repo, ".git/info/attributes"))).toBe(false);
    // The operator's own commit, outside the sandbox, runs no hook of the model's.
    writeFileSync(join(repo, "f"), "f\n");
    execFileSync("git", ["-C", repo, "add", "f"]);
    execFileSync("git", [
      "-C",
      repo,
      "-c",
      "user.name=t",
      "-c",
      "user.email=t@example.com",
      "commit",
      "-qm",
      "x",
    ]);
    expect(existsSync(join(repo, "pwned"))).toBe(false);
  });
});

describe("a submodule's git directory under the full policy", () => {
  it("keeps its config and hooks read-only: the operator's git status in the superproject reads them", async () => {
    const git = (cwd: string, ...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], { cwd });
    const lib = join(workspace, "lib");
    mkdirSync(lib);
    git(lib, "init", "-q");
    writeFileSync(join(lib, "x"), "x\n");
    git(lib, "add", "x");
    git(lib, "commit", "-qm", "lib");
    const superproject = join(workspace, "superproject");
    mkdirSync(superproject);
    git(superproject, "init", "-q");
    git(superproject, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "sub");
    git(superproject, "commit", "-qm", "with sub");
    const marker = join(superproject, "pwned");
    const full = createBuiltinToolDispatcher({
      workspace: superproject,
      bashPolicy: "full",
      sandbox,
      secrets: [],
    });
    const planted = await full.execute(
      {
        id: "toolu_m",
        name: "Bash",
        input: {
          command:
            `printf '[core]\\n\\tfsmonitor = touch ${marker}\\n' >> .git/modules/sub/config; ` +
            `printf '#!/bin/sh\\ntouch ${marker}\\n' > .git/modules/sub/hooks/pre-commit; echo y > sub/x; echo done`,
        },
      },
      { runId: "run-1", turn: 1, cwd: superproject, signal: new AbortController().signal },
    );
    expect(planted.content.match(/Read-only file system/g)).toHaveLength(2);
    expect(readFileSync(join(superproject, ".git/modules/sub/config"), "utf8")).not.toContain("fsmonitor");
    // The operator's git, outside the sandbox, recurses into the submodule.
    git(superproject, "status", "--short");
    expect(existsSync(marker)).toBe(false);
  });
});

describe("Grep", () => {
  it("answers a catastrophic backtracking pattern at once (RE2: linear time)", async () => {
    // With a backtracking engine this is 2^40 steps: the test would hang, not fail quietly.
    writeFileSync(join(workspace, "trap.txt"), `${"a".repeat(40)}!\n`);
    const out = await call("Grep", { pattern: "^(a+)+$", output_mode: "content" });
    expect(out.content).toBe("No matches found");
    const found = await call("Grep", { pattern: "^(a+)+!$", output_mode: "files_with_matches" });
    expect(found.content).toContain("trap.txt");
  });

  it("explains that backreferences and lookaround are not RE2", async () => {
    const out = await call("Grep", { pattern: "(a)\\1" });
    expect(out.isError).toBe(true);
    expect(out.content).toMatch(/RE2 syntax/);
  });
});
