// ripgrep and the Silver Searcher: --pre, --hostname-bin and --pager run programs.
import { longOptionIs, parseOptions, type Validator } from "../options.js";

/**
 * ripgrep: `--pre` and `--hostname-bin` run programs. Matched by prefix like getopt_long's
 * abbreviations: ripgrep takes none today, and a version that did must not open a hole.
 */
export const rgValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {});
  for (const arg of parsed) {
    if (arg.kind !== "long" || arg.name === "") continue;
    const option = longOptionIs(arg.name, ["pre", "hostname-bin"]);
    if (option !== undefined) return `rg --${option} runs a program`;
  }
  return undefined;
};

/** The Silver Searcher: `--pager` runs a program (getopt_long, so abbreviations count). */
export const agValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {});
  const pager = parsed.find(
    (arg) => arg.kind === "long" && arg.name !== "" && longOptionIs(arg.name, ["pager"]),
  );
  return pager === undefined ? undefined : "ag --pager runs a program";
};
