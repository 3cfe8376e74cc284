// The git validator, through the whole classifier.
import { describe, expect, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";
import { classifyShellCommand } from "../classify.js";

describe("git", () => {
  it("allows only read-only git subcommands and no option that runs a program or writes", () => {
    for (const command of [
      "git status",
      "git log",
      "git diff",
      "git show",
      "git branch",
      "git branch --list",
      "git rev-parse HEAD",
      "git ls-files",
      "git blame f",
      "git grep x",
    ]) {
      expect(classifyShellCommand(command).readOnly, command).toBe(true);
    }
    refused("git -c core.pager=sh log", "-c");
    refused("git log --output=x", "--output");
    refused("git diff --ext-diff", "ext-diff");
    refused("git branch topic", "creates a branch");
    refused("git commit", "not a read-only git subcommand (allowed: status, log, diff, show, branch,");
  });

  it("takes only the global options that change nothing, and names the danger of the others", () => {
    accepted("git");
    accepted("git --no-pager -P --no-optional-locks --literal-pathspecs log");
    accepted("git --version");
    refused("git -C /elsewhere status", "git -C changes into another directory");
    refused("git --git-dir=/x/.git log", "git --git-dir selects a repository");
    refused("git --work-tree=/x status", "git --work-tree selects another work tree");
    refused("git --exec-path=/x log", "git --exec-path selects the programs");
    refused("git -p log", "git -p runs a pager");
    refused("git --paginate log", "git --paginate runs a pager");
    refused("git --config-env=core.pager=X log", "git --config-env sets configuration");
    refused("git --bare log", "git global option --bare is not known to be read-only");
    refused("git --no-pager=x log", "git global option --no-pager=x is not known");
  });

  it("refuses, in any read-only subcommand, options that write or run programs, abbreviated too", () => {
    refused("git show --out=x", "git show --output writes to a file");
    refused("git log --ext", "git log --ext-diff runs an external diff");
    refused("git diff --textconv", "git diff --textconv runs an external diff or conversion program");
    refused("git grep --open-files-in-pager=vim x", "git grep --open-files-in-pager runs a program");
    refused("git grep -O x", "git grep -O opens the matches in a pager");
    refused("git grep -iOvim x", "git grep -O");
    // Real options that merely share a prefix, or another subcommand's -O, are fine.
    accepted("git diff --text");
    accepted("git diff --output-indicator-new=+ a");
    accepted("git log -O order.txt");
    accepted("git grep -i x");
    // -O only as an option: a pattern that holds -O is searched for.
    accepted("git grep a-Ob");
  });

  it("lets git branch list and filter, never create, rename or delete", () => {
    accepted("git branch -a -v --sort=-committerdate");
    accepted("git branch --list 'feat*'");
    accepted("git branch -l 'feat*'");
    accepted("git branch --contains HEAD 'feat*'");
    accepted("git branch --merged=main topic");
    refused("git branch -D topic", "git branch -D changes branches");
    refused("git branch -m old new", "git branch -m changes branches");
    refused("git branch --sort=x topic", "git branch topic creates a branch");
    refused("git branch --set-upstream-to=origin/main", "changes branches");
  });
});
