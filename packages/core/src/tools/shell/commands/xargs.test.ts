// The xargs validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("xargs", () => {
  it("checks the command xargs runs recursively, as if stdin supplied any argument", () => {
    refused("xargs rm", "rm");
    refused("xargs -0 -n1 sh -c 'x'", "sh");
    refused("xargs sed s/a/b/", "sed");
    refused("xargs find", "find");
    refused("xargs env rm", "env");
    refused("xargs xargs xargs xargs xargs cat", "deeply");
    accepted("xargs -0 grep -l foo");
    accepted("xargs -n 1 wc -l");
  });

  it("resolves option abbreviations as getopt_long does (#11 finding 15)", () => {
    for (const command of ["xargs --pr=X echo", "xargs --p=X echo", "xargs --process-slot-var=X echo"]) {
      refused(command, /process-slot-var/);
    }
    accepted("xargs -0 echo");
  });

  it("runs echo without a command, and checks a command up to four levels deep", () => {
    accepted("xargs");
    accepted("xargs -a list cat");
    accepted("xargs xargs xargs xargs cat");
  });

  it("treats the replacement string as input: never the command name, never a literal argument", () => {
    accepted("xargs -I{} cat {}");
    accepted("xargs -i cat {}");
    accepted("xargs --replace cat {}");
    accepted("xargs -0 -n 1 -P 4 grep x");
    refused("xargs -I{} {} x", "substitutes input into the command name");
    refused("xargs -i {} x", "substitutes input into the command name");
    refused("xargs --replace=X X y", "substitutes input into the command name");
    refused("xargs -IX git log X", "expanded at run time");
    refused("xargs -n $n cat", "expanded at run time");
    refused("xargs $cmd", "expanded at run time");
  });

  it("marks every later word that holds the replacement string as input, so a program cannot hide in it", () => {
    // awk accepts a literal program and any file operand: only the dynamic marking stops these.
    refused("xargs -I P awk P", "P is expanded at run time");
    refused("xargs -IP awk P", "P is expanded at run time");
    refused("xargs -iP awk P", "P is expanded at run time");
    refused("xargs -i awk {}", "{} is expanded at run time");
    refused("xargs --replace awk {}", "{} is expanded at run time");
    refused("xargs --replace=P awk P", "P is expanded at run time");
    refused("xargs --rep=P awk P", "P is expanded at run time");
    refused("xargs -I P awk -F , P", "P is expanded at run time");
    // Only the replacement string is input: other options' values, and words without it, stay literal.
    accepted("xargs -n 1 awk 1");
    accepted("xargs -L 1 awk 1");
    accepted("xargs --max-args=1 awk 1");
    accepted("xargs -I P awk 1 P");
    // No replacement string: the word "undefined" is a word like any other.
    accepted("xargs awk undefined");
    refused("xargs undefined", '"undefined" is not a known read-only command');
    // An empty replacement string replaces nothing.
    accepted("xargs -I '' awk 1");
  });

  it("takes the argument of each long option that has one, so it is not read as the command", () => {
    for (const option of ["arg-file", "delimiter", "max-args", "max-procs", "max-chars"]) {
      accepted(`xargs --${option} 1 cat`);
    }
    accepted("xargs -a list -d , -E x -L 1 -n 1 -P 2 -s 100 cat");
    // Without = the value is the next word, which is then not the command: here a refused one.
    refused("xargs --process-slot-var X cat", /process-slot-var/);
  });
});
