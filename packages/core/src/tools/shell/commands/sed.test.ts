// The sed validator, through the whole classifier.
import { describe, it } from "vitest";
import { accepted, refused } from "../../../test-support/shell-testing.js";

describe("sed", () => {
  it("refuses sed -i, --in-place, -i.bak, -ni and the w, W, e commands and flags", () => {
    for (const command of [
      "sed -i s/a/b/ f",
      "sed --in-place s/a/b/ f",
      "sed -i.bak s/a/b/ f",
      "sed -ni p f",
      "sed -n -i p f",
    ]) {
      refused(command, "in place");
    }
    refused("sed 's/a/b/w out' f", "writes");
    refused("sed 's/a/b/gw out' f", "writes");
    refused("sed 'w out' f", "writes");
    refused("sed 'W out' f", "writes");
    refused("sed 'e ls' f", "runs");
    refused("sed 's/a/b/e' f", "runs");
    refused("sed -n '/a/{p;w out\n}' f", "writes");
    accepted("sed -n 's/we/ew/p' f");
  });

  it("reads every address form and every reading command, alone and in lists", () => {
    for (const script of [
      "p",
      "1d",
      "$d",
      "1,3p",
      "1~2p",
      "2,+3p",
      "2,~4p",
      "/a/,/b/p",
      "\\,a,p",
      "/a/Ip",
      "/a/M p",
      "/a\\/b/p",
      "1!d",
      "1 ! ! d",
      "{p}",
      "1,2{p;p}",
      "# a comment",
      "p # a comment",
      "a\\\ntext",
      "a text",
      "i\\ x",
      "c x",
      "r file",
      "R file",
      ":a;N;ba",
      "b",
      "t x",
      "T",
      "v",
      "=",
      "l 5",
      "q 3",
      "Q",
      "y/abc/xyz/",
      "s/a/b/3gpiImM",
      "s|a/b|c|",
      "s/a\\/x/b/",
      "z;F;x;h;H;g;G;n;N;P;D",
      "p\n\n;;p",
    ]) {
      accepted(`sed -n '${script}' f`);
    }
    accepted("sed -e p -e d f");
    accepted("sed --expression=p f");
    accepted("sed --expression p f");
    accepted("sed -n");
  });

  it("finds a writing command behind any address, in any list or block, in any script", () => {
    for (const script of [
      "p;w out",
      "1w out",
      "$w out",
      "/x/w out",
      "1,3w out",
      "1~2w out",
      "2,+3w out",
      "2,~3w out",
      "\\,x,w out",
      "/x/Iw out",
      "1!w out",
      "{w out\n}",
      "y/a/b/;w out",
      "s/a/b/;w out",
      "s/a\\/x/b/w out",
      "s|a|b|w out",
      "s/a/b/3w out",
      "a text\nw out",
      "b end;w out",
      "l;w out",
      "q5;w out",
      "=;W out",
      "# comment\nw out",
    ]) {
      refused(`sed '${script}' f`, /writes to a file/);
    }
    refused("sed -e p -e 'w out' f", "writes to a file");
    refused("sed --expression='w out' f", "writes to a file");
    refused("sed --expression 'w out' f", "writes to a file");
    refused("sed 's/a/b/Ie' f", "runs the result as a shell command");
    refused("sed '1e id' f", "e command runs a shell command");
  });

  it("refuses a script it cannot follow, or one whose text a sed version could end at a ;", () => {
    refused("sed 'a x;w out' f", 'the text of the a command contains ";"');
    refused("sed 'r f;w out' f", 'the text of the r command contains ";"');
    refused("sed '}' f", "unexpected }");
    refused("sed '{p' f", "unbalanced braces");
    refused("sed 'p x' f", 'unexpected "x" after the p command');
    refused("sed 'k' f", 'command "k" is not understood');
    refused("sed '1' f", 'command "" is not understood');
    refused("sed 's' f", "s command not understood");
    refused("sed 's\\a\\b\\' f", "s command not understood");
    refused("sed 's/a/b' f", "unterminated s command");
    refused("sed 'y/a/' f", "unterminated y command");
    refused("sed '/abc' f", "address not understood");
    refused("sed '1,' f", "address not understood");
    refused("sed '\\' f", "address not understood");
  });

  it("refuses a script it cannot see: from a file, or an option without its script", () => {
    refused("sed -f script f", "sed -f reads its script from a file");
    refused("sed --file=script f", "sed --file reads its script");
    refused("sed --fi=script f", "sed --file reads its script");
    refused("sed -e", "sed -e has no script");
    refused("sed --expression", "write sed --expression=SCRIPT or -e SCRIPT");
  });

  it("ends a, i and c text where GNU sed 4.9 ends it: an escaped backslash does not continue the line", () => {
    // `a\\` then a newline is the text `\`, and the next line is a command: sed writes `out`. This
    // was accepted as read-only (the first backslash was skipped as `a\`, the second then escaped the
    // newline). Each case below was checked against GNU sed 4.9: `out` is written exactly when refused.
    for (const script of [
      "a\\\\\nw out",
      "i\\\\\nw out",
      "c\\\\\nw out",
      "a \\\\\nw out",
      "1a\\\\\\\\\nw out",
    ]) {
      refused(`sed '${script}' f`, "writes to a file");
    }
    for (const script of ["a\\\nw out", "c\\\nw out", "a x\\\nw out", "a\\\\\\\nw out", "a\\\\x\\\nw out"]) {
      accepted(`sed '${script}' f`);
    }
    // Text of odd length, then a command: the text ends at the newline, not one character later.
    refused("sed 'a txt\nw out' f", "writes to a file");
    refused("sed 'a x\nw out' f", "writes to a file");
    // sed joins -e scripts with newlines: the same reading across them.
    accepted("sed -e 'a\\' -e 'w out' f");
    refused("sed -e 'a\\\\' -e 'w out' f", "writes to a file");
  });

  it("checks only the a, i, c and r text for a ;, not the rest of the script", () => {
    refused("sed 'a ;w out' f", 'the text of the a command contains ";"');
    refused("sed 'a\\;w out' f", 'the text of the a command contains ";"');
    accepted("sed -n 'p;a x' f");
    accepted("sed -n 'p;r file' f");
  });

  it("ends a label at a newline as well as at a ;", () => {
    refused("sed 'b end\nw out' f", "writes to a file");
    refused("sed 't end\nW out' f", "writes to a file");
  });

  it("ends a regular expression at a newline: what follows is not read as part of it", () => {
    refused("sed '/a\nw out\n/p' f", "address not understood");
    refused("sed '\\\nw out\np' f", "address not understood");
    refused("sed 's\nw out\nx\n' f", "s command not understood");
    // An escaped backslash ends before the delimiter: the w after it is a command.
    refused("sed '/\\\\/w out/p' f", "writes to a file");
    accepted("sed -n '//p' f");
  });

  it("skips blanks, empty commands and separators wherever sed does", () => {
    for (const script of [
      "p; ;p",
      "p;\t;p",
      "p;",
      "p\n",
      "p;;",
      "p; ",
      "p\n\n",
      "1,\t3\tp",
      "# a; b",
      "L",
      "l  5",
    ]) {
      accepted(`sed -n '${script}' f`);
    }
    refused("sed 'F 5' f", 'unexpected "5" after the F command');
    refused("sed 'y/a/b/g' f", 'unexpected "g" after the y command');
  });

  it("reads long options: only --expression holds a script, and --line-length takes the next word", () => {
    accepted("sed --quiet p f");
    accepted("sed --regexp-extended -n p f");
    accepted("sed --line-length 5 -n l f");
  });
});
