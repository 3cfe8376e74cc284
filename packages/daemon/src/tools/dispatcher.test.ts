// The built-in file tools on real temporary directories, real files and real symlinks.
import { mkdir, mkdtemp, readFile, realpath, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolCall, ToolDispatcher, ToolExecutionContext, ToolOutcome } from "@forkd/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type BuiltinToolDispatcherOptions, createBuiltinToolDispatcher } from "./dispatcher.js";

let root: string; // holds the workspace and, beside it, a directory outside it
let ws: string;
let outside: string;

beforeEach(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), "forkd-tools-")));
  ws = join(root, "ws");
  outside = join(root, "outside");
  await mkdir(ws);
  await mkdir(outside);
  await writeFile(join(outside, "secret.txt"), "TOP SECRET\n");
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

let callId = 0;
function call(name: string, input: unknown): ToolCall {
  callId++;
  return { id: `toolu_${callId}`, name, input };
}

function context(overrides: Partial<ToolExecutionContext> = {}): ToolExecutionContext {
  return { runId: "run-1", turn: 1, cwd: ws, signal: new AbortController().signal, ...overrides };
}

function dispatcher(options: Partial<BuiltinToolDispatcherOptions> = {}): ToolDispatcher {
  return createBuiltinToolDispatcher({ workspace: ws, bashPolicy: "full", ...options });
}

async function run(name: string, input: unknown, options: Partial<BuiltinToolDispatcherOptions> = {}) {
  return dispatcher(options).execute(call(name, input), context());
}

function expectOk(outcome: ToolOutcome): string {
  expect(outcome.isError, outcome.content).toBe(false);
  return outcome.content;
}

function expectError(outcome: ToolOutcome, fragment: string | RegExp): void {
  expect(outcome.isError, outcome.content).toBe(true);
  if (typeof fragment === "string") expect(outcome.content).toContain(fragment);
  else expect(outcome.content).toMatch(fragment);
}

/** Sets a file's modification time, in seconds since the epoch. */
async function touch(path: string, seconds: number): Promise<void> {
  await utimes(path, seconds, seconds);
}

describe("Read", () => {
  it("numbers lines like cat -n and reads a window with offset and limit", async () => {
    await writeFile(join(ws, "a.txt"), "one\ntwo\r\nthree\nfour\n");
    expect(expectOk(await run("Read", { file_path: "a.txt" }))).toBe(
      "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour",
    );
    const window = expectOk(await run("Read", { file_path: join(ws, "a.txt"), offset: 2, limit: 2 }));
    expect(window).toBe(
      "     2\ttwo\n     3\tthree\n(lines 2–3 shown; the file goes on: pass offset=4 to read more)",
    );
  });

  it("accepts numbers given as strings and nulls for absent fields", async () => {
    await writeFile(join(ws, "a.txt"), "one\ntwo\n");
    expect(expectOk(await run("Read", { file_path: "a.txt", offset: "2", limit: null }))).toBe("     2\ttwo");
  });

  it("explains missing files, directories, binary files, empty files and offsets past the end", async () => {
    expectError(await run("Read", { file_path: "nope.txt" }), "File does not exist");
    await mkdir(join(ws, "dir"));
    expectError(await run("Read", { file_path: "dir" }), "is a directory");
    await writeFile(join(ws, "bin"), Buffer.from([1, 2, 0, 3]));
    expectError(await run("Read", { file_path: "bin" }), "binary file");
    await writeFile(join(ws, "empty"), "");
    expect(expectOk(await run("Read", { file_path: "empty" }))).toContain("is empty");
    await writeFile(join(ws, "short"), "a\nb\n");
    expectError(await run("Read", { file_path: "short", offset: 10 }), "past the end");
    expectError(await run("Read", { file_path: 42 }), "Invalid input for Read: file_path");
  });

  it("cuts long lines and caps the output with a marker telling how to read on", async () => {
    await writeFile(join(ws, "long"), `${"x".repeat(5000)}\nshort\n`);
    const long = expectOk(await run("Read", { file_path: "long" }));
    expect(long).toContain("… [line cut]");
    expect(long.length).toBeLessThan(2100);

    const lines = Array.from({ length: 1000 }, (_, i) => `line number ${i + 1}`).join("\n");
    await writeFile(join(ws, "big"), lines);
    const capped = expectOk(await run("Read", { file_path: "big" }, { outputCapBytes: 500 }));
    expect(Buffer.byteLength(capped)).toBeLessThan(700);
    expect(capped).toMatch(
      /\[output truncated: [\d,]+ of [\d,]+ bytes of the file not shown; pass offset=\d+ to read on\]$/,
    );
  });
});

