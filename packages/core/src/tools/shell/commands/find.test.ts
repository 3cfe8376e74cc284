// The find validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("find", () => {
  it("refuses find -delete, -exec, -execdir, -ok, -okdir and -fprint*", () => {
    refused("find . -delete", "-delete");
    for (const action of ["-exec", "-execdir", "-ok", "-okdir"]) refused(`find . ${action} rm {} ;`, action);
    for (const action of ["-fprint out", "-fprint0 out", "-fprintf out %p", "-fls out"]) {
      refused(`find . ${action}`, action.split(" ")[0]!);
    }
  });

  it("accepts an expression of known tests and actions, after any start options and paths", () => {
    for (const command of [
      "find . -name '*.ts' -type f -print",
      "find -L . -maxdepth 2 -name x",
      "find -H -P src",
      "find -O3 . -name x",
      "find -D tree . -name x",
      "find . \\( -name a -o -name b \\) -print0",
      "find . ! -name x",
      "find src lib -empty",
      "find . -newermt 2020-01-01",
      "find . -printf '%p\\n'",
      // The argument of a test is data, whatever it looks like.
      "find . -name -delete",
      "find",
    ]) {
      accepted(command);
    }
  });

  it("refuses anything it does not know, after paths and after arguments", () => {
    refused("find . -frobnicate", "find -frobnicate is not known to be read-only");
    refused("find . -newerxy x", "find -newerxy is not known");
    refused("find -D tree . -delete", "-delete");
    refused("find . -name x -delete", "-delete");
    refused("find src , -delete", "-delete");
  });
});
