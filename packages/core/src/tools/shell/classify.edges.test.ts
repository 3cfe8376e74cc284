// Edges of the classifier that mutation testing found unguarded: the limits, the reason it gives, the
// per-word check after quote removal, $'…' decoding, redirections. Fast, unlike classify.test.ts's
// differential tests against bash, so a mutation run over them is cheap.
import { describe, expect, it } from "vitest";
import { accepted, refused } from "../../test-support/shell-testing.js";
import { classifyShellCommand } from "./classify.js";

describe("classifyShellCommand: edges mutation testing found unguarded", () => {
  it("refuses what is not a string, and a line longer than 64 KiB, at the limit exactly", () => {
    expect(classifyShellCommand(5 as never)).toEqual({
      readOnly: false,
      reason: "the command is not a string",
    });
    const atLimit = `ls ${"a".repeat(64 * 1024 - 3)}`;
    expect(atLimit).toHaveLength(64 * 1024);
    accepted(atLimit);
    refused(`${atLimit}a`, "the command is longer than 65536 characters");
  });

  it("names the commands it checked, once each, in order", () => {
    expect(classifyShellCommand("ls; cat x | ls && grep y z").reason).toBe(
      "every command is a known read-only command (ls, cat, grep)",
    );
    expect(classifyShellCommand(">/dev/null").reason).toBe("only redirections to /dev/null");
  });

  it("checks each word's value after quote removal, not only the line as written", () => {
    // Escaped, the line holds no `$(`; the word bash passes on does.
    refused("echo \\$\\(id\\)", "command substitution");
    refused("cat /dev//tcp/127.0.0.1/80", "names /dev/tcp or /dev/udp");
  });

  it("decodes $'…' the way bash does before looking for code: octal, \\u, \\U and \\x escapes", () => {
    for (const command of [
      "echo $'\\044(id)'",
      "echo $'\\74(id)'",
      "echo $'\\u0024(id)'",
      "echo $'\\U00000024(id)'",
      "echo $'\\x24(id)'",
    ]) {
      refused(command, /substitution/);
    }
    // Escapes that decode to nothing dangerous, or to no character at all, are fine.
    accepted("echo $'\\cA\\t\\e\\q\\U00110000'");
  });

  it("refuses a redirection whose target becomes /dev/tcp or /dev/udp only after quote removal", () => {
    // The line never reads "/dev/tcp", so only the redirection's own check sees it (bash connects).
    refused(
      'cat <"/dev/"tcp/127.0.0.1/80',
      'the redirection <"/dev/"tcp/127.0.0.1/80 opens a network connection',
    );
    refused(
      "echo x >/dev/\\udp/127.0.0.1/53",
      "the redirection >/dev/\\udp/127.0.0.1/53 opens a network connection",
    );
    // Extra slashes are refused too, whether or not this bash would connect through them.
    refused('cat <"/dev//"tcp/127.0.0.1/80', "opens a network connection");
  });

  it("refuses a known command run by its path, saying so", () => {
    // /bin/cat may be anything on the executor's file system, whatever its name.
    refused("/bin/cat f", '"/bin/cat" is run by path');
    refused("./ls", '"./ls" is run by path');
  });

  it("says which redirection it refused, descriptor included", () => {
    refused("ls 2>out", "the output redirection 2>out writes to a file");
    refused("cat < ~/x", "the input redirection <~/x has a target known only at run time");
    accepted("cat < a~");
    refused("cat <&x", "the redirection <&x is not a descriptor duplication");
    refused("cat <&$fd", "is not a descriptor duplication");
    refused("cat <&/dev/null", "is not a descriptor duplication");
    accepted("cat <&3");
    accepted("cat <&-");
    accepted("cat <<-EOF\n\tx\n\tEOF");
    refused("ls >&$fd", "writes to a file");
    accepted("ls 2>&1-");
  });
});
