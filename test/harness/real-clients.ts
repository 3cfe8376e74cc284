import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { inClientSandbox, runToExit } from "./client-sandbox.js";

const require = createRequire(import.meta.url);

/** The API key Claude Code is run with; the simulator's cache is per key, as the API's is per organisation. */
export const CLAUDE_CODE_API_KEY = "sk-forkd-real-client-test";

/**
 * The Claude Code binary. The `@anthropic-ai/claude-code` package ships it as a per-platform
 * optional dependency and copies it into place in a postinstall script, which pnpm does not run;
 * the platform package's binary is the same file.
 */
export function claudeCodeBinary(): string {
  const platformPackage = `@anthropic-ai/claude-code-${process.platform}-${process.arch}`;
  try {
    // A dependency of the wrapper package, not of ours: resolve it from there.
    const wrapper = createRequire(require.resolve("@anthropic-ai/claude-code/package.json"));
    return join(dirname(wrapper.resolve(`${platformPackage}/package.json`)), "claude");
  } catch (cause) {
    throw new Error(
      `${platformPackage} is not installed (a devDependency through @anthropic-ai/claude-code)`,
      {
        cause,
      },
    );
  }
}

/** What `claude -p --output-format json` printed, the fields the tests read. */
export interface ClaudeCodeResult {
  is_error: boolean;
  result: string;
  num_turns: number;
  session_id: string;
  modelUsage: Record<string, unknown>;
}

/** Options of {@link runClaudeCode}. */
export interface RunClaudeCodeOptions {
  /** Where the client sends its API calls (ANTHROPIC_BASE_URL): the simulator, or a proxy in front of it. */
  baseUrl: string;
  prompt: string;
  /** `--model`; Claude Code's default when absent. */
  model?: string | undefined;
  /** Extra environment (e.g. `MAX_THINKING_TOKENS`). */
  env?: Record<string, string> | undefined;
  /** @default 120_000 @unit milliseconds */
  timeoutMs?: number;
  /** Tools allowed without asking. @default ["Read", "Agent"] */
  allowedTools?: readonly string[];
  /** Claude Code's `--mcp-config` (written to a file), or the Agent SDK's `mcpServers`. */
  mcpServers?: Record<string, unknown>;
  /**
   * Claude Code only: the user's message as `--input-format stream-json` content blocks on stdin
   * (images, prompts too long for a command line) instead of `prompt`.
   */
  content?: readonly Record<string, unknown>[];
}

/** A throwaway HOME and git repository (holding `notes.txt`) a real client runs in. */
interface Sandbox {
  repo: string;
  env: Record<string, string>;
}

/** Runs `use` in a fresh HOME and git repository pointed at the simulator; removes them after. */
async function inThrowawayRepo<T>(
  options: Pick<RunClaudeCodeOptions, "baseUrl" | "env">,
  use: (sandbox: Sandbox) => Promise<T>,
): Promise<T> {
  return inClientSandbox("forkd-real-client", ({ home, repo }) => {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      ANTHROPIC_BASE_URL: options.baseUrl,
      ANTHROPIC_API_KEY: CLAUDE_CODE_API_KEY,
      // No telemetry, update checks or error reporting: the simulator is the only host it talks to.
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
      ...options.env,
    };
    return use({ repo, env });
  });
}

/**
 * Runs the Claude Agent SDK's `query()` with `prompt` against the simulator in a fresh HOME and git
 * repository, Read and Agent allowed, and returns its result message.
 * @throws Error when the run does not end with a successful result.
 */
export async function runAgentSdk(
  options: Omit<RunClaudeCodeOptions, "model">,
): Promise<{ result: string; sessionId: string }> {
  const { query } = await import("@anthropic-ai/claude-agent-sdk");
  return inThrowawayRepo(options, async ({ repo, env }) => {
    for await (const message of query({
      prompt: options.prompt,
      options: {
        cwd: repo,
        env,
        allowedTools: [...(options.allowedTools ?? ["Read", "Agent"])],
        ...(options.mcpServers === undefined ? {} : { mcpServers: options.mcpServers as never }),
      },
    })) {
      if (message.type !== "result") continue;
      if (message.subtype !== "success" || message.is_error) {
        throw new Error(`the Agent SDK's run failed: ${JSON.stringify(message).slice(0, 2000)}`);
      }
      return { result: message.result, sessionId: message.session_id };
    }
    throw new Error("the Agent SDK's run ended without a result");
  });
}

/**
 * Runs `claude -p <prompt> --output-format json` against the simulator in a fresh HOME and a fresh
 * git repository holding `notes.txt`, and returns its JSON result. Everything it created is removed.
 * @throws Error with its stderr when it exits non-zero or prints no JSON.
 */
export async function runClaudeCode(options: RunClaudeCodeOptions): Promise<ClaudeCodeResult> {
  return inThrowawayRepo(options, (sandbox) => claudeCodeIn(sandbox, options, []));
}

/**
 * Runs Claude Code on `interrupted` and stops it with SIGINT (Ctrl-C) once the model's reply has
 * started streaming, then, in the same HOME and repository, `claude -p --continue` as
 * {@link runClaudeCode} runs it; returns that second run's result.
 */
export async function runClaudeCodeAfterInterrupt(
  options: RunClaudeCodeOptions & { interrupted: string },
): Promise<ClaudeCodeResult> {
  return inThrowawayRepo(options, async (sandbox) => {
    const args = ["-p", options.interrupted, "--output-format", "stream-json", "--verbose"];
    const child = spawn(claudeCodeBinary(), [...args, "--include-partial-messages"], {
      cwd: sandbox.repo,
      env: sandbox.env,
      stdio: ["ignore", "pipe", "ignore"],
    });
    const exited = new Promise((resolve) => child.once("close", resolve));
    let seen = "";
    for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
      seen += chunk.toString("utf8");
      if (!seen.includes('"text_delta"')) continue;
      child.kill("SIGINT");
      break;
    }
    child.stdout.resume();
    await exited;
    return claudeCodeIn(sandbox, options, ["--continue"]);
  });
}

async function claudeCodeIn(
  { repo, env }: Sandbox,
  options: RunClaudeCodeOptions,
  extraArgs: readonly string[],
): Promise<ClaudeCodeResult> {
  // Read needs no permission in print mode; the Agent tool runs its sub-agent in-process.
  const allowed = (options.allowedTools ?? ["Read", "Agent"]).join(",");
  const args =
    options.content === undefined
      ? ["-p", options.prompt, "--output-format", "json", "--allowedTools", allowed]
      : ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"];
  if (options.content !== undefined) args.push("--allowedTools", allowed);
  args.push(...extraArgs);
  if (options.model !== undefined) args.push("--model", options.model);
  if (options.mcpServers !== undefined) {
    const config = join(repo, "..", "mcp.json");
    await writeFile(config, JSON.stringify({ mcpServers: options.mcpServers }));
    args.push("--mcp-config", config, "--strict-mcp-config");
  }
  const stdin =
    options.content === undefined
      ? undefined
      : `${JSON.stringify({ type: "user", message: { role: "user", content: options.content } })}\n`;
  const { code, stdout, stderr } = await runToExit(claudeCodeBinary(), args, {
    cwd: repo,
    env,
    timeoutMs: options.timeoutMs ?? 120_000,
    stdin,
  });
  if (code !== 0) throw new Error(`claude exited ${code}: ${stderr.slice(-2000)}${stdout.slice(-2000)}`);
  // stream-json output: one message a line, the result last.
  return JSON.parse(stdout.trim().split("\n").at(-1) ?? "") as ClaudeCodeResult;
}
