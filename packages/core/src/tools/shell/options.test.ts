// getopt-style parsing (options.ts), through the commands that rely on it: where an option's
// argument ends and the operands begin decides what a command is asked to do.
import { describe, it } from "vitest";
import { accepted, refused } from "../../test-support/shell-testing.js";

describe("parseOptions, through the classifier", () => {
  it("ends options at --: what follows is operands, for a command that stops there too", () => {
    accepted("sort -- -o");
    refused("uniq -- a b", "second operand");
    refused("xargs -- rm", "xargs runs rm");
    accepted("xargs -- cat");
    // After -- come the words that are there, and no more: one operand is one.
    accepted("uniq -- in");
    accepted("date -- +%s");
  });

  it("takes a long option's argument after = or, for the options that take one, from the next word", () => {
    // With the value after `=`, the operand is an operand: a date to set the clock to.
    refused("date --date=now 0101000026", "would set the system clock");
    // An option without an argument leaves the next word an operand.
    refused("date --utc 0101000026", "would set the system clock");
    // --date takes the next word: it is a date to show, not one to set.
    accepted("date --date 0101000026 +%s");
    accepted("uniq --skip-fields 1 in");
  });

  it("reads a lone - as an operand (standard input), not as options", () => {
    refused("uniq - out", "second operand");
    accepted("uniq -");
  });

  it("survives an option that wants an argument at the very end of the line", () => {
    accepted("date --date");
    accepted("sort -k");
    accepted("uniq -f");
  });

  it("does not read an optional argument's letters as options", () => {
    // -I takes its argument attached: `seconds` holds an s, which alone would be -s.
    accepted("date -Iseconds");
    accepted("date -uIs");
  });
});
