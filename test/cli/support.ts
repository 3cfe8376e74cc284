// Runs the built `forkd` (packages/cli/dist/bin.js) as a real process, with a clean environment, and
// kills it with the test: `setpriv --pdeathsig SIGKILL` where available, and `stop()` in afterAll.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The built CLI. */
export const FORKD_BIN = fileURLToPath(new URL("../../packages/cli/dist/bin.js", import.meta.url));

// The kernel kills the CLI when the vitest worker that started it dies, even without exit handlers.
const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"].find((path) => existsSync(path));

/** Throws a clear message when the CLI has not been built. */
export function assertBuilt(): void {
  if (!existsSync(FORKD_BIN)) {
    throw new Error(
      `${FORKD_BIN} is missing: run \`pnpm --filter @forkd/cli build\` (or \`pnpm build\`) first`,
    );
  }
}

/** The owner key of the tests' forkd processes. */
export const TEST_OWNER_KEY = "0f".repeat(32);

/** A minimal environment: nothing of the developer's NATS_URL, ANTHROPIC_* or FORKD_* leaks in. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: `${process.env.PATH ?? "/usr/bin:/bin"}:/usr/sbin`,
    HOME: process.env.HOME ?? "/tmp",
    // One user's owner key for every forkd of a test: fork and abort share it, and nothing is
    // written to the developer's ~/.config.
    FORKD_OWNER_KEY: TEST_OWNER_KEY,
    ...extra,
  };
}

/** One running `forkd` process. */
export interface CliProcess {
  readonly child: ChildProcess;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  /** Complete stdout lines so far. */
  lines(): string[];
  /** Resolves with the first line of stdout (or stderr) written already or later that matches. */
  waitForLine(
    match: (line: string) => boolean,
    options?: { timeoutMs?: number; stream?: "stdout" | "stderr" },
  ): Promise<string>;
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` (if still running) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * The options of `forkd proxy` or `forkd capture` in front of the simulator at `simUrl`: a free
 * loopback port, the simulator as every API's upstream, and the state file.
 */
export function proxyCliArgs(simUrl: string, statePath: string): string[] {
  return [
    "--listen",
    "127.0.0.1:0",
    "--upstream",
    simUrl,
    "--openai-upstream",
    `${simUrl}/v1`,
    "--gemini-upstream",
    simUrl,
    "--state",
    statePath,
  ];
}

/** Starts `forkd args…`. */
export function spawnCli(
  args: readonly string[],
  options: { env?: Record<string, string> | undefined } = {},
): CliProcess {
  assertBuilt();
  const command = SETPRIV
    ? [SETPRIV, "--pdeathsig", "SIGKILL", "--", process.execPath, FORKD_BIN, ...args]
    : [process.execPath, FORKD_BIN, ...args];
  const child = spawn(command[0]!, command.slice(1), {
    env: options.env ?? cleanEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const waiters = new Set<() => void>();
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
    for (const waiter of waiters) waiter();
  });
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    err += chunk;
    for (const waiter of waiters) waiter();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      for (const waiter of waiters) waiter();
      resolve({ code, signal });
    }),
  );
  const lines = (text = out) => text.split("\n").slice(0, -1);
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    lines: () => lines(),
    exited,
    waitForLine(match, { timeoutMs = 20_000, stream = "stdout" } = {}) {
      return new Promise<string>((resolve, reject) => {
        const check = () => {
          const found = lines(stream === "stdout" ? out : err).find(match);
          if (found !== undefined) {
            done();
            resolve(found);
          } else if (!running()) {
            done();
            reject(
              new Error(
                `forkd ${args.join(" ")} exited before the line came.\nstdout:\n${out}\nstderr:\n${err}`,
              ),
            );
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(
            new Error(
              `no matching line within ${timeoutMs} ms from forkd ${args.join(" ")}.\nstdout:\n${out}\nstderr:\n${err}`,
            ),
          );
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async stop(signal = "SIGKILL") {
      if (running()) child.kill(signal);
      return exited;
    },
  };
}

/** The result of a finished `forkd` run. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `forkd args…` to its end (killed after `timeoutMs`). */
export async function runCli(
  args: readonly string[],
  options: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CliResult> {
  const cli = spawnCli(args, { env: options.env });
  const timer = setTimeout(() => cli.child.kill("SIGKILL"), options.timeoutMs ?? 60_000);
  // 'close' comes after the process has exited and its stdout and stderr are read to the end; at
  // 'exit' the last output may still be in the pipe (an empty stdout was seen under load).
  const closed = new Promise<void>((resolve) => cli.child.once("close", () => resolve()));
  try {
    const { code, signal } = await cli.exited;
    await closed;
    return { code, signal, stdout: cli.stdout(), stderr: cli.stderr() };
  } finally {
    clearTimeout(timer);
  }
}

/** Parses NDJSON output, one object per non-empty line. */
export function ndjson(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * Runs `forkd fork --nats natsUrl --from file --directive … --json` to its end (one child per
 * directive; without any, one per tool call of the turn's reply) and returns its `result` lines, one
 * per child. Throws when it does not exit 0.
 */
export async function forkFromFileCli(
  natsUrl: string,
  file: string,
  directives: readonly string[],
): Promise<Record<string, unknown>[]> {
  const result = await runCli(
    [
      "fork",
      "--nats",
      natsUrl,
      "--from",
      file,
      ...directives.flatMap((directive) => ["--directive", directive]),
      "--json",
    ],
    { env: cleanEnv(), timeoutMs: 90_000 },
  );
  if (result.code !== 0) throw new Error(`forkd fork --from ${file} exited ${result.code}: ${result.stderr}`);
  return ndjson(result.stdout).filter((line) => line.kind === "result");
}
