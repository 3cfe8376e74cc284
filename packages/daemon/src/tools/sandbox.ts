// The sandbox Bash runs in: bubblewrap, with its own PID, network, IPC and user namespaces, only
// system directories (of /etc only what programs need) and the run's workspace visible (the workspace read-only unless the policy
// lets commands write), its own /proc and /tmp, and an environment built from nothing. A model's
// command that slips past the classifier still cannot reach the network, read the daemon's
// secrets (its environment, its files, its /proc) or outlive the call.
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, readdirSync, statSync } from "node:fs";
import { basename, delimiter, join, resolve } from "node:path";

/** How Bash commands are contained. `bwrap`: bubblewrap; `off`: the operator turned it off. */
export type SandboxMode = "bwrap" | "off";

/** A working sandbox: where bwrap is. */
export interface Sandbox {
  bwrap: string;
  /** Files no command may read even where they are visible: the daemon's credential files. */
  hidden?: readonly string[] | undefined;
}

// Read-only: what programs need to run. Never the daemon's home, its config or /proc of the host.
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64"];
/**
 * What of /etc programs need: users and groups, the dynamic loader, Debian's alternatives, time
 * zone, file magic, locale and terminal data, interpreters' own config. Not the rest: /etc is where
 * operators keep credentials (a NATS password or creds file, TLS keys, npm tokens, shadow).
 */
const ETC_ENTRIES = [
  ...["passwd", "group", "nsswitch.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives"],
  ...["localtime", "timezone", "magic", "magic.mime", "mime.types", "terminfo", "locale.alias"],
  ...["os-release", "debian_version", "inputrc", "perl", "python3"],
];

