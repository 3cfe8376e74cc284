// The uniq validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("uniq", () => {
  it("refuses uniq with a second operand (the output file)", () => {
    refused("uniq in out", "second operand");
    refused("uniq -f 1 in out", "second operand");
    accepted("uniq -f 1 in");
  });

  it("counts operands after options that take an argument, in every spelling", () => {
    accepted("uniq -c in");
    accepted("uniq -s 2 -w 3 in");
    refused("uniq --skip-chars=1 in out", "second operand (out)");
    refused("uniq -s2 in out", "second operand");
  });
});
