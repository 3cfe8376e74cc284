// The env validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("env", () => {
  it("refuses env running a writer or a shell, and env changing the environment of a command", () => {
    refused("env sh -c 'rm -rf /'", "sh");
    refused("env rm x", "rm");
    refused("env PAGER=x git log", "environment");
    refused("env -S 'rm x'", "-S");
    accepted("env");
    accepted("env cat x");
  });

  it("prints the environment whatever it unsets, but runs nothing with a changed one", () => {
    accepted("env -u HOME");
    accepted("env --unset=HOME -0");
    refused("env -i cat x", "changes the environment of cat");
    refused("env -u HOME cat x", "changes the environment of cat");
    refused("env X=1 cat x", "changes the environment of cat");
    refused("env -C /tmp ls", "changes the environment of ls");
    refused("env --sp='a b'", "env -S runs the command line");
    refused("env -S'rm x'", "env -S runs the command line");
    refused("env $cmd", "expanded at run time");
    refused("env env env env env cat", "nests commands too deeply");
    accepted("env env env env cat");
  });
});
