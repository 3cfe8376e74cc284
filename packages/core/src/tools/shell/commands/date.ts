// date: -s and operands other than +FORMAT set the clock.
import { longOptionIs, parseOptions, type Validator } from "../options.js";

/** date: `-s` and an operand that is not `+FORMAT` set the system clock. */
export const dateValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {
    shortWithArg: "dfrs",
    shortOptionalArg: "I",
    longWithArg: ["date", "file", "reference", "set", "rfc-3339"],
  });
  for (const arg of parsed) {
    if (arg.kind === "short" && arg.letter === "s") return "date -s sets the system clock";
    if (arg.kind === "long" && arg.name !== "" && longOptionIs(arg.name, ["set"]))
      return "date --set sets the system clock";
    if (arg.kind === "operand" && !arg.word.value.startsWith("+")) {
      return `date ${arg.word.raw} would set the system clock (only +FORMAT operands are read-only)`;
    }
  }
  return undefined;
};