describe("Glob", () => {
  it("shows the newest 100 of more matches, newest first, equal times by path, and says how many there were", async () => {
    // 101 files whose times are shuffled (37 steps around 101), the last one tying with the newest.
    await mkdir(join(ws, "many"));
    const seconds = Array.from({ length: 101 }, (_, i) => 1_000_000 + ((i * 37) % 101));
    seconds[100] = 1_000_100;
    for (const [i, second] of seconds.entries()) {
      const path = join(ws, "many", `f${String(i).padStart(3, "0")}.txt`);
      await writeFile(path, "");
      await touch(path, second);
    }
    const expected = seconds
      .map((second, i) => ({ second, path: join(ws, "many", `f${String(i).padStart(3, "0")}.txt`) }))
      .sort((a, b) => b.second - a.second || (a.path < b.path ? -1 : 1))
      .map((file) => file.path);
    const shown = expectOk(await run("Glob", { pattern: "many/*.txt" })).split("\n");
    expect(shown.slice(0, 100)).toEqual(expected.slice(0, 100));
    expect(shown[100]).toBe(
      "(Results are truncated: 100 of 101 files shown. Use a more specific path or pattern.)",
    );
    // Exactly 100: all shown, no note.
    await rm(expected[100]!);
    expect(expectOk(await run("Glob", { pattern: "many/*.txt" })).split("\n")).toEqual(
      expected.slice(0, 100),
    );
  });

  it("lists matches newest first, skipping .git and node_modules", async () => {
    await mkdir(join(ws, "src/deep"), { recursive: true });
    await mkdir(join(ws, "node_modules/pkg"), { recursive: true });
    await mkdir(join(ws, ".git"));
    await writeFile(join(ws, "src/old.ts"), "");
    await writeFile(join(ws, "src/deep/new.ts"), "");
    await writeFile(join(ws, "src/readme.md"), "");
    await writeFile(join(ws, "node_modules/pkg/index.ts"), "");
    await writeFile(join(ws, ".git/x.ts"), "");
    await touch(join(ws, "src/old.ts"), 1_000_000);
    await touch(join(ws, "src/deep/new.ts"), 2_000_000);
    expect(expectOk(await run("Glob", { pattern: "**/*.ts" }))).toBe(
      [join(ws, "src/deep/new.ts"), join(ws, "src/old.ts")].join("\n"),
    );
    expect(expectOk(await run("Glob", { pattern: "*.{md,ts}", path: "src" }))).toBe(
      [join(ws, "src/readme.md"), join(ws, "src/old.ts")].join("\n"),
    );
    expect(expectOk(await run("Glob", { pattern: "node_modules/**/*.ts" }))).toBe(
      join(ws, "node_modules/pkg/index.ts"),
    );
    expect(expectOk(await run("Glob", { pattern: "src/deep/new.ts" }))).toBe(join(ws, "src/deep/new.ts"));
    expect(expectOk(await run("Glob", { pattern: "**/*.rs" }))).toBe("No files found");
  });

  it("caps the number of paths and says so", async () => {
    for (let i = 0; i < 120; i++) await writeFile(join(ws, `f${i}.txt`), "");
    const out = expectOk(await run("Glob", { pattern: "*.txt" }));
    const lines = out.split("\n");
    expect(lines).toHaveLength(101);
    expect(lines[100]).toContain("Results are truncated: 100 of 120 files shown");
  });

  it("refuses a path that is missing or a file", async () => {
    expectError(await run("Glob", { pattern: "*", path: "missing" }), "does not exist");
    await writeFile(join(ws, "f"), "");
    expectError(await run("Glob", { pattern: "*", path: "f" }), "is a file");
  });
});

