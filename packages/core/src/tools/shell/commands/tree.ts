// tree: -o writes the listing to a file, -R writes 00Tree.html files.
import type { Validator } from "../options.js";

const TREE_LONG_OPTIONS = new Set([
  ...["help", "version", "inodes", "device", "noreport", "nolinks", "dirsfirst", "filesfirst", "charset"],
  ...[
    "filelimit",
    "si",
    "du",
    "prune",
    "timefmt",
    "ignore-case",
    "matchdirs",
    "metafirst",
    "gitignore",
    "sort",
  ],
]);

/** tree: `-o FILE` writes its output to a file and `-R` writes 00Tree.html files in every directory. */
export const treeValidator: Validator = (_name, args) => {
  for (const word of args) {
    const v = word.value;
    if (v.startsWith("--") && v.length > 2) {
      if (!TREE_LONG_OPTIONS.has(v.slice(2).split("=")[0]!)) return `tree ${v} is not known to be read-only`;
    } else if (/^-[^-]/.test(v) && (v.includes("o") || v.includes("R"))) {
      return `tree ${v} writes files (-o writes the listing to a file, -R writes 00Tree.html files)`;
    }
  }
  return undefined;
};
