// Per-run git worktree isolation: a run with `isolation.worktree` works in a checkout of its own on
// branch `forkd/<run_id>`, so parallel forks never touch each other's files (or the shared checkout),
// and what it changed comes back as one commit on that branch.
import { execFile } from "node:child_process";
import { rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { isAbsolute, join, relative, sep } from "node:path";
import { isValidRunId } from "@forkd/protocol";
import { DaemonError } from "../errors.js";
import type { PathAlias } from "./context.js";
import { GIT_COMMAND_SCOPE_OVERRIDES } from "./git-safety.js";
import { secretsOf } from "./secrets.js";

/** Prefix of every run's branch: `forkd/<run_id>`. */
export const WORKTREE_BRANCH_PREFIX = "forkd/";

/** Identity of the commits {@link RunWorktree.commitChanges} makes. */
export interface CommitAuthor {
  name: string;
  email: string;
}

/** Options of {@link createRunWorktree}. */
export interface CreateRunWorktreeOptions {
  /** A directory inside the repository to branch from (the daemon's checkout). */
  repoDir: string;
  /** Names the branch (`forkd/<runId>`) and the worktree's directory. */
  runId: string;
  /** What the branch starts from. @default "HEAD" */
  baseRef?: string | undefined;
  /** Where worktrees are created, one directory per run. @default `<os tmpdir>/forkd-worktrees` */
  worktreesDir?: string;
  /** @default { name: "forkd", email: "forkd@localhost" } */
  author?: CommitAuthor;
  signal?: AbortSignal;
}

/** The commit {@link RunWorktree.commitChanges} made. */
export interface WorktreeCommit {
  sha: string;
  branch: string;
  /** Paths relative to the worktree's root, as git lists them. */
  files_changed: string[];
}

/** A parent's working directory and where the same files are in the worktree (core's `WorktreeMapping`). */
export interface WorktreeCwdMapping {
  parentCwd: string;
  worktreePath: string;
}

/** A run's worktree. */
export interface RunWorktree {
  /** Absolute path of the worktree: the run's workspace. */
  path: string;
  /** `forkd/<runId>`. */
  branch: string;
  /** Top-level directory of the repository it was made from. */
  repoDir: string;
  /**
   * The repository's git directory (objects, refs, this worktree's admin files), which git in the
   * worktree reads and writes: what a sandboxed command needs of the repository, and no more.
   */
  commonDir: string;
  /** The commit the branch started from (for a resumed run: `baseRef` as it resolves now). */
  baseSha: string;
  /** True when the branch or the worktree already existed (a run resumed after a crash keeps its work). */
  resumed: boolean;
  /** Maps paths in the repository's checkout to the worktree, for the dispatcher's `pathAliases`. */
  pathAlias: PathAlias;
  /**
   * The worktree notice's mapping: the parent's cwd and the matching directory of the worktree.
   * @param parentCwd - The parent's working directory, as its conversation writes paths.
   * @param relativeCwd - That directory relative to the repository's root (e.g. the spec's `isolation.cwd`). @default ""
   */
  mapping(parentCwd: string, relativeCwd?: string): WorktreeCwdMapping;
  /** Stages everything and commits it; `null` when nothing changed. */
  commitChanges(message: string, options?: { signal?: AbortSignal }): Promise<WorktreeCommit | null>;
  /** Removes the worktree's directory; the branch (with its commit) stays unless `deleteBranch`. Idempotent. */
  remove(options?: { deleteBranch?: boolean; signal?: AbortSignal }): Promise<void>;
}

/** Which step of worktree handling failed. */
export type WorktreeOperation = "validate" | "create" | "commit" | "remove";

/** A git worktree operation failed. */
export class WorktreeError extends DaemonError {
  readonly operation: WorktreeOperation;
  /** git's stderr, when git ran. */
  readonly stderr: string | undefined;

  constructor(
    operation: WorktreeOperation,
    message: string,
    options: { stderr?: string; cause?: unknown } = {},
  ) {
    super("worktree_failed", message, { retryable: false, cause: options.cause });
    this.operation = operation;
    this.stderr = options.stderr;
  }
}

const DEFAULT_AUTHOR: CommitAuthor = { name: "forkd", email: "forkd@localhost" };
const MAX_GIT_OUTPUT_BYTES = 64 * 1024 * 1024;

/**
 * Creates (or, for a resumed run, reopens) the worktree of `runId`: branch `forkd/<runId>` from
 * `baseRef`, checked out at `<worktreesDir>/<runId>`.
 */
export async function createRunWorktree(options: CreateRunWorktreeOptions): Promise<RunWorktree> {
  const { runId, signal } = options;
  if (!isValidRunId(runId)) {
    throw new WorktreeError(
      "validate",
      `run id ${JSON.stringify(runId)} cannot name a branch and a directory`,
    );
  }
  const author = options.author ?? DEFAULT_AUTHOR;
  const branch = `${WORKTREE_BRANCH_PREFIX}${runId}`;
  const repoDir = (await git("create", options.repoDir, ["rev-parse", "--show-toplevel"], signal)).trim();
  const baseRef = options.baseRef ?? "HEAD";
  const baseSha = await git(
    "create",
    repoDir,
    ["rev-parse", "--verify", "--quiet", `${baseRef}^{commit}`],
    signal,
  )
    .then((out) => out.trim())
    .catch((error: unknown) => {
      if (signal?.aborted) throw error;
      throw new WorktreeError("create", `base ref ${JSON.stringify(baseRef)} is not a commit in ${repoDir}`, {
        cause: error,
      });
    });
  const path = join(options.worktreesDir ?? join(tmpdir(), "forkd-worktrees"), runId);

  await git("create", repoDir, ["worktree", "prune"], signal);
  const existing = (await listWorktrees(repoDir, signal)).find((w) => w.branch === `refs/heads/${branch}`);
  const commonDir = (
    await git("create", repoDir, ["rev-parse", "--path-format=absolute", "--git-common-dir"], signal)
  ).trim();
  if (existing !== undefined && (await isDirectory(existing.path))) {
    const pinned = await pinGitDir(existing.path, commonDir, signal);
    return handle({ path: existing.path, branch, repoDir, baseSha, resumed: true, author, pinned });
  }
  // A directory left by a crash between mkdir and registration would make `worktree add` fail.
  if (await isDirectory(path)) await rm(path, { recursive: true, force: true });
  const resumed = await branchExists(repoDir, branch, signal);
  const add = resumed ? [path, branch] : ["-b", branch, path, baseSha];
  await git("create", repoDir, ["worktree", "add", "--quiet", ...add], signal);
  const pinned = await pinGitDir(path, commonDir, signal);
  return handle({ path, branch, repoDir, baseSha, resumed, author, pinned });
}

/**
 * The worktree's git directory, which must be one of the repository's (`<common>/worktrees/<name>`):
 * anything else means its `.git` file was rewritten, and the daemon's git must not follow it.
 */
async function pinGitDir(
  workTree: string,
  commonDir: string,
  signal: AbortSignal | undefined,
): Promise<PinnedGitDir> {
  const gitDir = (
    await git("create", workTree, ["rev-parse", "--path-format=absolute", "--git-dir"], signal)
  ).trim();
  if (!gitDir.startsWith(join(commonDir, "worktrees") + sep)) {
    throw new WorktreeError(
      "create",
      `the worktree ${workTree} points at ${gitDir}, which is not a worktree of ${commonDir}: its .git file was rewritten`,
    );
  }
  return { gitDir, commonDir, workTree };
}

function handle(w: {
  path: string;
  branch: string;
  repoDir: string;
  baseSha: string;
  resumed: boolean;
  author: CommitAuthor;
  pinned: PinnedGitDir;
}): RunWorktree {
  return {
    path: w.path,
    branch: w.branch,
    repoDir: w.repoDir,
    commonDir: w.pinned.commonDir,
    baseSha: w.baseSha,
    resumed: w.resumed,
    pathAlias: { from: w.repoDir, to: w.path },
    mapping(parentCwd, relativeCwd = "") {
      if (isAbsolute(relativeCwd) || relative(w.path, join(w.path, relativeCwd)).startsWith("..")) {
        throw new WorktreeError(
          "validate",
          `cwd ${JSON.stringify(relativeCwd)} is not inside the repository`,
        );
      }
      return { parentCwd, worktreePath: join(w.path, relativeCwd) };
    },
    async commitChanges(message, options = {}) {
      const { signal } = options;
      await git("commit", w.path, ["add", "--all"], signal, w.pinned);
      const staged = await git(
        "commit",
        w.path,
        ["diff", "--cached", "--name-only", "--no-renames", "-z"],
        signal,
        w.pinned,
      );
      const files = staged.split("\0").filter((f) => f !== "");
      if (files.length === 0) return null;
      const identity = ["-c", `user.name=${w.author.name}`, "-c", `user.email=${w.author.email}`];
      const commit = ["-c", "commit.gpgsign=false", "commit", "--quiet", "--no-verify", "-m", message];
      await git("commit", w.path, [...identity, ...commit], signal, w.pinned);
      const sha = (await git("commit", w.path, ["rev-parse", "HEAD"], signal, w.pinned)).trim();
      return { sha, branch: w.branch, files_changed: files };
    },
    async remove(options = {}) {
      const { signal } = options;
      try {
        await git("remove", w.repoDir, ["worktree", "remove", "--force", w.path], signal);
      } catch (error) {
        if (signal?.aborted) throw error;
        // Not (or no longer) a registered worktree: delete what is left and forget it.
        await rm(w.path, { recursive: true, force: true });
        await git("remove", w.repoDir, ["worktree", "prune"], signal);
      }
      if (options.deleteBranch === true && (await branchExists(w.repoDir, w.branch, signal))) {
        await git("remove", w.repoDir, ["branch", "--quiet", "-D", w.branch], signal);
      }
    },
  };
}

async function listWorktrees(repoDir: string, signal: AbortSignal | undefined) {
  const out = await git("create", repoDir, ["worktree", "list", "--porcelain"], signal);
  const worktrees: { path: string; branch?: string }[] = [];
  for (const block of out.split("\n\n")) {
    const path = /^worktree (.+)$/m.exec(block)?.[1];
    if (path === undefined) continue;
    const branch = /^branch (.+)$/m.exec(block)?.[1];
    worktrees.push(branch === undefined ? { path } : { path, branch });
  }
  return worktrees;
}

async function branchExists(
  repoDir: string,
  branch: string,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  return git("create", repoDir, ["show-ref", "--verify", "--quiet", `refs/heads/${branch}`], signal).then(
    () => true,
    (error: unknown) => {
      if (signal?.aborted) throw error;
      return false;
    },
  );
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (info) => info.isDirectory(),
    () => false,
  );
}