describe("Grep", () => {
  beforeEach(async () => {
    await mkdir(join(ws, "src"));
    await writeFile(join(ws, "src/a.ts"), "import x\nconst Alpha = 1;\nconst beta = 2;\nexport { Alpha };\n");
    await writeFile(join(ws, "src/b.js"), "const alpha = 3;\n");
    await writeFile(join(ws, "notes.md"), "nothing here\n");
    await writeFile(join(ws, "blob.bin"), Buffer.from("alpha\0alpha"));
    await touch(join(ws, "src/a.ts"), 1_000_000);
    await touch(join(ws, "src/b.js"), 2_000_000);
  });

  it("lists matching files newest first by default, skipping binary files", async () => {
    expect(expectOk(await run("Grep", { pattern: "alpha", "-i": true }))).toBe(
      `Found 2 files\n${join(ws, "src/b.js")}\n${join(ws, "src/a.ts")}`,
    );
    expect(expectOk(await run("Grep", { pattern: "(?i)ALPHA" }))).toContain("Found 2 files");
    expect(expectOk(await run("Grep", { pattern: "zzz" }))).toBe("No files found");
  });

  it("reads a CRLF file's lines without their \\r in every output mode, so `$` matches at a line's end", async () => {
    const crlf = join(ws, "crlf.txt");
    await writeFile(crlf, "one\r\ntwo\r\nthree\r\n");
    const path = "crlf.txt";
    expect(expectOk(await run("Grep", { pattern: "e$", path, output_mode: "content" }))).toBe(
      "1:one\n3:three",
    );
    expect(expectOk(await run("Grep", { pattern: "e$", path, output_mode: "count" }))).toMatch(
      new RegExp(`^${crlf}:2\n`),
    );
    expect(expectOk(await run("Grep", { pattern: "o$", path }))).toBe(`Found 1 file\n${crlf}`);
  });

  it("shows content with line numbers and context, like ripgrep", async () => {
    const a = join(ws, "src/a.ts");
    expect(expectOk(await run("Grep", { pattern: "Alpha", output_mode: "content" }))).toBe(
      `${a}:2:const Alpha = 1;\n${a}:4:export { Alpha };`,
    );
    expect(expectOk(await run("Grep", { pattern: "beta", output_mode: "content", "-C": 1 }))).toBe(
      `${a}-2-const Alpha = 1;\n${a}:3:const beta = 2;\n${a}-4-export { Alpha };`,
    );
    expect(
      expectOk(await run("Grep", { pattern: "import|export", output_mode: "content", "-n": false, "-A": 0 })),
    ).toBe(`${a}:import x\n${a}:export { Alpha };`);
    // A single file as path: no file name, as ripgrep prints it.
    expect(expectOk(await run("Grep", { pattern: "beta", path: "src/a.ts", output_mode: "content" }))).toBe(
      "3:const beta = 2;",
    );
  });

  it("separates non-adjacent context groups with --", async () => {
    await writeFile(join(ws, "g.txt"), "m1\nx\nx\nx\nm2\n");
    expect(
      expectOk(await run("Grep", { pattern: "^m", path: "g.txt", output_mode: "content", context: 1 })),
    ).toBe("1:m1\n2-x\n--\n4-x\n5:m2");
  });

  it("counts matching lines per file", async () => {
    const out = expectOk(await run("Grep", { pattern: "alpha", "-i": true, output_mode: "count" }));
    expect(out).toBe(
      `${join(ws, "src/a.ts")}:2\n${join(ws, "src/b.js")}:1\n\nFound 3 matching lines across 2 files.`,
    );
  });

  it("filters by glob and by type, and pages with offset and head_limit", async () => {
    expect(expectOk(await run("Grep", { pattern: "alpha", "-i": true, glob: "*.js" }))).toBe(
      `Found 1 file\n${join(ws, "src/b.js")}`,
    );
    expect(expectOk(await run("Grep", { pattern: "alpha", "-i": true, type: "ts" }))).toBe(
      `Found 1 file\n${join(ws, "src/a.ts")}`,
    );
    expectError(await run("Grep", { pattern: "a", type: "cobol" }), "Unknown file type");
    const page = expectOk(
      await run("Grep", { pattern: "const", output_mode: "content", offset: 1, head_limit: 1 }),
    );
    expect(page).toBe(
      `${join(ws, "src/a.ts")}:3:const beta = 2;\n(showing 1 of 3 lines from offset 1; use offset/head_limit to see more)`,
    );
  });

  it("matches across lines in multiline mode", async () => {
    const out = expectOk(
      await run("Grep", { pattern: "Alpha = 1;\\nconst beta", multiline: true, output_mode: "content" }),
    );
    expect(out).toBe(`${join(ws, "src/a.ts")}:2:const Alpha = 1;\n${join(ws, "src/a.ts")}:3:const beta = 2;`);
  });

  it("explains an invalid regular expression", async () => {
    expectError(await run("Grep", { pattern: "(unclosed" }), "Invalid regular expression");
  });
});

