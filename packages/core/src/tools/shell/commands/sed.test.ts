// The sed validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("sed", () => {
  it("refuses sed -i, --in-place, -i.bak, -ni and the w, W, e commands and flags", () => {
    for (const command of [
      "sed -i s/a/b/ f",
      "sed --in-place s/a/b/ f",
      "sed -i.bak s/a/b/ f",
      "sed -ni p f",
      "sed -n -i p f",
    ]) {
      refused(command, "in place");
    }
    refused("sed 's/a/b/w out' f", "writes");
    refused("sed 's/a/b/gw out' f", "writes");
    refused("sed 'w out' f", "writes");
    refused("sed 'W out' f", "writes");
    refused("sed 'e ls' f", "runs");
    refused("sed 's/a/b/e' f", "runs");
    refused("sed -n '/a/{p;w out\n}' f", "writes");
    accepted("sed -n 's/we/ew/p' f");
  });
});
