import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolCall } from "../tool-dispatcher.js";
import {
  allowAllTools,
  allowListTools,
  denialToolResultText,
  memoryToolFilter,
  type ToolDenialCode,
  type ToolFilter,
  type ToolFilterContext,
  type ToolFilterDecision,
  toolFilterFromSpec,
} from "./tool-filter.js";

// base/work/                 the run's cwd
// base/work/memory/          the memory directory
// base/work/memory/escape -> base/secrets      (directory symlink out)
// base/work/memory/passwd -> base/secrets/passwd (file symlink out)
// base/memory-link -> base/work/memory         (symlinked memory dir)
// base/secrets/passwd
let base: string;
let work: string;
let memory: string;
let context: ToolFilterContext;

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), "forkd-filter-")));
  work = join(base, "work");
  memory = join(work, "memory");
  await mkdir(memory, { recursive: true });
  await mkdir(join(base, "secrets"));
  await writeFile(join(base, "secrets", "passwd"), "root:x:0:0");
  await writeFile(join(memory, "MEMORY.md"), "# memory");
  await symlink(join(base, "secrets"), join(memory, "escape"));
  await symlink(join(base, "secrets", "passwd"), join(memory, "passwd"));
  await symlink(memory, join(base, "memory-link"));
  context = { cwd: work };
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

let nextId = 0;
function call(name: string, input: unknown): ToolCall {
  nextId++;
  return { id: `toolu_${nextId}`, name, input };
}

async function expectAllowed(filter: ToolFilter, toolCall: ToolCall, ctx = context): Promise<void> {
  const decision = await filter.check(toolCall, ctx);
  expect(decision, `${toolCall.name} ${JSON.stringify(toolCall.input)}`).toEqual({ allowed: true });
}

async function expectDenied(
  filter: ToolFilter,
  toolCall: ToolCall,
  code: ToolDenialCode,
  ctx = context,
): Promise<ToolFilterDecision & { allowed: false }> {
  const decision = await filter.check(toolCall, ctx);
  expect(decision.allowed, `${toolCall.name} ${JSON.stringify(toolCall.input)}`).toBe(false);
  if (decision.allowed) throw new Error("unreachable");
  expect(decision.code, decision.reason).toBe(code);
  expect(decision.reason.length).toBeGreaterThan(0);
  return decision;
}

describe("allowAllTools", () => {
  it("allows every call, whatever its arguments", async () => {
    const filter = allowAllTools();
    expect(filter.kind).toBe("all");
    await expectAllowed(filter, call("Bash", { command: "rm -rf /" }));
    await expectAllowed(filter, call("Anything", "not even an object"));
  });
});

describe("allowListTools", () => {
  it("allows the listed tools and refuses the others, naming the allowed ones", async () => {
    const filter = allowListTools(["Read", "Grep"]);
    expect(filter.kind).toBe("allow");
    await expectAllowed(filter, call("Read", { file_path: "/etc/hosts" }));
    await expectAllowed(filter, call("Grep", { pattern: "x" }));
    const denial = await expectDenied(
      filter,
      call("Write", { file_path: "x", content: "" }),
      "tool_not_allowed",
    );
    expect(denial.reason).toContain("Write");
    expect(denial.reason).toContain("Read, Grep");
    await expectDenied(filter, call("read", {}), "tool_not_allowed");
  });

  it("refuses everything when the list is empty", async () => {
    const denial = await expectDenied(allowListTools([]), call("Read", {}), "tool_not_allowed");
    expect(denial.reason).toBe(`the tool "Read" is not among this fork's allowed tools (none)`);
  });
});