describe("Write and Edit", () => {
  it("creates a file with its parent directories, then overwrites it", async () => {
    expect(expectOk(await run("Write", { file_path: "new/dir/f.txt", content: "hello\n" }))).toContain(
      "Created",
    );
    expect(await readFile(join(ws, "new/dir/f.txt"), "utf8")).toBe("hello\n");
    expect(expectOk(await run("Write", { file_path: join(ws, "new/dir/f.txt"), content: "bye" }))).toContain(
      "Overwrote",
    );
    expect(await readFile(join(ws, "new/dir/f.txt"), "utf8")).toBe("bye");
    expectError(await run("Write", { file_path: "new", content: "x" }), "is a directory");
  });

  it("replaces exactly one occurrence and shows the edited lines", async () => {
    await writeFile(join(ws, "e.txt"), "a\nb\nc\n");
    const out = expectOk(await run("Edit", { file_path: "e.txt", old_string: "b", new_string: "B\nB2" }));
    expect(out).toContain("replaced 1 occurrence");
    expect(out).toContain("     2\tB\n     3\tB2");
    expect(await readFile(join(ws, "e.txt"), "utf8")).toBe("a\nB\nB2\nc\n");
  });

  it("requires a unique match unless replace_all", async () => {
    await writeFile(join(ws, "e.txt"), "x = 1\nx = 1\n");
    expectError(
      await run("Edit", { file_path: "e.txt", old_string: "x = 1", new_string: "y" }),
      "occurs 2 times",
    );
    expect(await readFile(join(ws, "e.txt"), "utf8")).toBe("x = 1\nx = 1\n");
    const out = await run("Edit", {
      file_path: "e.txt",
      old_string: "x = 1",
      new_string: "y = $&",
      replace_all: true,
    });
    expect(expectOk(out)).toContain("replaced 2 occurrences");
    expect(await readFile(join(ws, "e.txt"), "utf8")).toBe("y = $&\ny = $&\n");
  });

  it("explains what to fix when an edit cannot apply", async () => {
    await writeFile(join(ws, "e.txt"), "abc\n");
    expectError(
      await run("Edit", { file_path: "e.txt", old_string: "zzz", new_string: "y" }),
      "was not found",
    );
    expectError(await run("Edit", { file_path: "e.txt", old_string: "abc", new_string: "abc" }), "identical");
    expectError(
      await run("Edit", { file_path: "nope.txt", old_string: "a", new_string: "b" }),
      "does not exist",
    );
    expectError(
      await run("Edit", { file_path: "e.txt", old_string: "", new_string: "b" }),
      "old_string is empty",
    );
    expect(
      expectOk(await run("Edit", { file_path: "fresh.txt", old_string: "", new_string: "new\n" })),
    ).toContain("Created");
    expect(await readFile(join(ws, "fresh.txt"), "utf8")).toBe("new\n");
  });

  it("matches text written with \\n in a file that uses \\r\\n", async () => {
    await writeFile(join(ws, "crlf.txt"), "one\r\ntwo\r\nthree\r\n");
    expectOk(await run("Edit", { file_path: "crlf.txt", old_string: "one\ntwo", new_string: "1\n2" }));
    expect(await readFile(join(ws, "crlf.txt"), "utf8")).toBe("1\r\n2\r\nthree\r\n");
  });
});

