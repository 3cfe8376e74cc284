import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accepted, bash, bashPath, refused, SHELL_ALPHABET } from "../../test-support/shell-testing.js";
import { classifyShellCommand } from "./classify.js";
import { READ_ONLY_SHELL_COMMANDS } from "./commands/index.js";
import { SHELL_CORPUS } from "./corpus.js";

describe("classifyShellCommand: labelled corpus", () => {
  it("has at least 150 entries, both verdicts well represented, no duplicates", () => {
    expect(SHELL_CORPUS.length).toBeGreaterThanOrEqual(150);
    expect(SHELL_CORPUS.filter((entry) => entry.readOnly).length).toBeGreaterThanOrEqual(60);
    expect(SHELL_CORPUS.filter((entry) => !entry.readOnly).length).toBeGreaterThanOrEqual(60);
    expect(new Set(SHELL_CORPUS.map((entry) => entry.command)).size).toBe(SHELL_CORPUS.length);
  });

  it.each(SHELL_CORPUS.map((entry) => [JSON.stringify(entry.command), entry] as const))(
    "%s",
    (_, { command, readOnly, note }) => {
      const verdict = classifyShellCommand(command);
      expect(verdict.readOnly, `${note}: ${verdict.reason}`).toBe(readOnly);
      expect(verdict.reason.length).toBeGreaterThan(0);
    },
  );
});

describe("classifyShellCommand: the gaps of the earlier classifier", () => {
  it("refuses tee", () => {
    refused("tee x", "tee");
    refused("ls | tee -a x", "tee");
  });

  it("refuses here-strings but allows here-documents that feed a reader", () => {
    refused("cat <<< hi", "here-string");
    accepted("cat <<'EOF'\nx\nEOF");
    refused("cat <<'EOF'\n$(x)\nEOF", "substitution");
    refused("cat <<EOF\n$(x)\nEOF", "command substitution");
    refused("cat <<EOF >out\nx\nEOF", ">out");
    refused("cat <<EOF\nEO\\\nF\nrm -rf x\nEOF", "backslash continuation");
  });

  it("refuses every output redirection form except /dev/null and descriptor duplications", () => {
    for (const redirect of [">f", ">>f", ">|f", "&>f", "&>>f", "2>f", "1>f", "<>f", ">&f", "2>>f", "9>f"]) {
      refused(`ls ${redirect}`, "writes to a file");
    }
    for (const harmless of [
      ">/dev/null",
      "2>/dev/null",
      "&>/dev/null",
      "2>&1",
      "1>&2",
      ">&2",
      "3>&-",
      "<in",
    ]) {
      expect(classifyShellCommand(`ls ${harmless}`).readOnly, harmless).toBe(true);
    }
  });

  it("refuses command substitution, backquotes and process substitution wherever they appear", () => {
    for (const command of [
      "echo $(ls)",
      'echo "$(ls)"',
      "echo `ls`",
      'echo "`ls`"',
      "cat <(ls)",
      "ls >(cat)",
      "cat x<(ls)",
      "echo $((1))",
      "cat $(echo x)",
    ]) {
      refused(command, /substitution|arithmetic/);
    }
    // Quoted too: bash evaluates a quoted `$(…)` where a builtin reads it as an array subscript.
    refused("echo '$(ls)' '`ls`'", /substitution/);
  });

  it("refuses every construct bash evaluates as code, whatever the builtin and the quoting (#11 finding 1)", () => {
    for (const command of [
      "test -v 'x[$(touch marker; id >&2)]'",
      "[ -v 'x[$(id)]' ]",
      "printf -v 'x[$(id)]' %s y",
      "test -v $'x[\\x24(id)]'",
      "cat <<'EOF'\n`id`\nEOF",
      "test -v 'x[$[1]]'",
    ]) {
      refused(command, /substitution/);
    }
  });

  it("refuses a redirection that is or may be a network connection (#11 finding 2)", () => {
    for (const command of [
      "cat /proc/$PPID/environ </dev/tcp/127.0.0.1/9$?99 >&0",
      "cat </dev/tcp/127.0.0.1/80",
      "cat <//dev/tcp/127.0.0.1/80",
      "cat </./dev/udp/127.0.0.1/53",
      "cat <$HOME/x",
      "echo /dev/tcp/127.0.0.1/80",
    ]) {
      refused(command, /network|run time/);
    }
    accepted("cat <README.md");
  });

  it("refuses assignments, background jobs and unknown commands", () => {
    refused("PAGER=less git log", "assignment");
    refused("GIT_EXTERNAL_DIFF=x git diff", "assignment");
    refused("ls &", "background");
    refused("curl -o x http://a", "curl");
    refused("wget http://a", "wget");
  });

  it("refuses globs and variables as arguments of commands whose options write", () => {
    refused("sort *", "expanded at run time");
    refused("find $DIR -name x", "expanded at run time");
    refused("git log {a,b}", "expanded at run time");
    accepted("grep -l x *.md {a,b}.txt $F");
  });
});