describe("memoryToolFilter", () => {
  const filter = (): ToolFilter => memoryToolFilter({ memoryDir: memory });

  it("always allows reads, globs and greps", async () => {
    for (const name of ["Read", "Glob", "Grep", "LS", "NotebookRead"]) {
      await expectAllowed(filter(), call(name, { file_path: "/etc/hosts", pattern: "**/*" }));
    }
  });

  it("allows read-only Bash commands and refuses writers with the classifier's reason", async () => {
    await expectAllowed(
      filter(),
      call("Bash", { command: "git log --oneline | head -5", description: "history" }),
    );
    await expectAllowed(filter(), call("Bash", { command: "grep -rn TODO src 2>/dev/null" }));
    const denial = await expectDenied(
      filter(),
      call("Bash", { command: "ls > out.txt" }),
      "shell_not_read_only",
    );
    expect(denial.reason).toContain(">out.txt");
    await expectDenied(filter(), call("Bash", { command: "find . -delete" }), "shell_not_read_only");
    await expectDenied(filter(), call("Bash", { command: "rm -rf memory" }), "shell_not_read_only");
    await expectDenied(
      filter(),
      call("Bash", { command: "ls", run_in_background: true }),
      "shell_not_read_only",
    );
  });

  it("allows writes and edits inside the memory directory, absolute or relative", async () => {
    await expectAllowed(filter(), call("Write", { file_path: join(memory, "MEMORY.md"), content: "x" }));
    await expectAllowed(filter(), call("Write", { file_path: "memory/notes/new.md", content: "x" }));
    await expectAllowed(
      filter(),
      call("Edit", { file_path: "./memory/MEMORY.md", old_string: "a", new_string: "b" }),
    );
    await expectAllowed(filter(), call("MultiEdit", { file_path: join(memory, "MEMORY.md"), edits: [] }));
    await expectAllowed(
      filter(),
      call("NotebookEdit", { notebook_path: join(memory, "n.ipynb"), new_source: "" }),
    );
    await expectAllowed(filter(), call("Write", { file_path: "MEMORY.md", content: "x" }), { cwd: memory });
  });

  it("allows a missing parent inside and refuses one outside", async () => {
    await expectAllowed(
      filter(),
      call("Write", { file_path: join(memory, "2025", "06", "day.md"), content: "" }),
    );
    await expectDenied(
      filter(),
      call("Write", { file_path: join(base, "elsewhere", "deep", "x.md"), content: "" }),
      "path_outside_memory_dir",
    );
  });

  it("refuses writes outside the memory directory, through .. or relative paths", async () => {
    await expectDenied(
      filter(),
      call("Write", { file_path: join(work, "src.ts"), content: "" }),
      "path_outside_memory_dir",
    );
    await expectDenied(
      filter(),
      call("Write", { file_path: "src.ts", content: "" }),
      "path_outside_memory_dir",
    );
    await expectDenied(filter(), call("Edit", { file_path: "memory/../src.ts" }), "path_outside_memory_dir");
    await expectDenied(
      filter(),
      call("Write", { file_path: "../../x", content: "" }),
      "path_outside_memory_dir",
      {
        cwd: memory,
      },
    );
    await expectDenied(
      filter(),
      call("Write", { file_path: `${memory}-evil/x`, content: "" }),
      "path_outside_memory_dir",
    );
  });

  it("refuses symlink escapes: a symlinked directory and a symlinked file inside the memory directory", async () => {
    const dir = await expectDenied(
      filter(),
      call("Write", { file_path: join(memory, "escape", "passwd"), content: "" }),
      "path_outside_memory_dir",
    );
    expect(dir.reason).toContain(join(base, "secrets", "passwd"));
    await expectDenied(filter(), call("Edit", { file_path: "memory/passwd" }), "path_outside_memory_dir");
    await expectDenied(
      filter(),
      call("Write", { file_path: "memory/escape/new/x", content: "" }),
      "path_outside_memory_dir",
    );
  });

  it("works with a memory directory that is itself a symlink", async () => {
    const linked = memoryToolFilter({ memoryDir: join(base, "memory-link") });
    await expectAllowed(linked, call("Write", { file_path: join(base, "memory-link", "a.md"), content: "" }));
    await expectAllowed(linked, call("Write", { file_path: join(memory, "a.md"), content: "" }));
    await expectDenied(
      linked,
      call("Write", { file_path: join(work, "a.md"), content: "" }),
      "path_outside_memory_dir",
    );
    await expectDenied(
      linked,
      call("Write", { file_path: join(base, "memory-link", "escape", "x"), content: "" }),
      "path_outside_memory_dir",
    );
  });

  it("resolves a relative memory directory against the cwd", async () => {
    const relative = memoryToolFilter({ memoryDir: "memory" });
    await expectAllowed(relative, call("Write", { file_path: "memory/a.md", content: "" }));
    await expectDenied(
      relative,
      call("Write", { file_path: "a.md", content: "" }),
      "path_outside_memory_dir",
    );
  });

  it("refuses writes into a .git directory inside the memory directory", async () => {
    const denial = await expectDenied(
      filter(),
      call("Write", { file_path: join(memory, ".git", "config"), content: "[core]\n\tfsmonitor = sh" }),
      "path_outside_memory_dir",
    );
    expect(denial.reason).toContain(".git");
    await expectDenied(
      filter(),
      call("Write", { file_path: "memory/sub/.GIT/hooks/x", content: "" }),
      "path_outside_memory_dir",
    );
  });

  it("refuses a .git directory reached through a symlink, or named on the way and left by ..", async () => {
    // The path as written names no .git; the path the kernel writes does.
    await mkdir(join(memory, "repo", ".git"), { recursive: true });
    await symlink(".git", join(memory, "repo", "cfg"));
    const throughLink = await expectDenied(
      filter(),
      call("Write", { file_path: "memory/repo/cfg/config", content: "[core]\n\tfsmonitor = sh" }),
      "path_outside_memory_dir",
    );
    expect(throughLink.reason).toContain(join(memory, "repo", ".git", "config"));
    // The other way round: the kernel writes memory/repo/x.md, but the path as written passes through .git,
    // which a symlink could make anything; refused as written.
    await expectDenied(
      filter(),
      call("Write", { file_path: "memory/repo/.git/../x.md", content: "" }),
      "path_outside_memory_dir",
    );
  });

  it("refuses every other tool", async () => {
    for (const name of ["WebFetch", "Task", "mcp__github__create_issue", "bash", "write"]) {
      const denial = await expectDenied(filter(), call(name, {}), "tool_not_allowed");
      expect(denial.reason).toBe(
        `the tool "${name}" is not available to a read-only fork (allowed: Read, Glob, Grep, LS, NotebookRead, ` +
          `read-only Bash commands, and Write, Edit, MultiEdit, NotebookEdit inside ${memory})`,
      );
    }
  });

  it("refuses arguments wrapped in an envelope", async () => {
    const inside = join(memory, "x.md");
    const envelopes: [string, unknown][] = [
      ["Write", JSON.stringify({ file_path: inside, content: "" })],
      ["Bash", "ls"],
      ["Write", { input: { file_path: inside, content: "" } }],
      ["Write", { args: { file_path: inside } }],
      ["Edit", { params: { file_path: inside } }],
      ["Bash", { arguments: JSON.stringify({ command: "ls" }) }],
      ["Bash", { parameters: { command: "ls" } }],
      ["Write", { tool_input: { file_path: inside } }],
      ["Write", { file_path: inside, content: "", input: { file_path: "/etc/passwd" } }],
      ["Write", { call: { file_path: inside, content: "" } }],
      ["Write", { wrapped: JSON.stringify({ file_path: inside }) }],
      ["Write", { file_path: JSON.stringify({ file_path: "/etc/passwd" }), content: "" }],
      ["Write", { file_path: JSON.stringify(inside), content: "" }],
      ["Bash", { command: JSON.stringify({ command: "rm -rf /" }) }],
      ["Bash", { command: '["ls"]' }],
    ];
    for (const [name, input] of envelopes)
      await expectDenied(filter(), call(name, input), "argument_envelope");
  });

  it("refuses missing or mistyped arguments", async () => {
    const invalid: [string, unknown][] = [
      ["Write", {}],
      ["Write", { file_path: 42 }],
      ["Write", { file_path: "" }],
      ["Edit", { path: join(memory, "x.md") }],
      ["NotebookEdit", { file_path: join(memory, "x.ipynb") }],
      ["Bash", { command: ["ls"] }],
      ["Bash", null],
      ["Write", [join(memory, "x.md")]],
      ["Write", { file_path: join(memory, "MEMORY.md", "child") }],
      ["Write", { file_path: "x\0y" }],
    ];
    for (const [name, input] of invalid) await expectDenied(filter(), call(name, input), "invalid_arguments");
  });

  it("says what is wrong with the arguments, in the model's terms", async () => {
    const reasons: [string, unknown, ToolDenialCode, string][] = [
      [
        "Write",
        "{}",
        "argument_envelope",
        "Write: the arguments are a string (JSON text?) instead of an object",
      ],
      ["Write", 5, "invalid_arguments", "Write: the arguments must be an object, got a number"],
      ["Write", null, "invalid_arguments", "Write: the arguments must be an object, got null"],
      ["Write", { input: {} }, "argument_envelope", 'Write: the arguments are wrapped in "input"'],
      ["Write", { call: "[1]" }, "argument_envelope", 'Write: the arguments are wrapped in "call"'],
      // The field itself holds an object: mistyped, not wrapped (the field is there).
      [
        "Write",
        { file_path: { path: "x" } },
        "invalid_arguments",
        'Write: "file_path" must be a non-empty string, got an object',
      ],
      [
        "Write",
        { file_path: '"x"' },
        "argument_envelope",
        'Write: "file_path" holds JSON text instead of a plain value',
      ],
      // Blanks around JSON text do not hide it.
      [
        "Write",
        { file_path: ' \n{"file_path":"/etc/passwd"} ' },
        "argument_envelope",
        'Write: "file_path" holds JSON text instead of a plain value',
      ],
      ["Write", [memory], "invalid_arguments", "Write: the arguments must be an object, got an array"],
      ["Write", {}, "invalid_arguments", 'Write: "file_path" must be a non-empty string, got nothing'],
      [
        "Write",
        { file_path: "" },
        "invalid_arguments",
        'Write: "file_path" must be a non-empty string, got a string',
      ],
      // A lone other key is a wrapper only when it holds an object or JSON text; with the field
      // missing among several keys, the call is incomplete, not wrapped.
      [
        "Write",
        { path: 5 },
        "invalid_arguments",
        'Write: "file_path" must be a non-empty string, got nothing',
      ],
      [
        "Write",
        { path: null },
        "invalid_arguments",
        'Write: "file_path" must be a non-empty string, got nothing',
      ],
      [
        "Write",
        { a: {}, b: 1 },
        "invalid_arguments",
        'Write: "file_path" must be a non-empty string, got nothing',
      ],
    ];
    for (const [name, input, code, reason] of reasons) {
      const denial = await expectDenied(filter(), call(name, input), code);
      expect(denial.reason, JSON.stringify(input)).toBe(reason);
    }
  });

  it("takes braces and quotes in a file name for what they are when the name is not JSON", async () => {
    for (const name of ["{draft}.md", "[1] notes.md", '"quoted".md', "{"]) {
      await expectAllowed(filter(), call("Write", { file_path: join(memory, name), content: "" }));
      await expectAllowed(filter(), call("Write", { file_path: `memory/${name}`, content: "" }));
    }
    // JSON text of a number, a boolean or null is an ordinary file name.
    for (const name of ["{x}", "2024", "true", "null"])
      await expectAllowed(filter(), call("Write", { file_path: name, content: "" }), { cwd: memory });
  });

  it("rejects when the signal aborts a check that touches the file system", async () => {
    const controller = new AbortController();
    controller.abort(new Error("run aborted"));
    await expect(
      filter().check(call("Write", { file_path: join(memory, "x.md") }), {
        cwd: work,
        signal: controller.signal,
      }),
    ).rejects.toThrow("run aborted");
  });
});

