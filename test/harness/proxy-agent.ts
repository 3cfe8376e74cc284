// `forkd proxy` and `forkd mcp` as an agent from npm meets them in the any-agent tests: the proxy
// started by the CLI for the whole test file (its upstreams the simulator), and `forkd mcp` as the
// agent's MCP config starts it.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FORK_BOILERPLATE_TAG } from "@forkd/core/internal";
import type { RequestLogEntry } from "@forkd/sim";
import { afterAll, beforeAll } from "vitest";
import { type CliProcess, cleanEnv, FORKD_BIN, spawnCli } from "../cli/support.js";
import type { ForkdStack } from "./forkd.js";
import type { McpServerConfig } from "./openai-clients.js";

/** A running `forkd proxy`: its URL and its state file (where `forkd mcp` finds it). */
export interface ProxyCli {
  url: string;
  statePath: string;
}

/**
 * Starts `forkd proxy` (on a free loopback port) before the file's tests and stops it after;
 * `upstreams` gives its upstream flags for the simulator's URL.
 */
export function useProxyCli(
  stack: () => ForkdStack,
  upstreams: (simUrl: string) => string[],
): () => ProxyCli {
  let workspace: string | undefined;
  let proxy: CliProcess | undefined;
  let running: ProxyCli | undefined;
  beforeAll(async () => {
    workspace = await mkdtemp(join(tmpdir(), "forkd-proxy-agent-"));
    const statePath = join(workspace, "proxy.json");
    proxy = spawnCli([
      "proxy",
      "--listen",
      "127.0.0.1:0",
      ...upstreams(stack().sim.url),
      "--state",
      statePath,
    ]);
    running = { url: await proxy.waitForLine((line) => line.startsWith("http://")), statePath };
  });
  afterAll(async () => {
    await proxy?.stop("SIGTERM");
    if (workspace) await rm(workspace, { recursive: true, force: true });
  });
  return () => {
    if (running === undefined) throw new Error("the proxy is not running");
    return running;
  };
}

/** `forkd mcp` as an agent's MCP config starts it: on the stack's NATS, finding the proxy in its state file. */
export function forkdMcpServers(stack: ForkdStack, proxy: ProxyCli): Record<string, McpServerConfig> {
  return {
    forkd: {
      command: process.execPath,
      args: [FORKD_BIN, "mcp", "--nats", stack.server.url, "--state", proxy.statePath],
      env: cleanEnv(),
    },
  };
}

/** Whether a logged request is a fork child's (its directive carries the boilerplate tag). */
export const isForkChild = (entry: RequestLogEntry): boolean =>
  entry.body.includes(`<${FORK_BOILERPLATE_TAG}`);