describe("confinement to the workspace", () => {
  it("refuses .. and absolute paths that leave the workspace", async () => {
    expectError(await run("Read", { file_path: "../outside/secret.txt" }), "Path refused");
    expectError(await run("Read", { file_path: join(outside, "secret.txt") }), "outside the workspace");
    expectError(await run("Write", { file_path: "../outside/new.txt", content: "x" }), "Path refused");
    expectError(
      await run("Edit", { file_path: join(outside, "secret.txt"), old_string: "TOP", new_string: "x" }),
      "Path refused",
    );
    expectError(await run("Glob", { pattern: "../outside/*" }), "Path refused");
    expectError(await run("Glob", { pattern: "*", path: outside }), "Path refused");
    expectError(await run("Grep", { pattern: "SECRET", path: ".." }), "Path refused");
    await expect(stat(join(outside, "new.txt"))).rejects.toThrow();
    expect(await readFile(join(outside, "secret.txt"), "utf8")).toBe("TOP SECRET\n");
  });

  it("refuses symlinks that point outside, for reading, writing and searching", async () => {
    await symlink(join(outside, "secret.txt"), join(ws, "link.txt"));
    await symlink(outside, join(ws, "linkdir"));
    expectError(await run("Read", { file_path: "link.txt" }), "Path refused");
    expectError(await run("Write", { file_path: "linkdir/planted.txt", content: "x" }), "Path refused");
    expectError(await run("Write", { file_path: "link.txt", content: "x" }), "Path refused");
    expectError(await run("Read", { file_path: "linkdir/secret.txt" }), "Path refused");
    expect(expectOk(await run("Grep", { pattern: "SECRET" }))).toBe("No files found");
    await expect(stat(join(outside, "planted.txt"))).rejects.toThrow();
    expect(await readFile(join(outside, "secret.txt"), "utf8")).toBe("TOP SECRET\n");
  });

  it("follows symlinks that stay inside", async () => {
    await writeFile(join(ws, "real.txt"), "inside\n");
    await symlink(join(ws, "real.txt"), join(ws, "alias.txt"));
    expect(expectOk(await run("Read", { file_path: "alias.txt" }))).toBe("     1\tinside");
    expect(expectOk(await run("Grep", { pattern: "inside" }))).toContain("Found 2 files");
  });

  it("resolves relative paths against the run's cwd and refuses a cwd outside", async () => {
    await mkdir(join(ws, "sub"));
    await writeFile(join(ws, "sub/f.txt"), "in sub\n");
    const d = dispatcher();
    const inSub = await d.execute(call("Read", { file_path: "f.txt" }), context({ cwd: join(ws, "sub") }));
    expect(expectOk(inSub)).toBe("     1\tin sub");
    expectError(
      await d.execute(call("Read", { file_path: "f.txt" }), context({ cwd: outside })),
      "working directory",
    );
  });

  it("re-roots paths under a path alias (the parent's checkout) into the workspace", async () => {
    await writeFile(join(ws, "f.txt"), "mapped\n");
    const out = await run(
      "Read",
      { file_path: "/home/parent/repo/f.txt" },
      {
        pathAliases: [{ from: "/home/parent/repo", to: ws }],
      },
    );
    expect(expectOk(out)).toBe("     1\tmapped");
  });
});

