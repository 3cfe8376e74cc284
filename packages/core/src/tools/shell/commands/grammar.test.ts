// Which options of each command take an argument: the word after one is data, never an option, so
// getting this wrong either hides a dangerous option (`-k -o` read as -o is only a refusal, but the
// reverse hides one) or moves where a command's operands and program start. Through the classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("option arguments, command by command", () => {
  it("sort, date, file, uniq: an option's argument that looks like a dangerous option is data", () => {
    for (const command of [
      "sort -k -o f",
      "sort -t -o f",
      "sort -S -o f",
      "sort --key -o f",
      "sort --field-separator -o f",
      "sort --buffer-size -o f",
      "sort --files0-from -o",
      "date -d -s",
      "date -f -s",
      "date -r -s",
      "date --date -s",
      "date --file -s",
      "date --reference -s",
      "date --rfc-3339 -s",
      "file -e -C f",
      "file -F -C f",
      "file -f -C",
      "file -P -C f",
      "file --exclude -C f",
      "file --exclude-quiet -C f",
      "file --separator -C f",
      "file --files-from -C",
      "file --magic-file -C f",
      "file --parameter -C f",
      "uniq --skip-chars 1 --check-chars 2 in",
      "env --unset HOME",
    ]) {
      accepted(command);
    }
  });

  it("an empty long option name (--=x) is no abbreviation of every option", () => {
    for (const command of ["date --=x", "file --=x", "rg --=x x", "ag --=x x"]) accepted(command);
  });

  it("xargs: the words after -a, --delimiter and the --max-* options are not the command", () => {
    for (const command of [
      "xargs --arg-file list cat",
      "xargs --delimiter , cat",
      "xargs --max-args 1 cat",
      "xargs --max-procs 2 cat",
      "xargs --max-chars 100 cat",
      // -n's and -0's values are no replacement string.
      "xargs -n 1 printf 1",
      "xargs -0 printf {}",
    ]) {
      accepted(command);
    }
  });

  it("xargs: what replaces the replacement string is input, wherever it stands", () => {
    // awk's program and printf's format would come from stdin.
    refused("xargs -I{} awk {} f", "expanded at run time");
    refused("xargs -iX awk X f", "expanded at run time");
    refused("xargs -i printf {} x", "could expand to -v");
    refused("xargs --replace printf {} x", "could expand to -v");
  });

  it("awk: the program is checked whatever options come before it, and only options look like options", () => {
    refused("awk -F : '{ system(\"id\") }' f", '"system"');
    refused("awk --field-separator : '{ system(\"id\") }' f", '"system"');
    refused("awk '{ print a-Fb; system(\"id\") }' f", '"system"');
    refused("awk '{ x--assign=1; system(\"id\") }' f", '"system"');
    accepted("awk --field-separator : '{print}' f");
    accepted("awk '{ print a-f }' f");
    accepted("awk '  f' x");
    accepted("awk - f");
  });

  it("find: start options, then paths, then an expression that starts at its first operator", () => {
    refused("find . -delete", "find -delete deletes files");
    refused("find -O3x .", "find -O3x is not known to be read-only");
    refused("find . \\( foo \\)", "find foo is not known to be read-only");
    refused("find . ! foo", "find foo is not known");
    refused("find . , foo", "find foo is not known");
    refused("find . \\) foo", "find foo is not known");
    refused("find . -print x-newermt y", "find x-newermt is not known");
    refused("find . -newermtx y", "find -newermtx is not known");
    accepted("find - -name x");
  });

  it("tree and git: only words that start with one dash are short options", () => {
    accepted("tree -- src");
    accepted("tree my-docs");
    accepted("git grep a-Ob");
  });
});
