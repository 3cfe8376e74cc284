// The date validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("date", () => {
  it("reads the clock with options and +FORMAT operands", () => {
    for (const command of ["date", "date +%s", "date -u +%F", "date -d yesterday", "date --date=@0 +%s"]) {
      accepted(command);
    }
    accepted("date -r file");
    accepted("date -Iseconds");
    accepted("date --rfc-3339 seconds");
    // The long options that take their argument as the next word: it is no operand.
    accepted("date --date now");
    accepted("date --file dates");
    accepted("date --reference file");
    // `--=x` names no option (getopt_long finds it ambiguous and date fails): it is no --set.
    accepted("date --=x");
  });

  it("refuses setting the clock: -s, --set and its abbreviations, and a non-format operand", () => {
    refused("date -s 10:00", "date -s sets the system clock");
    refused("date -us 10:00", "date -s sets the system clock");
    refused("date --set=10:00", "date --set sets the system clock");
    refused("date --se 10:00", "date --set sets the system clock");
    refused("date 0101000026", "would set the system clock");
    refused("date -u 0101000026", "would set the system clock");
  });
});
