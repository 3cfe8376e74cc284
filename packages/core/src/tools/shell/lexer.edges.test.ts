// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are shell commands; ${…} is shell syntax.
// The tokenizer's refusals and word flags, through the classifier: what makes a word dynamic (so a
// command with writing options refuses it), what ends a word, what it will not read.
import { describe, it } from "vitest";
import { accepted, refused } from "../../test-support/shell-testing.js";

describe("the tokenizer, through the classifier", () => {
  it("names what it will not read", () => {
    refused("cat <<< hi", "here-strings (<<<) are not allowed");
    refused("ls ;; ls", "case-clause terminators (;; ;& ;;&) are not supported");
    refused("ls ;& ls", "case-clause terminators");
    refused("ls {fd}>x", "the redirection {fd}> assigns a descriptor number to a shell variable");
    refused("cat {fd}<x", "the redirection {fd}< assigns a descriptor number to a shell variable");
    refused("cat <<EOF", 'here-document "EOF" has no body');
    refused("cat <<EOF\nx", 'here-document "EOF" is not terminated');
    refused("cat <<$d\nx\n$d", "here-document delimiter $d contains an expansion");
    refused("cat <<", "the redirection << has no target");
    refused("ls >", "the redirection > has no target");
    refused("ls > ;", "the redirection > has no target");
    refused("ls >\\\n", "the redirection > has no target");
    refused("echo 'x", "unterminated single quote");
    refused('echo "x', "unterminated double quote");
    refused("echo ${x", "unterminated parameter expansion (no closing brace)");
    refused("echo ${x:-y}", "parameter expansion ${x:-y} uses operators the classifier does not evaluate");
    refused("echo ${x@P}", "uses operators the classifier does not evaluate");
    refused("echo $'x", "unterminated $'…' string");
    refused("echo $\\\n(id)", "a line continuation directly after $");
    refused("echo $[1]", /\$\[|arithmetic/);
    refused("cat <<EOF\nx\\\nEOF\nEOF", "a here-document line ends with a backslash continuation");
  });

  it("reads here-documents: quoted delimiters do not expand, <<- strips tabs, several per line", () => {
    accepted("cat <<'EOF'\n$x\nEOF");
    accepted('cat <<"EOF"\n$x\nEOF');
    accepted("cat <<E\\OF\n$x\nEOF");
    accepted("cat <<-EOF\n\tx\n\tEOF");
    accepted("cat <<A <<B\na\nA\nb\nB");
    accepted("cat <<EOF\n\\$x\nEOF");
    refused("cat <<EOF\nEOF\n$(id)", "command substitution");
    refused("cat <<EOF\n`id`\nEOF", /substitution/);
    refused("cat <<A <<B\na\nA\n`id`\nB", /substitution/);
    // Unquoted, the body expands: ${…} with operators there is refused like anywhere else.
    refused("cat <<EOF\n${x:-y}\nEOF", "uses operators the classifier does not evaluate");
    accepted("cat <<'EOF'\n${x:-y}\nEOF");
    // After the body ends, the next line is a command again.
    refused("cat <<EOF\nx\nEOF\nrm y", '"rm" is not a known read-only command');
  });

  it("marks a word dynamic for a glob, a brace pattern or an expansion, unless quoted", () => {
    for (const word of [
      "a*",
      "a?",
      "a[b]",
      "{a,b}",
      "{a..c}",
      "$x",
      "${x}",
      "$1",
      "$?",
      "$@",
      "$'x'",
      '$"x"',
      '"$x"',
    ]) {
      refused(`sort ${word}`, "expanded at run time");
    }
    for (const word of [
      "'a*'",
      '"a?"',
      "a\\*",
      "a[",
      "{a}",
      "'{a,b}'",
      "{a'..'b}",
      "$",
      "a$",
      "'$x'",
      "\\$x",
    ]) {
      accepted(`sort ${word}`);
    }
  });

  it("knows a descriptor only as unquoted digits touching the operator", () => {
    refused("ls 2>x", "the output redirection 2>x writes to a file");
    refused("ls a2>x", "the output redirection >x writes to a file");
    refused("ls '2'>x", "the output redirection >x writes to a file");
    accepted("ls 10>&2");
  });

  it("tells an assignment from a word that only contains =", () => {
    refused("a+=1 ls", "variable assignment a+=1");
    refused("_x1=1 ls", "variable assignment _x1=1");
    refused("1a=b ls", '"1a=b" is not a known read-only command');
    refused("'A'=1 ls", '"A=1" is not a known read-only command');
    refused("A\\=1 ls", '"A=1" is not a known read-only command');
    refused("=1 ls", '"=1" is not a known read-only command');
    refused("a-b=1 ls", '"a-b=1" is not a known read-only command');
  });

  it("reads comments only at the start of a word, and joins continued lines", () => {
    accepted("ls a#b");
    accepted("ls #; rm x");
    accepted("l\\\ns");
    accepted("ls \\\n-l");
    refused("ls a#b; rm x", '"rm" is not a known read-only command');
    // A comment ends at the newline: what follows is a command again.
    refused("ls # c\nrm x", '"rm" is not a known read-only command');
  });

  it("reads a redirection's target after blanks and line continuations, and names what it refuses there", () => {
    accepted("ls 2> /dev/null");
    accepted("ls 2>\t/dev/null");
    accepted("ls >\\\n/dev/null");
    refused("ls > \\x", "the output redirection >\\x writes to a file");
    refused("cat < (ls)", "process substitution <(…) / >(…) runs a command");
  });

  it("ends a here-document only at its delimiter: tabs stripped for <<- only, all of them, at the start only", () => {
    // What follows a line that is not the delimiter is body text, not a command.
    accepted("cat <<EOF\n\tEOF\nrm x\nEOF");
    accepted("cat <<-EOF\nEOF\t\nrm x\nEOF");
    accepted("cat <<-EOF\n\t\tEOF");
    accepted("cat <<EOF\nabc\nEOF");
  });
});
