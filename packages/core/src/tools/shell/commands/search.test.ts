// ripgrep and the Silver Searcher, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("rg and ag", () => {
  it("refuse the options that run programs, abbreviated too", () => {
    for (const command of [
      "rg --pre=sh x",
      "rg --pre sh x",
      "rg --pr=sh x",
      "rg --hostname-bin=sh x",
      "rg --host=sh x",
    ]) {
      refused(command, "runs a program");
    }
    for (const command of ["ag --pager=sh x", "ag --pag=sh x"]) refused(command, "runs a program");
  });

  it("accept the reading options that share a prefix", () => {
    accepted("rg --pre-glob '*.gz' x");
    accepted("rg --pretty --hidden -n x");
    accepted("ag --hidden x");
    accepted("rg -n -- --pre x");
    accepted("ag -- --pager x");
  });
});
