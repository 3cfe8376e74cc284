// Bash: a shell command in the run's cwd, in a process group of its own so that an abort or a timeout
// kills everything it started; a minimal environment (no daemon secrets); bounded output.
import { spawn } from "node:child_process";
import { stat } from "node:fs/promises";
import type { ToolOutcome } from "@forkd/core";
import { classifyShellCommand } from "@forkd/core/internal";
import { ABORTED, describeError, fail, type ToolRun } from "./context.js";
import { SAFE_GIT_ENV } from "./git-safety.js";
import { HeadTailBuffer } from "./output.js";
import { type Sandbox, sandboxedShell } from "./sandbox.js";

/**
 * What Bash may run. `full`: anything; `read-only`: only commands the shell classifier judges to
 * change nothing (no `rm`, no redirection into files, …); `off`: nothing.
 */
export type BashPolicy = "read-only" | "full" | "off";

/** The longest timeout a call may ask for, unless the daemon's default is longer. @unit ms */
export const MAX_BASH_TIMEOUT_MS = 600_000;
/** After a kill, how long to wait for the shell to be reaped before answering anyway. @unit ms */
const KILL_GRACE_MS = 2_000;

export interface BashInput {
  command: string;
  /** @unit ms */
  timeout?: number | undefined;
  description?: string | undefined;
  run_in_background?: boolean | undefined;
}

export interface BashSettings {
  policy: BashPolicy;
  /** @unit ms */
  defaultTimeoutMs: number;
  /** Variables added to (or replacing those of) {@link minimalShellEnv}. */
  env: Readonly<Record<string, string>>;
  /**
   * The sandbox commands run in, with the directories they may see; absent only when the operator
   * turned the sandbox off.
   */
  sandbox?: { sandbox: Sandbox; visible: readonly string[] } | undefined;
}

/**
 * The environment a command gets: enough to run tools (PATH, HOME, LANG, …), the workspace, and
 * nothing else of the daemon's (no API keys, no NATS credentials).
 */
export function minimalShellEnv(workspace: string, cwd: string): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: process.env.HOME ?? workspace,
    LANG: process.env.LANG ?? "C.UTF-8",
    TERM: "dumb",
    PWD: cwd,
    FORKD_WORKSPACE: workspace,
    // Nothing may wait for a human: no credential prompts, no pagers.
    GIT_TERMINAL_PROMPT: "0",
    PAGER: "cat",
    GIT_PAGER: "cat",
  };
  for (const name of ["LC_ALL", "TMPDIR", "USER", "LOGNAME", "SHELL", "TZ"]) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** Whether the classifier judges `command` to change nothing. */
export function isReadOnlyCommand(command: string): boolean {
  return classifyShellCommand(command).readOnly;
}

export async function bashTool(input: BashInput, run: ToolRun, settings: BashSettings): Promise<ToolOutcome> {
  if (settings.policy === "off") {
    return fail(
      'Bash is disabled on this daemon (policy "off"). Use Read, Glob and Grep to look at files, and Write or Edit to change them.',
    );
  }
  if (input.run_in_background === true) {
    return fail(
      "run_in_background is not supported here: a fork's commands run in the foreground and are killed when they " +
        "end or time out. Run the command without it (give a timeout if it takes long).",
    );
  }
  if (settings.policy === "read-only") {
    const verdict = classifyShellCommand(input.command);
    if (!verdict.readOnly) {
      return fail(
        `Command refused: Bash is read-only in this run and this command may change something (${verdict.reason}). ` +
          "Only commands that just read are allowed (ls, cat, head, grep, find, git status/log/diff, …), " +
          "without redirection into files. Use Read, Glob and Grep to inspect, and Write or Edit (where allowed) to change files.",
      );
    }
  }
  if (run.signal.aborted) return ABORTED;
  const cwdInfo = await stat(run.cwd).catch(() => undefined);
  if (cwdInfo === undefined || !cwdInfo.isDirectory()) {
    return fail(`The working directory ${run.cwd} does not exist; the command was not run.`);
  }
  const ceiling = Math.max(MAX_BASH_TIMEOUT_MS, settings.defaultTimeoutMs);
  const timeoutMs = Math.min(Math.max(1, input.timeout ?? settings.defaultTimeoutMs), ceiling);
  const env = {
    ...minimalShellEnv(run.workspace, run.cwd),
    ...SAFE_GIT_ENV,
    ...settings.env,
  };
  return runShell(input.command, {
    cwd: run.cwd,
    env,
    timeoutMs,
    signal: run.signal,
    capBytes: run.outputCapBytes,
    ...(settings.sandbox === undefined
      ? {}
      : {
          sandbox: {
            ...settings.sandbox,
            // Writes are the `full` policy's; under `read-only` the workspace is mounted read-only too.
            writable: settings.policy === "full",
          },
        }),
  });
}

