// A hostile model in a worktree run (policy full) against the daemon's own git: after the model had
// the worktree, the daemon commits it with git outside the sandbox. Pointing that git at a repository
// of the model's making (a rewritten .git file or commondir) would run its fsmonitor, hooks or
// filters as the daemon, with the daemon's secrets (#11 finding 4, the daemon's side).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createBuiltinToolDispatcher,
  createDaemonLogger,
  loadDaemonConfig,
  probeSandbox,
  type Sandbox,
} from "@forkd/daemon";
import { createRunWorktree, daemonRunTools } from "@forkd/daemon/internal";
import { type ForkSpec, forkSubjects } from "@forkd/protocol";
import { connect } from "@nats-io/transport-node";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { useNatsServer } from "../harness/nats.js";

const SECRET_VARIABLE = "FORKD_WORKTREE_TEST_TOKEN";
let sandbox: Sandbox;
let root: string;
let repo: string;
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], {
    cwd,
    encoding: "utf8",
  }).trim();

beforeAll(() => {
  const probed = probeSandbox();
  if (typeof probed === "string") throw new Error(`these tests need bubblewrap: ${probed}`);
  sandbox = probed;
});
beforeEach(async () => {
  root = realpathSync(await mkdtemp(join(tmpdir(), "forkd-git-worktree-")));
  repo = join(root, "repo");
  mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  writeFileSync(join(repo, "README.md"), "parent\n");
  git(repo, "add", "README.md");
  git(repo, "commit", "-qm", "initial");
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const makeWorktree = (runId: string) =>
  createRunWorktree({ repoDir: repo, runId, worktreesDir: join(root, "worktrees") });

/** A repository laid out by the model, whose config runs `touch <marker>` in every way git can. */
function plantEvilRepository(dir: string, marker: string): void {
  const command = `touch ${marker}`;
  execFileSync("git", ["init", "-q", "--bare", dir]);
  writeFileSync(
    join(dir, "config"),
    `[core]\n\tbare = false\n\tfsmonitor = ${command}\n\thooksPath = ${dir}/hooks\n[filter "x"]\n\tclean = sh -c '${command}; cat'\n`,
  );
  writeFileSync(join(dir, "hooks", "post-commit"), `#!/bin/sh\n${command}\n`, { mode: 0o755 });
}

describe("the daemon's commit of a worktree", () => {
  it("follows neither a rewritten .git file nor a rewritten commondir, so nothing the model planted runs", async () => {
    const worktree = await makeWorktree("0197a3c0-0000-7000-8000-00000000beef");
    const marker = join(root, "pwned");
    const evil = join(worktree.path, "evil.git");
    plantEvilRepository(evil, marker);
    // What a model without a sandbox could do: point the worktree's .git and its commondir at it.
    writeFileSync(join(worktree.path, ".git"), `gitdir: ${evil}\n`);
    const admin = join(repo, ".git", "worktrees", "0197a3c0-0000-7000-8000-00000000beef");
    writeFileSync(join(admin, "commondir"), `${evil}\n`);
    writeFileSync(join(worktree.path, ".gitattributes"), "* filter=x\n");
    writeFileSync(join(worktree.path, "change.txt"), "the model's change\n");

    const commit = await worktree.commitChanges("the run's work");

    expect(existsSync(marker)).toBe(false);
    expect(commit?.files_changed).toEqual(expect.arrayContaining(["change.txt"]));
    expect(git(repo, "show", `${commit!.sha}:change.txt`)).toBe("the model's change");
  });

  it("hands the daemon's secrets to no program git runs (the operator's filter drivers included)", async () => {
    const envDump = join(root, "filter-env");
    git(repo, "config", "filter.dump.clean", `sh -c 'env > ${envDump}; cat'`);
    const worktree = await makeWorktree("0197a3c0-0000-7000-8000-00000000cafe");
    writeFileSync(join(worktree.path, ".gitattributes"), "*.txt filter=dump\n");
    writeFileSync(join(worktree.path, "a.txt"), "a\n");
    // A secret-named variable of the daemon's environment (named through a constant: set by this test).
    process.env[SECRET_VARIABLE] = "worktree-secret-token-1234";
    try {
      await worktree.commitChanges("with a filter");
    } finally {
      delete process.env[SECRET_VARIABLE];
    }
    expect(readFileSync(envDump, "utf8")).not.toContain("worktree-secret-token-1234");
  });
});

describe("the sandbox of a worktree run (policy full)", () => {
  it("keeps the worktree's .git file and the repository's commondir and gitdir read-only", async () => {
    const worktree = await makeWorktree("0197a3c0-0000-7000-8000-00000000f00d");
    const tools = createBuiltinToolDispatcher({
      workspace: worktree.path,
      bashPolicy: "full",
      sandbox,
      sandboxVisible: [repo],
      secrets: [],
    });
    const admin = join(repo, ".git", "worktrees", "0197a3c0-0000-7000-8000-00000000f00d");
    const out = await tools.execute(
      {
        id: "toolu_w",
        name: "Bash",
        input: {
          command: `echo 'gitdir: /tmp/evil' > .git; echo /tmp/evil > ${admin}/commondir; echo x > ${admin}/gitdir; echo written > ok.txt && git add ok.txt && git -c user.name=t -c user.email=t@example.com commit -qm model && echo committed`,
        },
      },
      { runId: "run-w", turn: 1, cwd: worktree.path, signal: new AbortController().signal },
    );
    expect(out.content.match(/Read-only file system/g)).toHaveLength(3);
    expect(out.content).toContain("committed");
    expect(readFileSync(join(worktree.path, ".git"), "utf8")).not.toContain("evil");
    expect(readFileSync(join(admin, "commondir"), "utf8").trim()).toBe("../..");
  });
});

describe("a worktree run's sandbox, as the daemon makes it (policy full)", () => {
  const nats = useNatsServer();

  it("leaves the shared checkout alone: only the worktree and the repository's git directory are visible", async () => {
    const nc = await connect({ servers: nats().url });
    try {
      const config = loadDaemonConfig({
        env: { FORKD_WORKSPACE: repo, NATS_URL: nats().url, FORKD_BASH_POLICY: "full" },
      });
      const factory = daemonRunTools({
        config,
        nc,
        subjects: forkSubjects("agent"),
        logger: createDaemonLogger({ level: "silent", format: "json", daemonId: "worktree-checkout" }),
        sandbox,
      });
      const runId = "0197a3c0-0000-7000-8000-00000000d00d";
      const spec = { run_id: runId, isolation: { worktree: true } } as ForkSpec;
      const tools = await factory({ spec, signal: new AbortController().signal });
      try {
        const out = await tools.dispatcher.execute(
          {
            id: "toolu_checkout",
            name: "Bash",
            input: {
              command: `echo hostile > ${repo}/README.md; echo planted > ${repo}/planted.txt; echo '[core] fsmonitor = touch /tmp/x' >> ${repo}/.git/config; echo written > ok.txt && git add ok.txt && git -c user.name=t -c user.email=t@example.com commit -qm model && echo committed`,
            },
          },
          { runId, turn: 1, cwd: tools.cwd, signal: new AbortController().signal },
        );
        // The parent's checkout, with whatever uncommitted work it holds, is not the run's to change.
        expect(readFileSync(join(repo, "README.md"), "utf8")).toBe("parent\n");
        expect(existsSync(join(repo, "planted.txt"))).toBe(false);
        // The repository's git directory is visible for git's sake, its config still read-only.
        expect(readFileSync(join(repo, ".git", "config"), "utf8")).not.toContain("fsmonitor");
        // git in the worktree still reads and writes the repository it belongs to.
        expect(out.content).toContain("committed");
        expect(git(repo, "show", `forkd/${runId}:ok.txt`)).toBe("written");
      } finally {
        await tools.worktree?.dispose();
      }
    } finally {
      await nc.close();
    }
  });
});
