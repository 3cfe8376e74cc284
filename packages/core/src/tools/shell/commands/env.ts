// env: prints the environment, or runs a read-only command without changing its environment.
import { longOptionIs, MAX_NESTING, parseOptions, type Validator } from "../options.js";

/** env without a command prints the environment; with one, it is read-only only if it changes nothing. */
export const envValidator: Validator = (name, args, depth, check) => {
  if (depth >= MAX_NESTING) return `${name} nests commands too deeply`;
  const { parsed, operandsFrom } = parseOptions(args, {
    shortWithArg: "uCS",
    longWithArg: ["unset", "chdir", "split-string"],
    stopAtOperand: true,
  });
  for (const arg of parsed) {
    if (
      (arg.kind === "short" && arg.letter === "S") ||
      (arg.kind === "long" && longOptionIs(arg.name, ["split-string"]))
    ) {
      return "env -S runs the command line given as its argument";
    }
  }
  let start = operandsFrom;
  while (start < args.length && args[start]!.value.includes("=")) start++;
  if (start >= args.length) return undefined;
  if (start > 0) {
    return `${name} with options or assignments changes the environment of ${args[start]!.value} (PAGER, GIT_*, LD_PRELOAD …)`;
  }
  // No option and no assignment: the command starts at the first argument.
  const problem = check(args, depth + 1);
  return problem === undefined
    ? undefined
    : `${name} runs ${args[0]!.value}, which is not read-only: ${problem}`;
};
