// Daemons for tests and benchmarks: in this process against the simulator, or real daemon processes
// for fault tests (`packages/daemon/bin/forkd-daemon`, the launcher a user gets, configured through
// the environment, each killed with its test process by a parent-death signal and by `stop()`).
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createDaemonLogger, loadDaemonConfig, type RunningDaemon, startDaemon } from "@forkd/daemon";
import { AnthropicLlmClient, type GeminiLlmClient } from "@forkd/llm";

/** Options of {@link startSimDaemon}. */
export interface SimDaemonOptions {
  id: string;
  natsUrl: string;
  /** The simulator the daemon's model calls go to, with no retries. */
  simUrl: string;
  apiKey: string;
  workspace: string;
  /** Daemon configuration on top of the above (concurrency, tools, timings…). */
  config?: Record<string, unknown>;
  /** The Gemini client in place of the configured one (e.g. on the simulator's manual clock). */
  gemini?: GeminiLlmClient;
}

/** Starts a daemon in this process whose model is the simulator, logging nothing. */
export async function startSimDaemon(options: SimDaemonOptions): Promise<RunningDaemon> {
  const config = loadDaemonConfig({
    env: {},
    overrides: {
      daemonId: options.id,
      nats: { servers: [options.natsUrl] },
      workspace: options.workspace,
      // The simulator's OpenAI and Gemini routes too, under the same key (one cache scope), no retries.
      llm: {
        openaiBaseURL: `${options.simUrl}/v1`,
        openaiApiKey: options.apiKey,
        geminiBaseURL: options.simUrl,
        geminiApiKey: options.apiKey,
        maxRetries: 0,
      },
      ...options.config,
    },
  });
  return startDaemon(config, {
    logger: createDaemonLogger({ level: "silent", format: "json", daemonId: options.id }),
    llm: new AnthropicLlmClient({
      baseURL: options.simUrl,
      apiKey: options.apiKey,
      retry: { maxRetries: 0 },
    }),
    ...(options.gemini === undefined ? {} : { gemini: options.gemini }),
  });
}

const DAEMON_MAIN = fileURLToPath(new URL("../../packages/daemon/dist/main.js", import.meta.url));
/**
 * The `forkd-daemon` launcher a user gets (the package's bin): it starts DAEMON_MAIN with the
 * shipped runtime settings, so tests and benchmarks run the daemon as it is deployed.
 */
const DAEMON_LAUNCHER = fileURLToPath(new URL("../../packages/daemon/bin/forkd-daemon", import.meta.url));

// Under vitest a worker can end without running exit handlers; the kernel's parent-death signal
// still takes the daemon down with it.
const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"].find((path) => existsSync(path));

/** One daemon process. */
export interface DaemonProcess {
  readonly id: string;
  readonly child: ChildProcess;
  /** Every JSON log line it wrote so far. */
  readonly logs: Record<string, unknown>[];
  /** Resolves with the first log line (already written or to come) that matches. */
  waitForLog(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** Sends `signal` and resolves when the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  readonly exited: Promise<number | null>;
}

/** Options of {@link spawnDaemon}. */
export interface SpawnDaemonOptions {
  id: string;
  natsUrls: readonly string[];
  simUrl: string;
  workspace: string;
  ackWaitMs?: number;
  concurrency?: number;
  heartbeatMs?: number;
  drainGraceMs?: number;
  bash?: "read-only" | "full" | "off";
  extraEnv?: Record<string, string>;
}

/** Starts a daemon process and resolves once it logs that it is running. */
export async function spawnDaemon(options: SpawnDaemonOptions): Promise<DaemonProcess> {
  if (!existsSync(DAEMON_MAIN)) throw new Error(`${DAEMON_MAIN} is missing: run \`pnpm build\` first`);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/tmp",
    FORKD_NATS_URL: options.natsUrls.join(","),
    FORKD_DAEMON_ID: options.id,
    FORKD_WORKSPACE: options.workspace,
    FORKD_ACK_WAIT_MS: String(options.ackWaitMs ?? 30_000),
    FORKD_CONCURRENCY: String(options.concurrency ?? 4),
    FORKD_HEARTBEAT_MS: String(options.heartbeatMs ?? 1_000),
    FORKD_DRAIN_GRACE_MS: String(options.drainGraceMs ?? 30_000),
    FORKD_BASH_POLICY: options.bash ?? "full",
    FORKD_LOG_FORMAT: "json",
    FORKD_LOG_LEVEL: "info",
    FORKD_LLM_MAX_RETRIES: "0",
    ANTHROPIC_BASE_URL: options.simUrl,
    OPENAI_BASE_URL: `${options.simUrl}/v1`,
    GOOGLE_GEMINI_BASE_URL: options.simUrl,
    ANTHROPIC_API_KEY: "sk-forkd-test",
    ...options.extraEnv,
  };
  const command = SETPRIV ? [SETPRIV, "--pdeathsig", "SIGKILL", "--", DAEMON_LAUNCHER] : [DAEMON_LAUNCHER];
  const child = spawn(command[0]!, command.slice(1), { env, stdio: ["ignore", "ignore", "pipe"] });
  const logs: Record<string, unknown>[] = [];
  const waiters = new Set<{
    match: (line: Record<string, unknown>) => boolean;
    resolve: (line: Record<string, unknown>) => void;
  }>();
  let buffered = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    buffered += chunk;
    let newline = buffered.indexOf("\n");
    while (newline >= 0) {
      const text = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf("\n");
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        line = { msg: text };
      }
      logs.push(line);
      for (const waiter of waiters) {
        if (waiter.match(line)) {
          waiters.delete(waiter);
          waiter.resolve(line);
        }
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const waitForLog = (match: (line: Record<string, unknown>) => boolean, timeoutMs = 20_000) => {
    const found = logs.find(match);
    if (found) return Promise.resolve(found);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const waiter = { match, resolve };
      waiters.add(waiter);
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(
          new Error(
            `daemon ${options.id}: no matching log line within ${timeoutMs} ms; log:\n${logs.map((l) => JSON.stringify(l)).join("\n")}`,
          ),
        );
      }, timeoutMs);
      void exited.then(() => {
        if (!waiters.has(waiter)) return;
        clearTimeout(timer);
        waiters.delete(waiter);
        reject(
          new Error(`daemon ${options.id} exited; log:\n${logs.map((l) => JSON.stringify(l)).join("\n")}`),
        );
      });
      const originalResolve = waiter.resolve;
      waiter.resolve = (line) => {
        clearTimeout(timer);
        originalResolve(line);
      };
    });
  };
  const handle: DaemonProcess = {
    id: options.id,
    child,
    logs,
    waitForLog,
    exited,
    kill: async (signal = "SIGKILL") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
  await waitForLog((line) => line.msg === "daemon running");
  return handle;
}

/** Kills every daemon in `daemons` and waits for them. */
export async function stopDaemons(daemons: Iterable<DaemonProcess>): Promise<void> {
  await Promise.all([...daemons].map((daemon) => daemon.kill("SIGKILL")));
}
