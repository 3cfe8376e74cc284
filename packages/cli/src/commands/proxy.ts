// `forkd proxy`: the Anthropic API proxy an agent points ANTHROPIC_BASE_URL at (docs/any-agent.md).
// `forkd capture DIR` is the same proxy writing each turn as a parent-turn file. The first stdout
// line is the proxy's URL; the control token goes only to the state file (mode 0600).
import { isIP } from "node:net";
import { createProcessLogger, LOG_FORMATS, LOG_LEVELS } from "@forkd/daemon";
import {
  DEFAULT_GEMINI_UPSTREAM,
  DEFAULT_OPENAI_UPSTREAM,
  DEFAULT_UPSTREAM,
  GEMINI_ROUTE,
  OPENAI_ROUTE,
  proxyStatePath,
  type RunningProxy,
  removeProxyState,
  startProxy,
  turnCapture,
  writeProxyState,
} from "@forkd/proxy";
import type { CommandContext } from "../context.js";
import { UsageError } from "../errors.js";
import { whenAborted } from "../interrupt.js";
import { writeLine } from "../io.js";
import { COMMON_FLAGS, expectPositionals, parseChoice, parseCommandLine, parseInteger } from "../options.js";

const OPTIONS = {
  ...COMMON_FLAGS,
  upstream: { type: "string" },
  "openai-upstream": { type: "string" },
  "gemini-upstream": { type: "string" },
  listen: { type: "string" },
  state: { type: "string" },
  "keep-turns": { type: "string" },
  "log-level": { type: "string" },
  "log-format": { type: "string" },
  json: { type: "boolean" },
} as const;

/**
 * What the proxy logs unless told otherwise: what went wrong (an upstream it could not reach, a turn
 * it could not record, a capture file it could not write). stdout is for its URL and captured paths.
 */
const DEFAULT_PROXY_LOG_LEVEL = "warn";

/** The port `forkd proxy` listens on when `--listen` does not say. */
export const DEFAULT_PROXY_PORT = 4080;

/** `HOST:PORT`, `:PORT` or `PORT` → host and port; IPv6 as `[::1]:PORT`. */
export function parseListen(text: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(text) ?? /^()()(\d+)$/.exec(text);
  if (match === null) throw new UsageError(`--listen: expected HOST:PORT, got ${JSON.stringify(text)}`);
  const host = match[1] || match[2] || "127.0.0.1";
  return { host, port: parseInteger("listen", match[3]!, { min: 0, max: 65535 }) };
}

/** Whether `host` is a loopback address (what `forkd proxy` should listen on: it sees credentials). */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || (isIP(host) === 4 && host.startsWith("127."));
}

function httpUrlFlag(flag: string, value: string): string {
  if (!/^https?:\/\//.test(value)) throw new UsageError(`--${flag}: expected an http(s) URL, got ${value}`);
  return value;
}

/** Serves until SIGINT/SIGTERM; with `captureDir`, writes each turn there. */
export async function serveProxy(
  command: "proxy" | "capture",
  args: string[],
  context: CommandContext,
): Promise<number> {
  const { values, positionals } = parseCommandLine(command, args, OPTIONS);
  const capturing = command === "capture";
  expectPositionals(
    command,
    positionals,
    capturing ? { min: 1, max: 1, names: "DIR" } : { min: 0, max: 0, names: "" },
  );
  const captureDir = capturing ? positionals[0] : undefined;
  const upstream = httpUrlFlag("upstream", values.upstream ?? DEFAULT_UPSTREAM);
  const openaiUpstream = httpUrlFlag("openai-upstream", values["openai-upstream"] ?? DEFAULT_OPENAI_UPSTREAM);
  const geminiUpstream = httpUrlFlag("gemini-upstream", values["gemini-upstream"] ?? DEFAULT_GEMINI_UPSTREAM);
  const { host, port } =
    values.listen === undefined
      ? { host: "127.0.0.1", port: DEFAULT_PROXY_PORT }
      : parseListen(values.listen);
  const err = context.io.stderr;
  if (!isLoopback(host)) {
    writeLine(
      err,
      `forkd ${command}: listening on ${host}, not loopback: anyone who can reach it can use the credentials agents send through it`,
    );
  }
  const statePath = values.state ?? proxyStatePath(context.io.env);
  const env = context.io.env;
  const level = parseChoice(
    "log-level",
    values["log-level"] ?? env.FORKD_LOG_LEVEL,
    LOG_LEVELS,
    DEFAULT_PROXY_LOG_LEVEL,
  );
  const format = parseChoice("log-format", values["log-format"] ?? env.FORKD_LOG_FORMAT, LOG_FORMATS, "auto");
  const logger = createProcessLogger({
    level,
    format,
    bindings: { command },
    // pino-pretty writes to the process's stderr itself; any other stream gets JSON lines.
    destination: err === process.stderr ? undefined : err,
  });
  let proxy: RunningProxy;
  try {
    proxy = await startProxy({
      logger,
      upstream,
      openaiUpstream,
      geminiUpstream,
      host,
      port,
      ...(values["keep-turns"] === undefined
        ? {}
        : {
            limits: {
              turnsPerSession: parseInteger("keep-turns", values["keep-turns"], { min: 1, max: 1000 }),
            },
          }),
      ...(captureDir === undefined
        ? {}
        : {
            onTurn: turnCapture(captureDir, (path) =>
              writeLine(context.io.stdout, values.json ? JSON.stringify({ captured: path }) : path),
            ),
          }),
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE" || code === "EACCES" || code === "EADDRNOTAVAIL") {
      throw new UsageError(`cannot listen on ${host}:${port}: ${code}`, { cause: error });
    }
    throw error;
  }
  await writeProxyState(statePath, { url: proxy.url, controlToken: proxy.controlToken, pid: process.pid });
  writeLine(
    context.io.stdout,
    values.json
      ? JSON.stringify({ url: proxy.url, upstream, openaiUpstream, geminiUpstream, state: statePath })
      : proxy.url,
  );
  writeLine(err, `forkd ${command}: ${proxy.url} → ${upstream}; set ANTHROPIC_BASE_URL=${proxy.url}`);
  writeLine(
    err,
    `forkd ${command}: ${proxy.url}${OPENAI_ROUTE} → ${openaiUpstream}; set an OpenAI agent's base URL (OPENAI_BASE_URL, Codex's base_url) to ${proxy.url}${OPENAI_ROUTE}`,
  );
  writeLine(
    err,
    `forkd ${command}: ${proxy.url}${GEMINI_ROUTE} → ${geminiUpstream}; set GOOGLE_GEMINI_BASE_URL=${proxy.url}${GEMINI_ROUTE}`,
  );
  await whenAborted(context.interruption.signal);
  await proxy.close();
  await removeProxyState(statePath, process.pid);
  return 0;
}

/** `forkd proxy`. */
export function run(args: string[], context: CommandContext): Promise<number> {
  return serveProxy("proxy", args, context);
}
