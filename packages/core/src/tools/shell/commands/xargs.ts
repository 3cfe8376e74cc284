// xargs: read-only when the command it runs is, whatever arguments stdin supplies.
import {
  literalArguments,
  longOptionIs,
  MAX_NESTING,
  parseOptions,
  UNKNOWN_ARGUMENT,
  type Validator,
} from "../options.js";

/** xargs runs another command with arguments from stdin: read-only when that command is, whatever it gets. */
export const xargsValidator: Validator = (name, args, depth, check) => {
  if (depth >= MAX_NESTING) return `${name} nests commands too deeply`;
  const { parsed, operandsFrom } = parseOptions(args, {
    shortWithArg: "adEILnPs",
    shortOptionalArg: "eil",
    longWithArg: ["arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"],
    stopAtOperand: true,
  });
  const own = args.slice(0, operandsFrom);
  const literal = literalArguments(name, own);
  if (literal !== undefined) return literal;
  let replace: string | undefined;
  for (const arg of parsed) {
    // Any unambiguous prefix is the option, as getopt_long resolves it: `--pr=X`, even `--p=X`.
    if (arg.kind === "long" && longOptionIs(arg.name, ["process-slot-var"])) {
      return `${name} --process-slot-var sets an environment variable of the command it runs`;
    }
    if (arg.kind === "short" && arg.letter === "I") replace = arg.value;
    if (arg.kind === "short" && arg.letter === "i") replace = arg.value || "{}";
    if (arg.kind === "long" && longOptionIs(arg.name, ["replace"]) !== undefined) replace = arg.value || "{}";
  }
  const inner = args.slice(operandsFrom);
  if (inner.length === 0) return undefined; // runs echo
  if (replace !== undefined && replace !== "" && inner[0]!.value.includes(replace)) {
    return `${name} substitutes input into the command name`;
  }
  const innerWords = inner.map((word, index) =>
    index > 0 && replace !== undefined && replace !== "" && word.value.includes(replace)
      ? { ...word, dynamic: true }
      : word,
  );
  const problem = check([...innerWords, UNKNOWN_ARGUMENT], depth + 1);
  return problem === undefined
    ? undefined
    : `${name} runs ${inner[0]!.value}, which is not read-only: ${problem}`;
};
