// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are shell commands; ${…} is shell syntax.
// test and [ (bash builtins): what bash may read as the operand of -v, whose subscript it evaluates.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("test and [", () => {
  it("accept literal tests and quoted run-time operands of safe operators", () => {
    for (const command of [
      "test -f package.json",
      "[ -d src ]",
      "test -v HOME",
      "test -v 'x[3]'",
      '[ "$a" = "$b" ]',
      '[ -n "$x" ]',
      '[ "$a" -eq 1 ]',
      'for f in *.ts; do test -f "$f"; done',
    ]) {
      accepted(command);
    }
  });

  it("refuse a subscript after -v or -R that is not a literal number", () => {
    refused("test -v 'x[i]'", "-v");
    refused("[ -R 'x[i]' ]", "-R");
    refused('for d in $; do test -v "x[${d}(id)]"; done', "subscript");
  });

  it("refuse anything but a literal name after a run-time argument, which may be -v", () => {
    refused('for a in -v; do test "$a" "$b"; done', "run time");
    refused('for a in -v; do test "$a" "x[i]"; done', "run time");
  });

  it("refuse arguments that may split into several or none", () => {
    refused("test *", "several arguments");
    refused("test -f $f", "several arguments");
    refused('test "$@"', "several arguments");
    refused("[ -f {a,b} ]", "several arguments");
  });
});
