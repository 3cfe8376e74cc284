import { mkdir, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { inClientSandbox, runToExit } from "./client-sandbox.js";

const require = createRequire(import.meta.url);

/** The API key both clients are run with (and the daemons that fork them: one cache scope). */
export const OPENAI_CLIENT_API_KEY = "sk-forkd-openai-client-test";
/** The model both clients are run with: one whose caching the simulator models. */
export const OPENAI_CLIENT_MODEL = "gpt-5";

/** An MCP server a client starts (stdio). */
export interface McpServerConfig {
  command: string;
  args: string[];
  env?: Record<string, string>;
}

/** Options of {@link runQwenCode} and {@link runCodex}. */
export interface RunOpenAiClientOptions {
  /** The simulator's base URL (without `/v1`). */
  baseUrl: string;
  /** The client's OpenAI base URL, when not `<baseUrl>/v1` (`forkd proxy`'s `<url>/openai`). */
  openaiBaseUrl?: string;
  prompt: string;
  /** MCP servers the client starts, by name: qwen-code's settings.json, the Codex CLI's config.toml. */
  mcpServers?: Record<string, McpServerConfig>;
  /** qwen-code only: more of `$HOME/.qwen/settings.json` (e.g. `tools.visible`). */
  qwenSettings?: Record<string, unknown>;
  /** @default 120_000 @unit milliseconds */
  timeoutMs?: number;
}

/** Runs `command args` in a fresh HOME and git repository holding `notes.txt`; removes them after. */
async function runInThrowawayRepo(
  options: RunOpenAiClientOptions,
  prepare: (home: string) => Promise<{ args: string[]; env: Record<string, string> }>,
): Promise<string> {
  return inClientSandbox("forkd-openai-client", async ({ home, repo }) => {
    const { args, env } = await prepare(home);
    const { code, stdout, stderr } = await runToExit(process.execPath, args, {
      cwd: repo,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, ...env },
      timeoutMs: options.timeoutMs ?? 120_000,
    });
    if (code !== 0)
      throw new Error(`${args[0]} exited ${code}: ${stderr.slice(-2000)}${stdout.slice(-2000)}`);
    return stdout;
  });
}

function openaiBaseUrlOf(options: RunOpenAiClientOptions): string {
  return options.openaiBaseUrl ?? `${options.baseUrl}/v1`;
}

/** Runs `qwen -p <prompt>` (qwen-code, Chat Completions) against the simulator; returns its output. */
export function runQwenCode(options: RunOpenAiClientOptions): Promise<string> {
  return runInThrowawayRepo(options, async (home) => {
    if (options.mcpServers !== undefined || options.qwenSettings !== undefined) {
      await mkdir(join(home, ".qwen"));
      await writeFile(
        join(home, ".qwen", "settings.json"),
        JSON.stringify({ ...options.qwenSettings, mcpServers: options.mcpServers ?? {} }, null, 2),
      );
    }
    return {
      args: [require.resolve("@qwen-code/qwen-code/cli.js"), "-p", options.prompt, "--yolo"],
      env: {
        OPENAI_BASE_URL: openaiBaseUrlOf(options),
        OPENAI_API_KEY: OPENAI_CLIENT_API_KEY,
        OPENAI_MODEL: OPENAI_CLIENT_MODEL,
        QWEN_CODE_SUPPRESS_YOLO_WARNING: "1",
      },
    };
  });
}

/** A TOML basic string (JSON's escapes are TOML's). */
const tomlString = (text: string) => JSON.stringify(text);

/** The Codex CLI's `[mcp_servers.<name>]` tables. */
function codexMcpServers(servers: Record<string, McpServerConfig>): string[] {
  return Object.entries(servers).flatMap(([name, server]) => [
    `[mcp_servers.${name}]`,
    `command = ${tomlString(server.command)}`,
    `args = [${server.args.map(tomlString).join(", ")}]`,
    // `codex exec` never asks: without this, every MCP call answers "requires approval".
    `default_tools_approval_mode = "approve"`,
    // Without it, the first request may leave before the server's tools are listed.
    "required = true",
    ...(server.env === undefined
      ? []
      : [
          `env = { ${Object.entries(server.env)
            .map(([key, value]) => `${key} = ${tomlString(value)}`)
            .join(", ")} }`,
        ]),
    "",
  ]);
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
        `base_url = "${openaiBaseUrlOf(options)}"`,
        `env_key = "OPENAI_API_KEY"`,
        `wire_api = "responses"`,
        "supports_websockets = false",
        "",
        ...codexMcpServers(options.mcpServers ?? {}),
      ].join("\n"),
    );
    return {
      args: [require.resolve("@openai/codex/bin/codex.js"), "exec", "--skip-git-repo-check", options.prompt],
      env: { CODEX_HOME: codexHome, OPENAI_API_KEY: OPENAI_CLIENT_API_KEY },
    };
  });
}
