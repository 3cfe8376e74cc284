// Where a real client from npm runs in tests, and how: a throwaway HOME and git repository holding
// `notes.txt`, and its process run to the end with what it printed collected and a deadline kill.
import { execFileSync, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * The prompt the real-client tests give an agent: the simulator calls the agent's file-reading tool
 * `tool` on `notes.txt` with `args`, then ends the next turn with "Done.".
 */
export function readNotesPrompt(tool: string, args: Record<string, string>): string {
  return ["Read the notes.", `@sim tool ${tool} ${JSON.stringify(args)}`, "@sim turn", "@sim say Done."].join(
    "\n",
  );
}

/** A fresh HOME and git repository (holding `notes.txt`) under a temp dir. */
export interface ClientSandbox {
  home: string;
  repo: string;
}

/** Runs `use` in a fresh sandbox named after `name`; removes it after, whatever happens. */
export async function inClientSandbox<T>(
  name: string,
  use: (sandbox: ClientSandbox) => Promise<T>,
): Promise<T> {
  const root = await mkdtemp(join(tmpdir(), `${name}-`));
  try {
    const home = join(root, "home");
    const repo = join(root, "repo");
    await mkdir(home);
    await mkdir(repo);
    await writeFile(join(repo, "notes.txt"), "The codec checks every length.\n");
    execFileSync("git", ["init", "-q"], { cwd: repo });
    return await use({ home, repo });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** How a process ended and what it printed. */
export interface ProcessOutput {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command args` in `cwd` with exactly `env` and `stdin` (none when absent); SIGKILLs it after
 * `timeoutMs`.
 */
export function runToExit(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: Record<string, string>; timeoutMs: number; stdin?: string | undefined },
): Promise<ProcessOutput> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    // An empty stdin, closed at once, when none is given: the same end of input as "ignore".
    // A client that exits without reading it all must not fail the run with EPIPE: its exit says why.
    child.stdin.on("error", () => {});
    child.stdin.end(options.stdin ?? "");
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
