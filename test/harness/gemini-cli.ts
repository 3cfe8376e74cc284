// The Gemini CLI (`@google/gemini-cli` from npm) as a real parent: run headless (`-p`) in a throwaway
// HOME and git repository against the simulator's Gemini routes (`GOOGLE_GEMINI_BASE_URL`), with an
// API key of no account (the simulator takes any) chosen in its settings as the auth method.
import { mkdir, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { inClientSandbox, runToExit } from "./client-sandbox.js";
import type { McpServerConfig } from "./openai-clients.js";

const require = createRequire(import.meta.url);

/** The API key the CLI is run with (and the daemons that fork it: one cache scope). */
export const GEMINI_CLIENT_API_KEY = "gemini-forkd-client-test";
/** The model the CLI is run with: one whose caching the simulator models. */
export const GEMINI_CLIENT_MODEL = "gemini-2.5-flash";

/** Options of {@link runGeminiCli}. */
export interface RunGeminiCliOptions {
  /** The simulator's base URL. */
  baseUrl: string;
  /** The CLI's Gemini base URL (`GOOGLE_GEMINI_BASE_URL`), e.g. a proxy's `/gemini`. @default baseUrl */
  geminiBaseUrl?: string;
  /** MCP servers for its settings.json `mcpServers`. */
  mcpServers?: Record<string, McpServerConfig>;
  prompt: string;
  /** @default 120_000 @unit milliseconds */
  timeoutMs?: number;
}

/** Runs `gemini -p <prompt> --yolo` against the simulator; returns what it printed. */
export function runGeminiCli(options: RunGeminiCliOptions): Promise<string> {
  return inClientSandbox("forkd-gemini-cli", async ({ home, repo }) => {
    await mkdir(join(home, ".gemini"));
    // Headless runs need an auth method chosen; an API key needs no browser or account.
    await writeFile(
      join(home, ".gemini", "settings.json"),
      JSON.stringify({
        security: { auth: { selectedType: "gemini-api-key" } },
        ...(options.mcpServers === undefined ? {} : { mcpServers: options.mcpServers }),
      }),
    );
    const cli = require.resolve("@google/gemini-cli/bundle/gemini.js");
    const { code, stdout, stderr } = await runToExit(
      process.execPath,
      [cli, "-p", options.prompt, "--yolo", "-m", GEMINI_CLIENT_MODEL],
      {
        cwd: repo,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          HOME: home,
          GEMINI_API_KEY: GEMINI_CLIENT_API_KEY,
          GOOGLE_GEMINI_BASE_URL: options.geminiBaseUrl ?? options.baseUrl,
          // The throwaway repository is the workspace; trusting it skips an interactive prompt.
          GEMINI_CLI_TRUST_WORKSPACE: "true",
        },
        timeoutMs: options.timeoutMs ?? 120_000,
      },
    );
    if (code !== 0) throw new Error(`gemini exited ${code}: ${stderr.slice(-2000)}${stdout.slice(-2000)}`);
    return stdout;
  });
}
