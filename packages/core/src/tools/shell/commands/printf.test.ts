// The printf validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("printf", () => {
  it("prints, whatever follows its format", () => {
    accepted("printf '%s\\n' a b");
    accepted("printf x -v y");
    accepted("printf");
    accepted("printf -- -v");
  });

  it("refuses -v (it assigns a shell variable) and a first argument known only at run time", () => {
    refused("printf -v PATH x", "printf -v assigns a shell variable");
    refused("printf -vPATH x", "printf -v assigns a shell variable");
    refused("printf $fmt x", "could expand to -v");
  });
});
