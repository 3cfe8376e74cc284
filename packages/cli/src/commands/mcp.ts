// `forkd mcp`: the fork tools as an MCP server on stdio, for Claude Code's `--mcp-config`. stdout is
// the MCP channel: everything else goes to stderr.
import { createForkMcpServer } from "@forkd/mcp";
import { type ProxyEndpoint, proxyStatePath, readProxyState } from "@forkd/proxy";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { CommandContext } from "../context.js";
import { CliError } from "../errors.js";
import { whenAborted } from "../interrupt.js";
import { connectTarget, loadOwnerKey, NATS_FLAGS, natsTarget, openSubagent } from "../nats.js";
import {
  COMMON_FLAGS,
  expectPositionals,
  parseCommandLine,
  parseDuration,
  parseInteger,
} from "../options.js";

const OPTIONS = {
  ...COMMON_FLAGS,
  ...NATS_FLAGS,
  proxy: { type: "string" },
  state: { type: "string" },
  "max-turns": { type: "string" },
  timeout: { type: "string" },
} as const;

/** Serves MCP on stdin/stdout until the client closes it (or SIGINT/SIGTERM). */
export async function run(args: string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine("mcp", args, OPTIONS);
  expectPositionals("mcp", positionals, { min: 0, max: 0, names: "" });
  const env = context.io.env;
  const limits: { max_turns?: number; timeout_ms?: number } = {};
  if (values["max-turns"] !== undefined) limits.max_turns = parseInteger("max-turns", values["max-turns"]);
  if (values.timeout !== undefined) limits.timeout_ms = parseDuration("timeout", values.timeout);
  const statePath = values.state ?? proxyStatePath(env);
  const token = env.FORKD_PROXY_TOKEN;
  // The proxy may start after the agent (and this server): it is looked up at each fork call.
  const proxy = async (): Promise<ProxyEndpoint> => {
    if (values.proxy !== undefined && token !== undefined) return { url: values.proxy, controlToken: token };
    const state = await readProxyState(statePath);
    if (state === undefined) {
      throw new CliError(
        "config",
        `no forkd proxy is running (nothing at ${statePath}): start \`forkd proxy\` first`,
      );
    }
    return values.proxy === undefined ? state : { url: values.proxy, controlToken: state.controlToken };
  };
  const target = natsTarget(values, env);
  const nc = await connectTarget(target, { name: "forkd-mcp" });
  try {
    const subagent = await openSubagent(nc, target.prefix, await loadOwnerKey(env));
    const server = createForkMcpServer({
      subagent,
      proxy,
      ...(Object.keys(limits).length === 0 ? {} : { limits }),
    });
    const transport = new StdioServerTransport(
      context.io.stdin as NodeJS.ReadStream,
      context.io.stdout as NodeJS.WriteStream,
    );
    const closed = new Promise<void>((resolve) => {
      server.server.server.onclose = () => resolve();
      // The client closing our stdin is how an MCP session over stdio ends.
      context.io.stdin.once("end", () => resolve());
    });
    await server.connect(transport);
    await Promise.race([closed, whenAborted(context.interruption.signal)]);
    await server.close();
    await subagent.close();
  } finally {
    await nc.drain().catch(() => nc.close());
  }
  return 0;
}
