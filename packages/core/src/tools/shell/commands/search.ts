// ripgrep and the Silver Searcher: --pre, --hostname-bin and --pager run programs.
import { longOptionIs, parseOptions, type Validator } from "../options.js";

/** ripgrep: `--pre` and `--hostname-bin` run programs. */
export const rgValidator: Validator = (_name, args) => {
  const runs = args.find((word) => /^--(?:pre|hostname-bin)(?:=|$)/.test(word.value));
  return runs === undefined ? undefined : `rg ${runs.value.split("=")[0]} runs a program`;
};

/** The Silver Searcher: `--pager` runs a program (getopt_long, so abbreviations count). */
export const agValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {});
  const pager = parsed.find(
    (arg) => arg.kind === "long" && arg.name !== "" && longOptionIs(arg.name, ["pager"]),
  );
  return pager === undefined ? undefined : "ag --pager runs a program";
};
