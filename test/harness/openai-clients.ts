// Real OpenAI-API agents from the npm registry, run against forkd's simulator: qwen-code (Chat
// Completions, `OPENAI_BASE_URL`) and the Codex CLI (Responses, a custom model provider in its
// config.toml: its built-in provider opens a WebSocket to the real host whatever the base URL), each
// in a throwaway HOME and git repository, with no network but the simulator.
import { execFileSync, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

const require = createRequire(import.meta.url);

/** The API key both clients are run with (and the daemons that fork them: one cache scope). */
export const OPENAI_CLIENT_API_KEY = "sk-forkd-openai-client-test";
/** The model both clients are run with: one whose caching the simulator models. */
export const OPENAI_CLIENT_MODEL = "gpt-5";

/** Options of {@link runQwenCode} and {@link runCodex}. */
export interface RunOpenAiClientOptions {
  /** The simulator's base URL (without `/v1`). */
  baseUrl: string;
  prompt: string;
  /** @default 120_000 @unit milliseconds */
  timeoutMs?: number;
}

/** Runs `command args` in a fresh HOME and git repository holding `notes.txt`; removes them after. */
async function runInThrowawayRepo(
  options: RunOpenAiClientOptions,
  prepare: (home: string) => Promise<{ args: string[]; env: Record<string, string> }>,
): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "forkd-openai-client-"));
  try {
    const home = join(root, "home");
    const repo = join(root, "repo");
    await mkdir(home);
    await mkdir(repo);
    await writeFile(join(repo, "notes.txt"), "The codec checks every length.\n");
    execFileSync("git", ["init", "-q"], { cwd: repo });
    const { args, env } = await prepare(home);
    const { code, stdout, stderr } = await new Promise<{
      code: number | null;
      stdout: string;
      stderr: string;
    }>((resolve, reject) => {
      const child = spawn(process.execPath, args, {
        cwd: repo,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, ...env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString("utf8");
      });
      child.stderr.on("data", (chunk: Buffer) => {
        err += chunk.toString("utf8");
      });
      const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 120_000);
      child.on("error", reject);
      child.on("close", (exitCode) => {
        clearTimeout(timer);
        resolve({ code: exitCode, stdout: out, stderr: err });
      });
    });
    if (code !== 0)
      throw new Error(`${args[0]} exited ${code}: ${stderr.slice(-2000)}${stdout.slice(-2000)}`);
    return stdout;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** Runs `qwen -p <prompt>` (qwen-code, Chat Completions) against the simulator; returns its output. */
export function runQwenCode(options: RunOpenAiClientOptions): Promise<string> {
  return runInThrowawayRepo(options, async () => ({
    args: [require.resolve("@qwen-code/qwen-code/cli.js"), "-p", options.prompt, "--yolo"],
    env: {
      OPENAI_BASE_URL: `${options.baseUrl}/v1`,
      OPENAI_API_KEY: OPENAI_CLIENT_API_KEY,
      OPENAI_MODEL: OPENAI_CLIENT_MODEL,
      QWEN_CODE_SUPPRESS_YOLO_WARNING: "1",
    },
  }));
}

/**
 * Runs `codex exec <prompt>` (the Codex CLI, Responses) against the simulator; returns its output.
 * The native binary comes from the package's per-platform optional dependency (a registry
 * package), started through the package's own launcher.
 */
export function runCodex(options: RunOpenAiClientOptions): Promise<string> {
  return runInThrowawayRepo(options, async (home) => {
    const codexHome = join(home, ".codex");
    await mkdir(codexHome);
    await writeFile(
      join(codexHome, "config.toml"),
      [
        `model = "${OPENAI_CLIENT_MODEL}"`,
        `model_provider = "forkd-sim"`,
        "",
        "[model_providers.forkd-sim]",
        `name = "forkd simulator"`,
        `base_url = "${options.baseUrl}/v1"`,
        `env_key = "OPENAI_API_KEY"`,
        `wire_api = "responses"`,
        "supports_websockets = false",
        "",
      ].join("\n"),
    );
    return {
      args: [require.resolve("@openai/codex/bin/codex.js"), "exec", "--skip-git-repo-check", options.prompt],
      env: { CODEX_HOME: codexHome, OPENAI_API_KEY: OPENAI_CLIENT_API_KEY },
    };
  });
}
