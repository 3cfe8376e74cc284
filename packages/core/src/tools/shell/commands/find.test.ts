// The find validator, through the whole classifier.
import { describe, it } from "vitest";
import { refused } from "../../../test-support/shell-testing.js";

describe("find", () => {
  it("refuses find -delete, -exec, -execdir, -ok, -okdir and -fprint*", () => {
    refused("find . -delete", "-delete");
    for (const action of ["-exec", "-execdir", "-ok", "-okdir"]) refused(`find . ${action} rm {} ;`, action);
    for (const action of ["-fprint out", "-fprint0 out", "-fprintf out %p", "-fls out"]) {
      refused(`find . ${action}`, action.split(" ")[0]!);
    }
  });
});
