// Files a hostile model makes with Bash (under `full`, in the real sandbox) and then hands to the
// file tools, which run in the daemon's own process. A FIFO: opening one blocks until the other end
// is opened, in one of libuv's four thread-pool threads, where no abort reaches it — four Writes or
// Edits to a FIFO left every file-system call of the daemon (every run's Read, its prefix cache)
// waiting for ever. A sparse file of 1.5 GB, made in an instant: Edit read all of it into the
// daemon's memory before finding it binary, and a few of them end the daemon for want of memory.
// A 10 MiB text file of short lines (just under Grep's limit) and links to it: Grep kept every
// matching file's lines, split, until it answered — 160 MB of heap per link, so a dozen or two links
// end the daemon.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolOutcome } from "@forkd/core";
import { createBuiltinToolDispatcher, type Sandbox } from "@forkd/daemon";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requireBubblewrap } from "../harness/sandbox.js";

const workspace = mkdtempSync(join(tmpdir(), "forkd-special-files-"));
let sandbox: Sandbox;

beforeAll(() => {
  sandbox = requireBubblewrap();
  writeFileSync(join(workspace, "plain.txt"), "an ordinary file\n");
});

afterAll(async () => {
  // Before the fix, the tools' blocked opens hold thread-pool threads: open the FIFO's other ends
  // from child processes (spawning needs no thread-pool thread) so that they return.
  await Promise.all([run("cat pipe >/dev/null"), run("for i in 1 2 3 4; do : >pipe; done")]);
  rmSync(workspace, { recursive: true, force: true });
});

/** Runs a shell command in the workspace, outside any tool, for at most 5 s. */
function run(command: string): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn("sh", ["-c", command], { cwd: workspace, stdio: "ignore" });
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

const tools = () => createBuiltinToolDispatcher({ workspace, bashPolicy: "full", sandbox });

/** One tool call, as the turn loop makes it; "hung" when it has not answered in `ms`. */
async function call(name: string, input: Record<string, unknown>, ms = 3000): Promise<ToolOutcome | "hung"> {
  const controller = new AbortController();
  const answer = tools().execute(
    { id: `toolu_${name}`, name, input },
    { runId: "run-special", turn: 1, cwd: workspace, signal: controller.signal },
  );
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<"hung">((resolve) => {
    timer = setTimeout(() => {
      // The run gives up on the call, as an abort or the run's timeout would.
      controller.abort();
      resolve("hung");
    }, ms);
  });
  try {
    return await Promise.race([answer, hung]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs a command with the Bash tool, in the sandbox, as the model would; it must succeed. */
async function shell(command: string): Promise<void> {
  expect(await call("Bash", { command, timeout: 20_000 }, 20_000)).toMatchObject({ isError: false });
}

/** Runs `action`, sampling this process's RSS; resolves to its result and the growth at the peak. */
async function peakGrowth<T>(action: () => Promise<T>): Promise<{ result: T; growth: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  try {
    const result = await action();
    return { result, growth: Math.max(peak, process.memoryUsage().rss) - before };
  } finally {
    clearInterval(sampler);
  }
}

describe("file tools and the files a model's commands make", () => {
  it("Write and Edit refuse a FIFO at once, and the daemon's file system keeps answering", async () => {
    await shell("mkfifo pipe && echo made");
    for (let i = 0; i < 4; i++) {
      const write = await call("Write", { file_path: "pipe", content: "x" });
      expect(write).not.toBe("hung");
      expect(write).toMatchObject({ isError: true, content: expect.stringMatching(/not a regular file/) });
      const edit = await call("Edit", { file_path: "pipe", old_string: "a", new_string: "b" });
      expect(edit).not.toBe("hung");
      expect(edit).toMatchObject({ isError: true, content: expect.stringMatching(/not a regular file/) });
    }
    expect(await call("Read", { file_path: "plain.txt" })).toMatchObject({
      isError: false,
      content: expect.stringContaining("an ordinary file"),
    });
  });

  it("Edit refuses a huge file by its size, without reading it into memory", async () => {
    await shell("truncate -s 1500M big && echo made");
    expect(statSync(join(workspace, "big")).size).toBe(1500 * 1024 * 1024);
    const { result: edit, growth } = await peakGrowth(() =>
      call("Edit", { file_path: "big", old_string: "a", new_string: "b" }, 20_000),
    );
    expect(edit).toMatchObject({ isError: true, content: expect.stringMatching(/too large/) });
    expect(growth).toBeLessThan(200 * 1024 * 1024);
  });

  it("Read of a sparse terabyte with one long line answers at once, and says how far it read", async () => {
    // Text first, so that the file does not look binary; then a terabyte of holes and no newline.
    await shell("head -c 9000 /dev/zero | tr '\\0' a >sparse.txt && truncate -s 1T sparse.txt && echo made");
    for (const input of [{ file_path: "sparse.txt" }, { file_path: "sparse.txt", offset: 5 }]) {
      const read = await call("Read", input, 20_000);
      expect(read, JSON.stringify(input)).not.toBe("hung");
      expect(read).toMatchObject({ content: expect.stringMatching(/at most the first 64 MiB/) });
    }
  });

  it("Edit refuses an edit whose result would be huge, before building it", async () => {
    // 8 MB of one character, under Edit's size limit; every one of them replaced by 48.
    await shell("head -c 8000000 /dev/zero | tr '\\0' a >many-a.txt && echo made");
    const input = { file_path: "many-a.txt", old_string: "a", new_string: "b".repeat(48), replace_all: true };
    const { result: edit, growth } = await peakGrowth(() => call("Edit", input, 60_000));
    expect(edit).toMatchObject({ isError: true, content: expect.stringMatching(/too large/) });
    expect(statSync(join(workspace, "many-a.txt")).size).toBe(8_000_000);
    expect(growth).toBeLessThan(200 * 1024 * 1024);
  });

  it("Grep over many links to a big file holds no file's lines once it has read it", async () => {
    await shell(
      "mkdir many && cd many && yes a | head -c 10485758 >big.txt && for i in 1 2 3 4 5; do ln -s big.txt l$i.txt; done && echo made",
    );
    // `count` reads each file as `files_with_matches` does (lines counted, never split), but counts
    // to the end of every file: 14 s more of this test for no other line of code.
    for (const output_mode of ["files_with_matches", "content"]) {
      const input = { pattern: "a", path: "many", output_mode, head_limit: 3 };
      const { result: grep, growth } = await peakGrowth(() => call("Grep", input, 100_000));
      expect(grep).toMatchObject({ isError: false });
      // Each file is still split while it is matched (content mode): a few hundred MB at the peak.
      expect(growth, output_mode).toBeLessThan(500 * 1024 * 1024);
    }
  }, 300_000);
});
