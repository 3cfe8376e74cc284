// Bash with real bash processes: policies, environment, exit codes, output caps, timeouts, and an
// abort that kills the command's whole process group.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolExecutionContext, ToolOutcome } from "@forkd/core";
import { waitFor } from "@forkd/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type BuiltinToolDispatcherOptions, createBuiltinToolDispatcher } from "./dispatcher.js";

let ws: string;

beforeEach(async () => {
  ws = await realpath(await mkdtemp(join(tmpdir(), "forkd-bash-")));
});

afterEach(async () => {
  await rm(ws, { recursive: true, force: true });
});

function context(overrides: Partial<ToolExecutionContext> = {}): ToolExecutionContext {
  return { runId: "run-1", turn: 1, cwd: ws, signal: new AbortController().signal, ...overrides };
}

function bash(
  input: Record<string, unknown>,
  options: Partial<BuiltinToolDispatcherOptions> = {},
  ctx: Partial<ToolExecutionContext> = {},
): Promise<ToolOutcome> {
  const dispatcher = createBuiltinToolDispatcher({ workspace: ws, bashPolicy: "full", ...options });
  return dispatcher.execute({ id: "toolu_1", name: "Bash", input }, context(ctx));
}

/**
 * Whether a process is still running. A zombie counts as gone: it has exited and only waits for a
 * reaper (an orphan's reaper is PID 1, which in some containers never reaps).
 */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw error;
  }
  try {
    // Field 3 of /proc/<pid>/stat, after the parenthesised command name.
    const line = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = line.slice(line.lastIndexOf(")") + 2, line.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

describe("Bash", () => {
  it("runs in the run's cwd, interleaves stdout and stderr, and reports the exit code", async () => {
    await mkdir(join(ws, "sub"));
    const ok = await bash(
      { command: "pwd; echo out; echo err >&2; echo out2" },
      {},
      { cwd: join(ws, "sub") },
    );
    expect(ok).toEqual({ content: `${join(ws, "sub")}\nout\nerr\nout2\nExit code: 0`, isError: false });
    const failed = await bash({ command: "echo partial; exit 3" });
    expect(failed).toEqual({ content: "partial\nExit code: 3", isError: true });
    expect(await bash({ command: "true" })).toEqual({ content: "(no output)\nExit code: 0", isError: false });
  });

  it("passes a minimal environment without the daemon's secrets", async () => {
    process.env.ANTHROPIC_API_KEY = "sk-ant-secret";
    process.env.NATS_CREDS = "/etc/nats/creds";
    try {
      const out = await bash({ command: "env" }, { bashEnv: { EXTRA: "yes" } });
      expect(out.isError).toBe(false);
      expect(out.content).not.toContain("sk-ant-secret");
      expect(out.content).not.toContain("NATS_CREDS");
      expect(out.content).toContain(`FORKD_WORKSPACE=${ws}`);
      expect(out.content).toContain(`PATH=${process.env.PATH}`);
      expect(out.content).toMatch(/^HOME=/m);
      expect(out.content).toMatch(/^LANG=/m);
      expect(out.content).toContain("EXTRA=yes");
    } finally {
      delete process.env.ANTHROPIC_API_KEY;
      delete process.env.NATS_CREDS;
    }
  });

  it("under the read-only policy refuses rm and redirections, and runs ls", async () => {
    await writeFile(join(ws, "keep.txt"), "keep\n");
    const rmOut = await bash({ command: "rm keep.txt" }, { bashPolicy: "read-only" });
    expect(rmOut.isError).toBe(true);
    expect(rmOut.content).toContain("Bash is read-only in this run");
    const redirect = await bash({ command: "echo hi > made.txt" }, { bashPolicy: "read-only" });
    expect(redirect.isError).toBe(true);
    expect(redirect.content).toContain("Command refused");
    expect(await readFile(join(ws, "keep.txt"), "utf8")).toBe("keep\n");
    await expect(stat(join(ws, "made.txt"))).rejects.toThrow();
    expect(await bash({ command: "ls" }, { bashPolicy: "read-only" })).toEqual({
      content: "keep.txt\nExit code: 0",
      isError: false,
    });
  });

  it('under the "off" policy refuses everything', async () => {
    const out = await bash({ command: "ls" }, { bashPolicy: "off" });
    expect(out.isError).toBe(true);
    expect(out.content).toContain("Bash is disabled");
  });

  it("refuses run_in_background and explains invalid input", async () => {
    expect((await bash({ command: "sleep 1", run_in_background: true })).content).toContain(
      "run_in_background",
    );
    const invalid = await bash({ cmd: "ls" });
    expect(invalid.isError).toBe(true);
    expect(invalid.content).toContain("Invalid input for Bash: command");
  });

  it("caps the output, keeping its head and tail, and says how much was cut", async () => {
    const out = await bash({ command: "seq 1 20000" }, { outputCapBytes: 1000 });
    expect(out.isError).toBe(false);
    expect(Buffer.byteLength(out.content)).toBeLessThan(1200);
    expect(out.content.startsWith("1\n2\n3\n")).toBe(true);
    expect(out.content).toMatch(
      /\[output truncated: [\d,]+ of 108,894 bytes cut; the middle of the output was cut\]/,
    );
    expect(out.content.endsWith("19999\n20000\nExit code: 0")).toBe(true);
  });

  it("kills a command that runs past its timeout", async () => {
    const started = performance.now();
    const out = await bash({ command: "echo before; sleep 30", timeout: 300 });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(out.isError).toBe(true);
    expect(out.content).toContain("Command timed out after 300 ms");
    expect(out.content).toContain("before");
  });

  it("on abort kills the whole process group and resolves promptly", async () => {
    const fifo = join(ws, "ready.fifo");
    execFileSync("mkfifo", [fifo]);
    const controller = new AbortController();
    const pending = bash(
      { command: `sleep 30 & echo "$$ $!" > ${fifo}; sleep 30; echo COMPLETED` },
      {},
      { signal: controller.signal },
    );
    // Opening a FIFO for reading waits for the writer: the command has started and written its pids.
    const [shellPid, childPid] = (await readFile(fifo, "utf8")).trim().split(" ").map(Number);
    expect(isRunning(shellPid!)).toBe(true);
    expect(isRunning(childPid!)).toBe(true);

    const abortedAt = performance.now();
    controller.abort();
    const out = await pending;
    expect(performance.now() - abortedAt).toBeLessThan(1_500);
    expect(out.isError).toBe(true);
    expect(out.content).toContain("Aborted");
    expect(out.content).not.toContain("COMPLETED");
    // The group was SIGKILLed before the tool returned; delivery is asynchronous, so both are gone a
    // moment later (left alone, they would sleep for 30 s).
    await waitFor(() => !isRunning(shellPid!) && !isRunning(childPid!), {
      timeoutMs: 2_000,
      message: `shell ${shellPid} and its child ${childPid} to be killed`,
    });
  });

  it("kills what a finished command left running in the background", async () => {
    const out = await bash({ command: "sleep 30 & echo $!" });
    expect(out.isError).toBe(false);
    const pid = Number(out.content.split("\n")[0]);
    // SIGKILL is delivered asynchronously: the group was signalled before the tool returned, and the
    // process is gone a moment later (left alone, it would sleep for 30 s).
    await waitFor(() => !isRunning(pid), {
      timeoutMs: 2_000,
      message: `background sleep ${pid} to be killed`,
    });
  });
});
