// sort: -o/--output and -T write files, --compress-program runs a program.
import { longOptionIs, parseOptions, type Validator } from "../options.js";

export const sortValidator: Validator = (_name, args) => {
  const { parsed } = parseOptions(args, {
    shortWithArg: "kotTS",
    longWithArg: ["key", "output", "field-separator", "temporary-directory", "buffer-size", "files0-from"],
  });
  for (const arg of parsed) {
    if (arg.kind === "short" && arg.letter === "o") return "sort -o writes its output to a file";
    if (arg.kind === "short" && arg.letter === "T")
      return "sort -T writes temporary files into the directory given";
    if (arg.kind === "long") {
      const option = longOptionIs(arg.name, ["output", "compress-program", "temporary-directory"]);
      if (option === "output") return "sort --output writes its output to a file";
      if (option === "temporary-directory") return "sort --temporary-directory writes temporary files there";
      if (option !== undefined) return "sort --compress-program runs a program";
    }
  }
  return undefined;
};
