// file: -C writes a compiled magic file.
import { longOptionIs, parseOptions, type Validator } from "../options.js";

/** file: `-C` / `--compile` writes a compiled magic file. */
export const fileValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {
    shortWithArg: "eFfmP",
    longWithArg: ["exclude", "exclude-quiet", "separator", "files-from", "magic-file", "parameter"],
  });
  for (const arg of parsed) {
    if (arg.kind === "short" && arg.letter === "C") return "file -C writes a compiled magic file";
    if (arg.kind === "long" && arg.name !== "" && longOptionIs(arg.name, ["compile"])) {
      return "file --compile writes a compiled magic file";
    }
  }
  return undefined;
};