describe("classifyShellCommand: properties", () => {
  // Lines with a comment or a here-document would swallow text appended to them.
  const readOnly = SHELL_CORPUS.filter(
    (entry) => entry.readOnly && !entry.command.includes("<<") && !entry.command.includes(" #"),
  ).map((entry) => entry.command);

  it("never throws, whatever the input", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 200 }), (command) => {
        const verdict = classifyShellCommand(command);
        expect(typeof verdict.readOnly).toBe("boolean");
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...SHELL_ALPHABET), { maxLength: 40 }), (parts) => {
        classifyShellCommand(parts.join(""));
      }),
      { numRuns: 3000 },
    );
  });

  it("turns any read-only line into a writer when a writer is added", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...readOnly),
        fc.constantFrom(
          (c: string) => `${c} > out`,
          (c: string) => `${c}; rm -rf x`,
          (c: string) => `rm x && ${c}`,
          (c: string) => `${c} | tee out`,
          (c: string) => `${c} &`,
          (c: string) => `X=1 ${c}`,
          (c: string) => `${c} $(rm x)`,
          (c: string) => `${c}\ntouch x`,
        ),
        (command, mutate) => {
          expect(classifyShellCommand(mutate(command)).readOnly).toBe(false);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("lists the known commands", () => {
    expect(READ_ONLY_SHELL_COMMANDS).toContain("grep");
    expect(READ_ONLY_SHELL_COMMANDS).not.toContain("tee");
  });
});

/**
 * Runs accepted lines under real bash with every program on PATH replaced by a stub that logs its argv,
 * in a directory holding hostile file names. Checks what bash really did against the verdict: no file
 * appeared (so no redirection wrote), and every program bash ran, with the arguments it really got
 * after globbing and variable expansion, is itself accepted.
 */
describe.skipIf(!bash)("what bash runs for an accepted line is read-only", () => {
  const HOSTILE_FILES = ["a.txt", "-delete", "-o", "-i", "--output=x", "-ofile"].sort();
  let root: string;
  let bin: string;
  let sandbox: string;
  let log: string;

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), "forkd-shell-exec-"));
    bin = join(root, "bin");
    sandbox = join(root, "sandbox");
    log = join(root, "log");
    mkdirSync(bin);
    for (const name of [...READ_ONLY_SHELL_COMMANDS, "rm", "touch", "tee", "mv"]) {
      if (name === "[") continue;
      // One printf per record keeps records whole when a pipeline's stubs log at the same time.
      const script = `#!${bashPath}\nr="${name}"; for a in "$@"; do r+=$'\\x02'"$a"; done; printf '%s\\x01' "$r" >> "$FORKD_EXEC_LOG"\n`;
      writeFileSync(join(bin, name), script);
      chmodSync(join(bin, name), 0o755);
    }
  });

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  const TOKENS = [
    ...[
      "ls",
      "cat",
      "grep",
      "sort",
      "sed",
      "find",
      "git",
      "xargs",
      "env",
      "echo",
      "printf",
      "uniq",
      "rm",
      "touch",
    ],
    ...[
      "tee",
      "awk",
      "date",
      "tree",
      " ",
      " ",
      "-o",
      "x",
      "-i",
      "*",
      "$X",
      '"$X"',
      "'a b'",
      "-delete",
      "s/a/b/",
    ],
    ...[
      "log",
      "status",
      "-n",
      "a.txt",
      ";",
      "&&",
      "||",
      "|",
      "\n",
      ">/dev/null",
      "2>&1",
      ">out",
      "<a.txt",
      "{ ",
    ],
    ...[" }", "(", ")", "if ", " then ", " fi", "for i in a b; do ", " done", "!", "=", "\\", "'", '"'],
  ];
  const quote = (word: string): string => `'${word.replaceAll("'", "'\\''")}'`;

  it("agrees with bash on random lines", { timeout: 120_000 }, () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...TOKENS), { minLength: 1, maxLength: 9 }), (parts) => {
        const line = parts.join(" ");
        if (!classifyShellCommand(line).readOnly) return;
        accepted++;
        rmSync(sandbox, { recursive: true, force: true });
        mkdirSync(sandbox);
        for (const file of HOSTILE_FILES) writeFileSync(join(sandbox, file), "");
        rmSync(log, { force: true });
        spawnSync(bashPath, ["--noprofile", "--norc", "-c", line], {
          cwd: sandbox,
          timeout: 5_000,
          stdio: "ignore",
          env: { PATH: bin, FORKD_EXEC_LOG: log, X: "-o out", HOME: root },
        });
        expect(readdirSync(sandbox).sort(), line).toEqual(HOSTILE_FILES);
        const records = existsSync(log) ? readFileSync(log, "utf8").split("\x01").filter(Boolean) : [];
        for (const record of records) {
          const argv = record.split("\x02");
          const verdict = classifyShellCommand(argv.map(quote).join(" "));
          expect(
            verdict.readOnly,
            `${JSON.stringify(line)} ran ${JSON.stringify(argv)}: ${verdict.reason}`,
          ).toBe(true);
        }
      }),
      { numRuns: 3_000 },
    );
    expect(accepted).toBeGreaterThan(100);
  });
});
