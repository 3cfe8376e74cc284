// The sort validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

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
    refused("sort --output=out in", "sort --output writes its output to a file");
    refused("sort --o=out in", "sort --output writes its output to a file");
  });

  it("reads the argument of --key and --field-separator as theirs, as getopt_long does", () => {
    // sort takes "-o" as a key or a separator here (and refuses it as one), so nothing is written.
    accepted("sort --key -o f");
    accepted("sort --field-separator -o f");
  });

  it("refuses temporary files and compression programs, and keeps reading options", () => {
    refused("sort -T /tmp f", "sort -T writes temporary files");
    refused("sort -nT/tmp f", "sort -T writes temporary files");
    refused("sort --temporary-directory=/tmp f", "sort --temporary-directory writes temporary files");
    refused("sort --te=/tmp f", "sort --temporary-directory writes");
    refused("sort --compress-program=gzip f", "sort --compress-program runs a program");
    refused("sort --comp=gzip f", "sort --compress-program runs a program");
    accepted("sort -k 2 -t , -n -r f");
    accepted("sort --key=2 --field-separator , f");
  });
});