interface ShellOptions {
  cwd: string;
  env: Record<string, string>;
  /** @unit ms */
  timeoutMs: number;
  signal: AbortSignal;
  /** @unit bytes */
  capBytes: number;
  sandbox?: { sandbox: Sandbox; visible: readonly string[]; writable: boolean };
}

/**
 * Runs `bash -c command` as the leader of a new process group; stdout and stderr are interleaved in
 * the order written. On abort or timeout the whole group gets SIGKILL and the promise resolves once the
 * shell is reaped. When the shell exits, whatever it left running in its group is killed too.
 */
function runShell(command: string, options: ShellOptions): Promise<ToolOutcome> {
  return new Promise((resolve) => {
    const output = new HeadTailBuffer(options.capBytes);
    let stopped: "aborted" | "timeout" | undefined;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    let done = false;

    // `exec 2>&1` on the command's own line: one pipe keeps stdout and stderr in the order written,
    // and bash's line numbers stay the model's. (bash's own syntax errors still arrive on stderr.)
    const script = `exec 2>&1; ${command}`;
    const shell =
      options.sandbox === undefined
        ? { command: "bash", args: ["-c", script], spawnEnv: options.env }
        : sandboxedShell({ ...options.sandbox, cwd: options.cwd, env: options.env, script });
    // `detached`: bwrap leads a new session and process group, with no controlling terminal. Killing
    // the group kills bwrap and the namespace's init; the PID namespace then takes every process
    // inside with it, `setsid` ones included.
    const child = spawn(shell.command, shell.args, {
      cwd: options.cwd,
      env: shell.spawnEnv,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const pid = child.pid;

    const killGroup = () => {
      if (pid === undefined) return;
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // ESRCH: the group is already empty.
      }
    };
    const finish = (outcome: ToolOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      options.signal.removeEventListener("abort", onAbort);
      child.stdout.destroy();
      child.stderr.destroy();
      resolve(outcome);
    };
    const stop = (why: "aborted" | "timeout") => {
      if (stopped !== undefined || exit !== undefined) return;
      stopped = why;
      killGroup();
      graceTimer = setTimeout(() => finish(report()), KILL_GRACE_MS);
    };
    const onAbort = () => stop("aborted");
    const timer = setTimeout(() => stop("timeout"), options.timeoutMs);

    const report = (): ToolOutcome => {
      const text = output.totalBytes === 0 ? "" : output.toString("the middle of the output was cut");
      const withOutput = (head: string) => (text === "" ? head : `${head}\n${text}`);
      if (stopped === "aborted") {
        return fail(
          withOutput("Aborted: the command was killed (with its whole process group) before it finished."),
        );
      }
      if (stopped === "timeout") {
        return fail(
          withOutput(
            `Command timed out after ${formatMs(options.timeoutMs)} and was killed (with its whole process group). ` +
              "Give a larger timeout (ms) or make the command shorter.",
          ),
        );
      }
      const status =
        exit?.signal != null
          ? `Terminated by signal ${exit.signal}`
          : `Exit code: ${exit?.code ?? "unknown"}`;
      const body = text === "" ? "(no output)" : text.replace(/\n$/, "");
      return { content: `${body}\n${status}`, isError: exit?.code !== 0 };
    };

    child.stdout.on("data", (chunk: Buffer) => output.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => output.push(chunk));
    child.on("error", (error) => {
      // Spawning failed (no bash, bad cwd): there is no process to wait for.
      if (pid === undefined) finish(fail(`Could not run the command: ${describeError(error)}`));
    });
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      // Leftovers in the group (`cmd &`) would hold the pipes open and outlive the call.
      killGroup();
      graceTimer ??= setTimeout(() => finish(report()), KILL_GRACE_MS);
    });
    child.on("close", () => finish(report()));

    if (options.signal.aborted) onAbort();
    else options.signal.addEventListener("abort", onAbort, { once: true });
  });
}

function formatMs(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Number((ms / 1000).toFixed(1))} s`;
}
