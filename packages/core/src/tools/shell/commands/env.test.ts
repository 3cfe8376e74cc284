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
});
