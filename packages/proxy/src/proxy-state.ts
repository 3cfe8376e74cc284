// Where a running `forkd proxy` says it is: a small file only its user can read, so that `forkd mcp`
// (started by the agent, from an MCP config that should hold no secrets) finds the proxy and its
// control token with no flags.
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import type { ProxyEndpoint } from "./proxy-client.js";

/** `$FORKD_PROXY_STATE`, else `$XDG_STATE_HOME/forkd/proxy.json`, else `~/.local/state/forkd/proxy.json`. */
export function proxyStatePath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.FORKD_PROXY_STATE) return env.FORKD_PROXY_STATE;
  const stateHome = env.XDG_STATE_HOME || join(env.HOME || homedir(), ".local", "state");
  return join(stateHome, "forkd", "proxy.json");
}

/** Writes the endpoint (mode 0600, atomically). */
export async function writeProxyState(
  path: string,
  endpoint: ProxyEndpoint & { pid: number },
): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(endpoint)}\n`, { mode: 0o600 });
  await rename(temp, path);
}

/** Reads the endpoint a proxy wrote; undefined when there is none. */
export async function readProxyState(path: string): Promise<(ProxyEndpoint & { pid?: number }) | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const parsed = JSON.parse(text) as Partial<ProxyEndpoint> & { pid?: number };
  if (typeof parsed.url !== "string" || typeof parsed.controlToken !== "string") {
    throw new TypeError(`${path}: expected { url, controlToken }`);
  }
  return parsed.pid === undefined
    ? { url: parsed.url, controlToken: parsed.controlToken }
    : { url: parsed.url, controlToken: parsed.controlToken, pid: parsed.pid };
}

/** Removes the file if it still names this process's proxy. */
export async function removeProxyState(path: string, pid: number): Promise<void> {
  const state = await readProxyState(path).catch(() => undefined);
  if (state?.pid === pid) await rm(path, { force: true });
}
