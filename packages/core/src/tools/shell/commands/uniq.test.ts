// The uniq validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("uniq", () => {
  it("refuses uniq with a second operand (the output file)", () => {
    refused("uniq in out", "second operand");
    refused("uniq -f 1 in out", "second operand");
    accepted("uniq -f 1 in");
  });
});
