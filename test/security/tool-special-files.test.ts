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

describe("file tools and the files a model's commands make", () => {
  it("Write and Edit refuse a FIFO at once, and the daemon's file system keeps answering", async () => {
    const made = await call("Bash", { command: "mkfifo pipe && echo made", timeout: 20_000 }, 20_000);
    expect(made).toMatchObject({ isError: false });
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
    const made = await call(
      "Bash",
      { command: "truncate -s 1500M big && echo made", timeout: 20_000 },
      20_000,
    );
    expect(made).toMatchObject({ isError: false });
    expect(statSync(join(workspace, "big")).size).toBe(1500 * 1024 * 1024);
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 5);
    const edit = await call("Edit", { file_path: "big", old_string: "a", new_string: "b" }, 20_000);
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    expect(edit).toMatchObject({ isError: true, content: expect.stringMatching(/too large/) });
    expect(peak - before).toBeLessThan(200 * 1024 * 1024);
  });

  it("Grep over many links to a big file holds no file's lines once it has read it", async () => {
    const made = await call(
      "Bash",
      {
        command:
          "mkdir many && cd many && yes a | head -c 10485758 >big.txt && for i in 1 2 3 4 5 6 7 8; do ln -s big.txt l$i.txt; done && echo made",
        timeout: 20_000,
      },
      20_000,
    );
    expect(made).toMatchObject({ isError: false });
    for (const output_mode of ["files_with_matches", "count", "content"]) {
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().rss);
      }, 5);
      const grep = await call("Grep", { pattern: "a", path: "many", output_mode, head_limit: 3 }, 100_000);
      clearInterval(sampler);
      peak = Math.max(peak, process.memoryUsage().rss);
      expect(grep).toMatchObject({ isError: false });
      // Each file is still split while it is matched (content mode): a few hundred MB at the peak.
      expect(peak - before, output_mode).toBeLessThan(500 * 1024 * 1024);
    }
  }, 300_000);
});
