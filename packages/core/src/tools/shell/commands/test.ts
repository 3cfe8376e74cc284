// test and [: bash evaluates the subscript of a -v operand as arithmetic, which can run commands.
import type { Validator } from "../options.js";

/** A variable name, or one with a literal numeric subscript: what `-v` and `-R` may test. */
const TESTABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(?:\[[0-9]+\])?$/;

/**
 * test and `[` (bash builtins): the operand of `-v NAME` and `-R NAME` is a variable reference
 * whose array subscript bash evaluates as arithmetic, expanding `$(…)` and recursing into the
 * values of the variables it names — so `test -v "x[${d}(cmd)]"` with `d='$'`, or `test -v 'x[i]'`
 * with `i='a[$(cmd)]'`, runs `cmd` (#11 finding 1, as a class). Refused: any argument that may
 * become several or none (which one is the operator is then decided at run time: a glob can list a
 * file named `-v`), and after a literal `-v`/`-R` or an argument known only at run time (it may be
 * `-v`), anything but a literal variable name. `-eq` and the other comparisons of the builtin do not
 * evaluate arithmetic (only `[[ … ]]`'s do, and it is refused).
 */
export const testValidator: Validator = (name, args) => {
  // `[`'s closing `]` is checked as the arguments before it are: a literal `]` neither expands nor
  // holds a subscript, so it passes whatever precedes it.
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (word.fields) {
      return `${name} ${word.raw} may expand to several arguments or none, so which of them bash reads as -v (which evaluates code in an array subscript) is decided at run time`;
    }
    const previous = args[i - 1];
    if (previous === undefined) continue;
    const mayName = previous.dynamic || previous.value === "-v" || previous.value === "-R";
    if (mayName && (word.dynamic || (word.value.includes("[") && !TESTABLE_NAME.test(word.value)))) {
      return `${name} ${previous.raw} ${word.raw}: bash evaluates the array subscript of a name after -v or -R as arithmetic, which can run commands; only a literal variable name may follow -v, -R or an argument known only at run time`;
    }
  }
  return undefined;
};
