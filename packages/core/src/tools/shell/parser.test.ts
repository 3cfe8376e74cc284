// The parser's grammar, through the classifier: every construct it flattens, and the reason for
// every one it refuses. A construct parsed wrongly could hide a command; these pin where each ends.
import { describe, expect, it } from "vitest";
import { accepted, refused } from "../../test-support/shell-testing.js";
import { classifyShellCommand } from "./classify.js";

describe("the parser, through the classifier", () => {
  it("flattens lists, pipelines, groups, subshells and if/while/until/for into their commands", () => {
    for (const command of [
      "ls; cat x",
      "ls && cat x || grep y z",
      "ls | cat |& cat",
      "ls\ncat x",
      "ls &&\ncat x",
      "ls |\ncat",
      "ls ||\n\ncat x",
      "{ ls; }",
      "{ ls; cat x; } >/dev/null",
      "(ls)",
      "( ls; cat x )",
      "! ls",
      "! ! ls",
      "if ls; then cat x; fi",
      "if ls; then cat x; elif ls; then cat y; else cat z; fi",
      "if ls\nthen cat x\nfi",
      "while ls; do cat x; done",
      "until ls; do cat x; done",
      "for x in a b; do cat $x; done",
      "for x; do cat x; done",
      "for x in a\ndo cat x; done",
      "for x in a;\n\ndo cat x; done",
      ">/dev/null ls",
    ]) {
      accepted(command);
    }
  });

  it("finds a writer inside any construct", () => {
    for (const command of [
      "{ ls; rm x; }",
      "(rm x)",
      "! rm x",
      "if rm x; then ls; fi",
      "if ls; then ls; elif rm x; then ls; fi",
      "if ls; then ls; else rm x; fi",
      "while rm x; do ls; done",
      "for x in a; do rm $x; done",
      "ls | rm x",
    ]) {
      refused(command, '"rm" is not a known read-only command');
    }
    refused("{ ls; } >out", "writes to a file");
    refused("(ls) >out", "writes to a file");
    refused("if ls; then ls; fi >out", "writes to a file");
  });

  it("names the grammar it refuses", () => {
    refused("ls (", "syntax: unexpected ( (function definitions are not supported)");
    refused("f() { ls; }", "syntax: unexpected ( (function definitions are not supported)");
    refused("ls )", 'syntax: unexpected ")"');
    refused("( )", 'syntax: ")" must follow ";" or a newline');
    refused("ls; ;", 'syntax: missing command before ";"');
    refused("if ls; then\nfi", 'syntax: empty command list before "fi"');
    refused("(ls; )x", "syntax: unexpected word x after a compound command");
    refused("{ ls }", 'syntax: "{" is not closed');
    refused("{ ls; } x", "syntax: unexpected word x after a compound command");
    refused("}", 'syntax: "}" must follow ";" or a newline');
    refused("; ls", 'syntax: missing command before ";"');
    refused("ls && ; cat", 'syntax: missing command before ";"');
    refused("then ls", 'syntax: "then" must follow ";" or a newline');
    refused("if ls; fi", 'syntax: unexpected "fi"');
    refused("if ls; then fi", 'syntax: "fi" must follow ";" or a newline');
    refused("if ls; then ls; do ls; done", 'syntax: unexpected "do"');
    refused("if; then ls; fi", 'syntax: missing command before ";"');
    refused("if\nthen ls; fi", 'syntax: empty command list before "then"');
    refused("while ls; do ls; fi", 'syntax: unexpected "fi"');
    refused("if ls; then ls; done", 'syntax: unexpected "done"');
    refused("if ls; then ls", 'syntax: "then" is not closed');
    refused("ls &&", 'syntax: the line ends after "&&"');
    refused("ls ||", 'syntax: the line ends after "||"');
    refused("ls |", 'syntax: the line ends after "|"');
    refused("ls |&", 'syntax: the line ends after "|&"');
    refused("!", 'syntax: the line ends after "!"');
    refused("(( 1 ))", "arithmetic commands ((…)) are not supported");
    refused("ls & cat", "background jobs (&) are not allowed");
    refused("& ls", "background jobs (&) are not allowed");
    refused("(ls) &", "background jobs (&) are not allowed");
    refused("case x in esac", 'the shell construct "case" is not supported');
    refused("time ls", 'the shell construct "time" is not supported');
    refused("[[ -f x ]]", 'the shell construct "[[" is not supported');
  });

  it("reads for loops exactly: a lower-case name, then in and words or nothing, then do", () => {
    refused("for X in a; do ls; done", "the for loop assigns X; only lower-case loop variables are allowed");
    refused("for PATH in a; do ls; done", "the for loop assigns PATH");
    refused("for 'x' in a; do ls; done", "syntax: for needs a variable name");
    refused("for x-y in a; do ls; done", "syntax: for needs a variable name");
    refused("for ; do ls; done", "syntax: for needs a variable name");
    refused("for x in a", "syntax: incomplete for loop");
    refused("for x", "syntax: incomplete for loop");
    refused("for x in a; ls; done", 'syntax: for needs "do"');
    refused("for x in a; 'do' ls; done", 'syntax: for needs "do"');
    refused("for x a; do ls; done", "syntax: unexpected token in a for loop header");
    refused("for x in a | b; do ls; done", "syntax: unexpected token in a for loop header");
    // The words of the loop are values: an expansion there is not a command.
    accepted("for x in $HOME *.ts; do cat $x; done");
    // in is a keyword only where the header expects it.
    accepted("for x in in; do cat $x; done");
    refused("for x 'in' a; do ls; done", "syntax: unexpected token in a for loop header");
  });

  it("refuses an assignment in command position, after a redirection too, but not as an argument", () => {
    refused("X=1 ls", "variable assignment X=1 can change what a command does");
    refused(">/dev/null X=1 ls", "variable assignment X=1 can change what a command does");
    accepted("ls X=1");
    // A keyword quoted or expanded is a plain word: the command "if" is not known.
    refused("'if' ls", '"if" is not a known read-only command');
  });

  it("keeps a redirection of a compound command and of a command alike", () => {
    expect(classifyShellCommand("{ ls; } 2>/dev/null").readOnly).toBe(true);
    refused("{ ls; } 2>x", "the output redirection 2>x writes to a file");
  });

  it("continues a list after && || | |& and a newline only while a command follows", () => {
    for (const op of ["&&", "||", "|", "|&"]) {
      refused(`ls ${op}\n`, `syntax: the line ends after "${op}"`);
      refused(`{ ls ${op}\n}`, 'syntax: "}" must follow ";" or a newline');
    }
  });

  it("counts the commands of a list, compound ones included, to find an empty one", () => {
    accepted("if ls; { ls; }; then ls; fi");
    accepted("if { ls; }; ls; then ls; fi");
    accepted("while (ls); do ls; done");
    refused("\n}", 'syntax: empty command list before "}"');
    refused("(\n)", 'syntax: empty command list before ")"');
    refused("for x in a; do\ndone", 'syntax: empty command list before "done"');
  });

  it("names the keyword that lacks its separator, and ends at a lone ( without reading past it", () => {
    refused("{ ls; ! }", 'syntax: "}" must follow ";" or a newline');
    refused("for x in a; do ls; ! done", 'syntax: "done" must follow ";" or a newline');
    refused("ls; (", 'syntax: "(" is not closed');
  });

  it("allows only newlines between a for header and its do, and only lower-case names", () => {
    refused("for x in a;\n; do ls; done", 'syntax: for needs "do"');
    refused("for x in a; >f do ls; done", 'syntax: for needs "do"');
    refused("for Path in a; do ls; done", "the for loop assigns Path");
    refused("for xY in a; do ls; done", "the for loop assigns xY");
    accepted("for file_2 in a; do ls; done");
  });
});
