// The sort validator, through the whole classifier.
import { describe, it } from "vitest";
import { refused } from "../../../test-support/shell-testing.js";

describe("sort", () => {
  it("refuses sort -o / --output in every spelling", () => {
    for (const command of [
      "sort -o out in",
      "sort -ro out in",
      "sort in -oout",
      "sort --output=out in",
      "sort --output out in",
      "sort --outp=x in",
    ]) {
      refused(command, "sort");
    }
  });
});
