// awk, gawk, mawk: a literal program without output redirection, pipes, system, getline or @.
import type { Word } from "../lexer.js";
import { literalArguments, longOptionIs, type Validator } from "../options.js";

/**
 * awk is read-only only without output redirection, pipes, `system` and `getline` (the simple rule:
 * any `>`, `|`, `system`, `getline` in the program refuses it, comparisons included), and without
 * gawk's `@` (directives and indirect calls, which can reach `system` by a computed name).
 */
export const awkValidator: Validator = (name, args) => {
  let i = 0;
  let program: Word | undefined;
  while (i < args.length) {
    const word = args[i]!;
    const v = word.value;
    if (word.dynamic) return literalArguments(name, [word]);
    i++;
    if (v === "--") continue;
    if (v === "-F" || v === "-v" || v === "--field-separator" || v === "--assign") {
      if (args[i]?.dynamic) return literalArguments(name, [args[i]!]);
      i++;
      continue;
    }
    if (/^-[Fv]./.test(v) || /^--(?:field-separator|assign)=/.test(v)) continue;
    if (
      /^-f/.test(v) ||
      (v.startsWith("--") && longOptionIs(v.slice(2).split("=")[0]!, ["file"]) !== undefined)
    ) {
      return `${name} -f reads its program from a file the classifier cannot inspect`;
    }
    if (v.startsWith("-") && v.length > 1) {
      return `${name} option ${v} is not known to be read-only (gawk's -o, -p, -d, -i, -l, -e, -E write files or load code)`;
    }
    program = word;
    break;
  }
  if (program === undefined) return undefined;
  const banned = [">", "|", "system", "getline", "@"].find((token) => program.value.includes(token));
  if (banned !== undefined) {
    return `the ${name} program contains "${banned}" (output redirection, pipes, system, getline and @ can write or run programs)`;
  }
  return undefined;
};
