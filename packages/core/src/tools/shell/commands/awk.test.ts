// The awk validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("awk", () => {
  it("refuses awk programs with >, |, system, getline", () => {
    for (const token of [">", "|", "system", "getline"]) refused(`awk '{ x ${token} y }' f`, token);
  });

  it("reads a literal program after -F, -v, --field-separator, --assign and --", () => {
    for (const command of [
      "awk '{print $1}' f",
      "gawk -F: '{print $1}' f",
      "mawk -F : '{print}' f",
      "awk -v x=1 '{print x}' f",
      "awk -vx=1 '{print x}' f",
      "awk --field-separator=: '{print}' f",
      "awk --assign x=1 '{print x}' f",
      "awk -- '{print}' f",
      "awk",
    ]) {
      accepted(command);
    }
  });

  it("refuses a program it cannot see, gawk's options that write or load code, and @", () => {
    refused("awk -f prog.awk f", "-f reads its program from a file");
    refused("awk -fprog.awk f", "-f reads its program from a file");
    refused("awk --file=prog.awk f", "-f reads its program from a file");
    refused("awk --fi=prog.awk f", "-f reads its program from a file");
    refused("gawk -i inplace '{print}' f", "option -i is not known to be read-only");
    refused("gawk -o '{print}' f", "option -o is not known");
    refused("awk $prog f", "expanded at run time");
    refused("awk -F $sep '{print}' f", "expanded at run time");
    refused("awk -v $assignment '{print}' f", "expanded at run time");
    refused("gawk '@include \"x\"' f", '"@"');
    refused("awk -F: '{print > \"out\"}' f", '">"');
  });
});
