// The xargs validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("xargs", () => {
  it("checks the command xargs runs recursively, as if stdin supplied any argument", () => {
    refused("xargs rm", "rm");
    refused("xargs -0 -n1 sh -c 'x'", "sh");
    refused("xargs sed s/a/b/", "sed");
    refused("xargs find", "find");
    refused("xargs env rm", "env");
    refused("xargs xargs xargs xargs xargs cat", "deeply");
    accepted("xargs -0 grep -l foo");
    accepted("xargs -n 1 wc -l");
  });

  it("resolves option abbreviations as getopt_long does (#11 finding 15)", () => {
    for (const command of ["xargs --pr=X echo", "xargs --p=X echo", "xargs --process-slot-var=X echo"]) {
      refused(command, /process-slot-var/);
    }
    accepted("xargs -0 echo");
  });
});
