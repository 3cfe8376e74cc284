// The git validator, through the whole classifier.
import { describe, expect, it } from "vitest";
import { refused } from "../../../test-support/shell-testing.js";
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
    refused("git commit", "not a read-only git subcommand");
  });
});
