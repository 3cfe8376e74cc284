// The tokenizer against real bash: the words it reads are the words bash passes to a program.
import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bash, bashPath } from "../../test-support/shell-testing.js";
import { classifyShellCommand, splitShellWords } from "./classify.js";

/** The words bash passes to a command for `line`, or undefined when bash rejects the line. */
function bashWords(line: string): string[] | undefined {
  const result = spawnSync(bashPath, ["--noprofile", "--norc", "-c", `printf '%s\\0' ${line}`], {
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" },
  });
  if (result.status !== 0) return undefined;
  return result.stdout.split("\0").slice(0, -1);
}

describe.skipIf(!bash)("the tokenizer agrees with bash", () => {
  const samples = [
    "a 'b c' \"d e\"",
    "a\\ b",
    '"a\\"b"',
    "'a'\"b\"c",
    '"\\$x"',
    '"a\\\\b"',
    '"a\\qb"',
    "a\\\nb",
    '"line\\\ncont"',
    "'' \"\"",
    "a#b",
    "a #comment",
    '"#"',
    "'\\n'",
    '"$"',
    "a$",
    "x{} {}",
    "a=b --opt='v w'",
    '"\\`"',
    "'é' \"ü\"",
    "-- -delete",
    "'it'\\''s'",
  ];

  it.each(samples.map((sample) => [JSON.stringify(sample), sample] as const))("%s", (_, sample) => {
    const ours = splitShellWords(sample);
    expect(ours).toBeDefined();
    expect(ours).toEqual(bashWords(sample));
  });

  it("does not claim to understand a trailing backslash, whose meaning bash makes depend on the lines before it", () => {
    // Found by the property below: bash keeps the backslash of `a\` but drops the one of `'\<newline>'\`.
    expect(splitShellWords("'\\\n'\\")).toBeUndefined();
    expect(splitShellWords("cat a\\")).toBeUndefined();
    expect(classifyShellCommand("cat a\\").readOnly).toBe(false);
  });

  it("agrees on random lines made of quoting characters", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.constantFrom(
            "a",
            "b",
            " ",
            "'",
            '"',
            "\\",
            "\\\n",
            "$",
            "#",
            "=",
            "-",
            "\n",
            "x",
            "{",
            "}",
            "(",
            ";",
          ),
          {
            maxLength: 16,
          },
        ),
        (parts) => {
          const line = parts.join("");
          const ours = splitShellWords(line);
          // Lines the tokenizer accepts as literal words must give bash's words; newlines make several commands.
          // (printf with no words still prints once, so the empty line is skipped too.)
          if (ours === undefined || ours.length === 0 || line.replaceAll("\\\n", "").includes("\n")) return;
          expect(ours).toEqual(bashWords(line));
        },
      ),
      { numRuns: 150 },
    );
    // 150 bash processes: on a loaded 2-core machine this can take longer than the default 5 s.
  }, 30_000);
});