describe("toolFilterFromSpec", () => {
  it("builds the filter each wire kind names", async () => {
    expect(toolFilterFromSpec({ kind: "all" }).kind).toBe("all");
    const allow = toolFilterFromSpec({ kind: "allow", tools: ["Read"] });
    expect(allow.kind).toBe("allow");
    await expectDenied(allow, call("Bash", { command: "ls" }), "tool_not_allowed");
    const mem = toolFilterFromSpec({ kind: "memory", memory_dir: memory });
    expect(mem.kind).toBe("memory");
    await expectAllowed(mem, call("Write", { file_path: join(memory, "y.md"), content: "" }));
    await expectDenied(
      mem,
      call("Write", { file_path: join(work, "y.md"), content: "" }),
      "path_outside_memory_dir",
    );
  });

  it("fails closed on a kind it does not know", async () => {
    const unknown = toolFilterFromSpec({ kind: "future" } as never);
    const denial = await expectDenied(unknown, call("Read", {}), "tool_not_allowed");
    expect(denial.reason).toContain("future");
  });
});

describe("denialToolResultText", () => {
  it("says what was refused, why, and what to do instead, for every code", () => {
    const codes: ToolDenialCode[] = [
      "tool_not_allowed",
      "shell_not_read_only",
      "path_outside_memory_dir",
      "argument_envelope",
      "invalid_arguments",
    ];
    const texts = codes.map((code) =>
      denialToolResultText({ allowed: false, code, reason: `because ${code}` }),
    );
    for (const [index, text] of texts.entries()) {
      expect(text).toContain(codes[index]);
      expect(text).toContain(`because ${codes[index]}`);
      expect(text.split("\n").length).toBeGreaterThanOrEqual(2);
    }
    expect(new Set(texts.map((text) => text.split("\n")[1])).size).toBe(codes.length);
  });

  it("turns a real denial into a tool_result text the model can act on", async () => {
    const decision = await memoryToolFilter({ memoryDir: memory }).check(
      call("Bash", { command: "sed -i s/a/b/ f" }),
      context,
    );
    if (decision.allowed) throw new Error("expected a denial");
    const text = denialToolResultText(decision);
    expect(text).toContain("sed -i edits files in place");
    expect(text).toContain("Read");
  });
});