describe("dispatch", () => {
  it("refuses the fork tool: a fork cannot fork again", async () => {
    for (const name of ["Agent", "Task"]) {
      expectError(await run(name, { prompt: "fork again" }), "a fork cannot fork again");
    }
    expectError(await run("Spawn", {}, { forkToolNames: ["Spawn"] }), "a fork cannot fork again");
  });

  it("hands unknown tools to the fallback, and answers them with an error without one", async () => {
    const seen: string[] = [];
    const fallback: ToolDispatcher = {
      execute: async (c) => {
        seen.push(c.name);
        return { content: `remote ${c.name}`, isError: false };
      },
      isSafeToRepeat: (c) => c.name === "RemoteRead",
    };
    const d = dispatcher({ fallback });
    expect(expectOk(await d.execute(call("WebFetch", { url: "x" }), context()))).toBe("remote WebFetch");
    expect(seen).toEqual(["WebFetch"]);
    expect(d.isSafeToRepeat(call("RemoteRead", {}))).toBe(true);
    expect(d.isSafeToRepeat(call("RemoteWrite", {}))).toBe(false);
    expectError(await run("WebFetch", {}), "Unknown tool WebFetch");
    // A built-in left out of `tools` goes to the fallback too.
    const limited = dispatcher({ fallback, tools: ["Read"] });
    expect(expectOk(await limited.execute(call("Bash", { command: "ls" }), context()))).toBe("remote Bash");
  });

  it("says which calls are safe to repeat after a crash", async () => {
    const d = dispatcher();
    expect(d.isSafeToRepeat(call("Read", { file_path: "a" }))).toBe(true);
    expect(d.isSafeToRepeat(call("Glob", { pattern: "*" }))).toBe(true);
    expect(d.isSafeToRepeat(call("Grep", { pattern: "x" }))).toBe(true);
    expect(d.isSafeToRepeat(call("Bash", { command: "ls -la" }))).toBe(true);
    expect(d.isSafeToRepeat(call("Bash", { command: "rm -rf build" }))).toBe(false);
    expect(d.isSafeToRepeat(call("Bash", { command: "echo hi > f" }))).toBe(false);
    expect(d.isSafeToRepeat(call("Bash", {}))).toBe(false);
    expect(d.isSafeToRepeat(call("Write", { file_path: "a", content: "" }))).toBe(false);
    expect(d.isSafeToRepeat(call("Edit", { file_path: "a", old_string: "a", new_string: "b" }))).toBe(false);
    expect(d.isSafeToRepeat(call("Agent", {}))).toBe(true);
    expect(d.isSafeToRepeat(call("Unknown", {}))).toBe(false);
  });

  it("answers an aborted call with an error result, without running it", async () => {
    const controller = new AbortController();
    controller.abort();
    const out = await dispatcher().execute(
      call("Write", { file_path: "w.txt", content: "x" }),
      context({ signal: controller.signal }),
    );
    expectError(out, "Aborted");
    await expect(stat(join(ws, "w.txt"))).rejects.toThrow();
  });

  it("stops a search when the signal aborts mid-walk", async () => {
    for (let i = 0; i < 50; i++) {
      await mkdir(join(ws, `d${i}`));
      await writeFile(join(ws, `d${i}/f.txt`), "needle\n");
    }
    const controller = new AbortController();
    const pending = dispatcher().execute(
      call("Grep", { pattern: "needle" }),
      context({ signal: controller.signal }),
    );
    controller.abort();
    expectError(await pending, "Aborted");
  });
});