/**
 * git's environment: the daemon's, minus `GIT_*` variables that would point it at another
 * repository and minus its secrets (a filter driver git runs must not read them), plus the
 * command-scope overrides that turn off hooks and the file-system monitor whatever a config says.
 * `pinned` names the repository explicitly (see {@link PinnedGitDir}).
 */
function gitEnv(pinned?: PinnedGitDir): NodeJS.ProcessEnv {
  const secrets = new Set(secretsOf(process.env).map((secret) => secret.name));
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("GIT_") && !secrets.has(name)) env[name] = value;
  }
  env.GIT_TERMINAL_PROMPT = "0";
  Object.assign(env, GIT_COMMAND_SCOPE_OVERRIDES);
  if (pinned !== undefined) {
    env.GIT_DIR = pinned.gitDir;
    env.GIT_COMMON_DIR = pinned.commonDir;
    env.GIT_WORK_TREE = pinned.workTree;
  }
  return env;
}

/**
 * Where a worktree's repository is, found before the model had the worktree: the daemon's own git
 * commands on it name these explicitly, so a `.git` file or a `commondir` the model rewrote under
 * the `full` policy cannot point them at a repository (and config) of the model's making.
 */
interface PinnedGitDir {
  gitDir: string;
  commonDir: string;
  workTree: string;
}

/** Runs git in `cwd`; rejects with a {@link WorktreeError} carrying git's stderr. */
function git(
  operation: WorktreeOperation,
  cwd: string,
  args: string[],
  signal: AbortSignal | undefined,
  pinned?: PinnedGitDir,
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      args,
      {
        cwd,
        env: gitEnv(pinned),
        maxBuffer: MAX_GIT_OUTPUT_BYTES,
        encoding: "utf8",
        ...(signal ? { signal } : {}),
      },
      (error, stdout, stderr) => {
        if (error === null) {
          resolve(stdout);
          return;
        }
        const detail = stderr.trim() === "" ? error.message : stderr.trim();
        reject(
          new WorktreeError(operation, `git ${args.join(" ")} failed in ${cwd}: ${detail}`, {
            stderr,
            cause: error,
          }),
        );
      },
    );
  });
}
