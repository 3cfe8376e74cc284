// git: read-only subcommands only, without options that write files or run programs.
import { longOptionIs, type Validator } from "../options.js";

const GIT_READ_ONLY_SUBCOMMANDS = [
  "status",
  "log",
  "diff",
  "show",
  "branch",
  "rev-parse",
  "ls-files",
  "blame",
  "grep",
];

const GIT_GLOBAL_ALLOWED = new Set([
  ...["--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs"],
  ...["--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--version", "--help"],
]);

const GIT_GLOBAL_DENIED: Readonly<Record<string, string>> = {
  "-c": "git -c sets configuration, which can name programs to run (core.pager, diff.external, core.fsmonitor …)",
  "--config-env": "git --config-env sets configuration, which can name programs to run",
  "-C": "git -C changes into another directory whose repository configuration could run programs",
  "--git-dir": "git --git-dir selects a repository whose configuration could run programs",
  "--work-tree": "git --work-tree selects another work tree",
  "--exec-path": "git --exec-path selects the programs git runs",
  "-p": "git -p runs a pager",
  "--paginate": "git --paginate runs a pager",
};

const GIT_BRANCH_LISTING = new Set([
  ...["-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "-l", "--list", "--show-current"],
  ...["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"],
  ...["--color", "--no-color", "--column", "--no-column", "-i", "--ignore-case", "--omit-empty"],
  ...["--abbrev", "--no-abbrev", "-q", "--quiet"],
]);

/** git branch options after which operands are patterns or commits, not names of branches to create. */
const GIT_BRANCH_LIST_MODE = new Set([
  "-l",
  "--list",
  "--contains",
  "--no-contains",
  "--merged",
  "--no-merged",
  "--points-at",
]);

/** git: only read-only subcommands, no option that writes a file, runs a diff driver or a pager. */
export const gitValidator: Validator = (_name, args) => {
  let i = 0;
  while (i < args.length && args[i]!.value.startsWith("-")) {
    const v = args[i]!.value;
    const option = v.split("=")[0]!;
    if (!GIT_GLOBAL_ALLOWED.has(v)) {
      return GIT_GLOBAL_DENIED[option] ?? `git global option ${v} is not known to be read-only`;
    }
    i++;
  }
  const subcommand = args[i]?.value;
  if (subcommand === undefined) return undefined;
  if (!GIT_READ_ONLY_SUBCOMMANDS.includes(subcommand)) {
    return `git ${subcommand} is not a read-only git subcommand (allowed: ${GIT_READ_ONLY_SUBCOMMANDS.join(", ")})`;
  }
  const rest = args.slice(i + 1);
  for (const word of rest) {
    const v = word.value;
    if (v.startsWith("--") && v.length > 2) {
      const option = longOptionIs(
        v.slice(2).split("=")[0]!,
        ["output", "ext-diff", "textconv", "open-files-in-pager"],
        ["text"],
      );
      if (option === "output") return `git ${subcommand} --output writes to a file`;
      if (option === "open-files-in-pager") return `git ${subcommand} --open-files-in-pager runs a program`;
      if (option !== undefined)
        return `git ${subcommand} --${option} runs an external diff or conversion program`;
    } else if (subcommand === "grep" && /^-[^-]/.test(v) && v.includes("O")) {
      return "git grep -O opens the matches in a pager program";
    }
  }
  if (subcommand === "branch") {
    const options = rest.filter((word) => word.value.startsWith("-"));
    const listing = options.some((word) => GIT_BRANCH_LIST_MODE.has(word.value.split("=")[0]!));
    for (const word of rest) {
      if (word.value.startsWith("-")) {
        if (!GIT_BRANCH_LISTING.has(word.value.split("=")[0]!)) {
          return `git branch ${word.value} changes branches; only listing is read-only`;
        }
      } else if (!listing) {
        return `git branch ${word.raw} creates a branch; use git branch --list PATTERN to filter the list`;
      }
    }
  }
  return undefined;
};
