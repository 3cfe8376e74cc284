// uniq: a second operand is the output file.
import { parseOptions, type Validator } from "../options.js";

export const uniqValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {
    shortWithArg: "fsw",
    longWithArg: ["skip-fields", "skip-chars", "check-chars"],
  });
  const operands = parsed.filter((arg) => arg.kind === "operand");
  if (operands.length > 1) return `uniq writes its output to its second operand (${operands[1]!.word.raw})`;
  return undefined;
};
