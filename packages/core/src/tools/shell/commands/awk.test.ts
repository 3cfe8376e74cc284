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
      "awk --field-separator : '{print}' f",
      // Short programs, and -f inside a program, are programs, not options.
      "awk NF f",
      "awk '{print $1-f}' f",
      // A lone - is the program text (awk then fails on it), not an option; -F without its
      // argument leaves no program.
      "awk - f",
      "awk -F",
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
    // Only --file and its abbreviations are --file: another long option is named as unknown.
    refused("awk --version", "option --version is not known");
    refused("awk --fx '{print}' f", "option --fx is not known");
    refused("awk $prog f", "expanded at run time");
    refused("awk -F $sep '{print}' f", "expanded at run time");
    refused("awk -v $assignment '{print}' f", "expanded at run time");
    refused("gawk '@include \"x\"' f", '"@"');
    refused("awk -F: '{print > \"out\"}' f", '">"');
    // The separator and assignment arguments are skipped, the program after them still read.
    refused("awk -F : '{print > \"out\"}' f", '">"');
    // A program that contains -Fx or --assign= is still the program, not an option.
    refused('awk \'{print "-Fx" > "out"}\' f', '">"');
    refused('awk \'{print "--assign=" > "out"}\' f', '">"');
  });
});
