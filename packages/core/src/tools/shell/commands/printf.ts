// printf: -v assigns a shell variable.
import type { Validator } from "../options.js";

/** printf: `-v NAME` assigns a shell variable (PATH included), and only the first word can be that option. */
export const printfValidator: Validator = (name, args) => {
  const first = args[0];
  if (first === undefined) return undefined;
  if (first.dynamic)
    return `the first argument of ${name} could expand to -v, which assigns a shell variable`;
  if (first.value.startsWith("-v")) return `${name} -v assigns a shell variable`;
  return undefined;
};
