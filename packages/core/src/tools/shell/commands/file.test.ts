// The file validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("file", () => {
  it("identifies files, magic file and separators included", () => {
    for (const command of [
      "file a.bin",
      "file -b -i a",
      "file -m magic a",
      "file --mime-type a",
      "file -F : a",
    ]) {
      accepted(command);
    }
    // The argument of -m is a file name, not an option: "-C" there compiles nothing.
    accepted("file -m -C a");
  });

  it("refuses compiling a magic file, by letter or by long option and its abbreviations", () => {
    refused("file -C", "file -C writes a compiled magic file");
    refused("file -bC -m magic", "file -C writes a compiled magic file");
    refused("file --compile -m magic", "file --compile writes");
    refused("file --comp", "file --compile writes");
  });
});
