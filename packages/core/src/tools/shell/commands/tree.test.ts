// The tree validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("tree", () => {
  it("lists with reading options, long ones from a known list", () => {
    for (const command of [
      "tree",
      "tree -a -L 2 src",
      "tree --dirsfirst --noreport",
      "tree --charset=ascii",
    ]) {
      accepted(command);
    }
  });

  it("refuses -o and -R (alone or among other letters) and any long option it does not know", () => {
    refused("tree -o out", "tree -o writes files");
    refused("tree -aR", "tree -aR writes files");
    refused("tree -fo out", "tree -fo writes files");
    refused("tree --output=x", "tree --output=x is not known to be read-only");
    refused("tree --fromfile", "is not known to be read-only");
  });
});