/** The bwrap binary on `PATH` or in `/usr/bin`, or undefined. */
export function findBwrap(path = process.env.PATH ?? ""): string | undefined {
  for (const dir of [...path.split(delimiter), "/usr/bin", "/bin"]) {
    if (dir === "") continue;
    const candidate = join(dir, "bwrap");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * The sandbox this machine can run, or why there is none: bwrap must exist and be able to create
 * its namespaces here (a container without user namespaces, for one, cannot).
 */
export function probeSandbox(): Sandbox | string {
  const bwrap = findBwrap();
  if (bwrap === undefined) return "bubblewrap (bwrap) is not installed";
  const probe = spawnSync(bwrap, [...namespaceArgs(), ...systemBinds(), "--", "/bin/true"], {
    env: { PATH: "/usr/bin:/bin" },
    encoding: "utf8",
    timeout: 10_000,
  });
  if (probe.status !== 0)
    return `bwrap cannot create its namespaces here: ${(probe.stderr || probe.error?.message || "").trim()}`;
  return { bwrap };
}

function namespaceArgs(): string[] {
  // --unshare-all: own user, IPC, PID, network, UTS and cgroup namespaces (no network at all).
  // --die-with-parent: the sandbox dies with the daemon.
  // No --new-session: the namespace's first process (bwrap's init) must stay in the process group
  // that an abort kills. --die-with-parent alone does not cover it: bwrap arms it only after it has
  // forked that process, so an abort in between (seen under load) left the whole sandbox running.
  // Terminal injection, which --new-session guards against, needs a controlling terminal, and the
  // Bash tool starts bwrap in a session of its own without one.
  return ["--unshare-all", "--die-with-parent"];
}

function systemBinds(): string[] {
  const etc = existsSync("/etc") ? readdirSync("/etc") : [];
  const etcEntries = etc
    .filter((name) => ETC_ENTRIES.includes(name) || /^python3\.[0-9]+$/.test(name))
    .map((name) => `/etc/${name}`);
  return [...SYSTEM_DIRS.filter((dir) => existsSync(dir)), ...etcEntries].flatMap((dir) => [
    "--ro-bind",
    dir,
    dir,
  ]);
}

/**
 * What of a repository's `.git` runs programs or says where git looks: its config
 * (`diff.external`, `core.fsmonitor`, filters, textconv drivers, aliases, includes), hooks,
 * `info/attributes`, each worktree's `commondir`, `gitdir` and `config.worktree`, and a worktree's
 * own `.git` file. Mounted read-only even where the workspace is writable, so that a command under
 * the `full` policy can still commit but cannot plant what a later `git diff` of a read-only run —
 * or the daemon's own commit of a worktree, outside the sandbox — would run or follow.
 */
const GIT_PROGRAM_FILES = ["config", "config.worktree", "hooks", "info"];
const WORKTREE_ADMIN_FILES = ["commondir", "gitdir", "config.worktree"];
/**
 * Those that are directories. One missing when the sandbox starts (a repository made with an empty
 * template has no `hooks` or `info`) is covered by an empty read-only one (bwrap leaves the empty
 * directory it mounted on): left out, a command could make it and plant a hook that the operator's
 * next commit, outside the sandbox, runs. A missing `config.worktree` is read only where the
 * repository's read-only config turns `extensions.worktreeConfig` on.
 */
const GIT_PROGRAM_DIRS = new Set(["hooks", "info"]);

function gitConfigBinds(visible: readonly string[]): string[] {
  const readOnly = (paths: readonly string[]) =>
    paths.flatMap((path) => {
      if (existsSync(path)) return ["--ro-bind", path, path];
      return GIT_PROGRAM_DIRS.has(basename(path)) ? ["--tmpfs", path, "--remount-ro", path] : [];
    });
  return visible.flatMap((dir) => {
    // A visible directory is a checkout (with a `.git`) or, for a worktree run, a repository's git
    // directory itself (with its `HEAD`, `objects` and `refs`: a checkout that merely holds a file
    // named HEAD is no repository, and would get empty `hooks` and `info` mounted into it).
    const gitDir = existsSync(join(dir, ".git"))
      ? join(dir, ".git")
      : ["HEAD", "objects", "refs"].every((name) => existsSync(join(dir, name)))
        ? dir
        : undefined;
    if (gitDir === undefined) return [];
    if (!statSync(gitDir).isDirectory()) return ["--ro-bind", gitDir, gitDir];
    const worktrees = join(gitDir, "worktrees");
    const admins = existsSync(worktrees) ? readdirSync(worktrees).map((name) => join(worktrees, name)) : [];
    const modules = submoduleGitDirs(gitDir);
    return [
      ...readOnly([
        ...[gitDir, ...(modules ?? [])].flatMap((git) => GIT_PROGRAM_FILES.map((name) => join(git, name))),
        ...admins.flatMap((admin) => WORKTREE_ADMIN_FILES.map((name) => join(admin, name))),
      ]),
      // More than a repository has: a command may have made them to swell bwrap's arguments.
      ...(modules === undefined ? ["--ro-bind", join(gitDir, "modules"), join(gitDir, "modules")] : []),
    ];
  });
}

/** How deep below `modules` submodules' git directories are looked for (names may hold `/`). */
const MAX_MODULE_DEPTH = 8;
/** Submodule git directories covered one by one; with more, all of `modules` is read-only. */
const MAX_MODULES = 64;

/**
 * The git directories of a repository's submodules, nested ones included: `modules/<name>`, where
 * a name may hold `/`, each with a `HEAD`. Their config and hooks are read by the operator's git
 * in the superproject (`git status` recurses into submodules and runs a submodule's
 * `core.fsmonitor`), so they are covered like the repository's own. Undefined when there are more
 * than {@link MAX_MODULES} or they nest deeper than {@link MAX_MODULE_DEPTH}.
 */
function submoduleGitDirs(gitDir: string): string[] | undefined {
  const found: string[] = [];
  let tooMany = false;
  const visit = (dir: string, depth: number) => {
    if (tooMany) return;
    let names: string[];
    try {
      names = readdirSync(dir, { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name);
    } catch {
      return;
    }
    if (names.length > 0 && depth >= MAX_MODULE_DEPTH) {
      tooMany = true;
      return;
    }
    for (const name of names) {
      const child = join(dir, name);
      if (!existsSync(join(child, "HEAD"))) {
        visit(child, depth + 1);
        continue;
      }
      found.push(child);
      if (found.length > MAX_MODULES) tooMany = true;
      visit(join(child, "modules"), depth + 1);
    }
  };
  visit(join(gitDir, "modules"), 0);
  return tooMany ? undefined : found;
}

/**
 * Covers each of `files` that the sandbox would show (inside a visible directory): a file by the
 * host's /dev/null (unreadable inside: the sandbox's mounts are nodev), a directory by an empty tmpfs. The daemon's credential files may sit in the workspace
 * or under a system directory.
 */
function hiddenBinds(files: readonly string[], visible: readonly string[]): string[] {
  const shown = (file: string) =>
    [...SYSTEM_DIRS, "/etc", ...visible].some((dir) => file === dir || file.startsWith(`${dir}/`));
  return files
    .map((file) => resolve(file))
    .filter((file) => shown(file) && existsSync(file))
    .flatMap((file) => (statSync(file).isDirectory() ? ["--tmpfs", file] : ["--ro-bind", "/dev/null", file]));
}

/** What {@link sandboxedShell} needs. */
export interface SandboxedShellOptions {
  sandbox: Sandbox;
  /** Directories the command may see: the workspace (and a worktree's repository). */
  visible: readonly string[];
  /** Whether those directories are writable (the `full` policy) or read-only. */
  writable: boolean;
  cwd: string;
  /** The command's whole environment (nothing else of the daemon's reaches it). */
  env: Readonly<Record<string, string>>;
  /** The bash script to run. */
  script: string;
}

/**
 * The program and arguments that run `bash -c script` inside the sandbox, and the environment to
 * start bwrap itself with. bwrap runs as PID 1 of the sandbox's namespace with the environment it
 * was started with, so that environment holds only PATH: `--clearenv` alone would leave the
 * daemon's secrets readable in `/proc/1/environ`.
 */
export function sandboxedShell(options: SandboxedShellOptions): {
  command: string;
  args: string[];
  spawnEnv: Record<string, string>;
} {
  const bind = options.writable ? "--bind" : "--ro-bind";
  const args = [
    ...namespaceArgs(),
    ...systemBinds(),
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
    ...options.visible.flatMap((dir) => [bind, dir, dir]),
    ...(options.writable ? gitConfigBinds(options.visible) : []),
    ...hiddenBinds(options.sandbox.hidden ?? [], options.visible),
    "--chdir",
    options.cwd,
    "--clearenv",
    ...Object.entries({ ...options.env, HOME: "/tmp", TMPDIR: "/tmp" }).flatMap(([name, value]) => [
      "--setenv",
      name,
      value,
    ]),
    "--",
    "bash",
    "-c",
    options.script,
  ];
  return { command: options.sandbox.bwrap, args, spawnEnv: { PATH: "/usr/bin:/bin" } };
}
