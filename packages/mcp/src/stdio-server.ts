// `forkd mcp`: the fork tools as an MCP server on stdio, the way Claude Code runs MCP servers
// (`--mcp-config`). Connects to NATS and to the proxy that sees the agent's turns.
import { randomBytes } from "node:crypto";
import type { NatsForkSubagent } from "@forkd/client";
import { ProxyClient, type ProxyEndpoint } from "@forkd/proxy";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ForkTools, type ForkToolsOptions, type TurnLookup } from "./fork-tools.js";
import { forkToolDefinitions, toolCallContext } from "./tool-definitions.js";

/** The server's name in MCP configs; Claude Code names its tools `mcp__forkd__fork` after it. */
export const MCP_SERVER_NAME = "forkd";

/** Options of {@link createForkMcpServer}. */
export interface ForkMcpServerOptions {
  /** Runs the children (the caller owns it and closes it). */
  subagent: NatsForkSubagent;
  /** The proxy the agent talks through, or how to find it at each lookup (it may start later). */
  proxy: ProxyEndpoint | (() => Promise<ProxyEndpoint>);
  limits?: ForkToolsOptions["limits"];
  /** @default a random 20-hex-digit id */
  instanceId?: string;
  /** Version reported to the client. @default "0.1.0" */
  version?: string;
}

/** A fork MCP server, not yet connected to a transport. */
export interface ForkMcpServer {
  server: McpServer;
  tools: ForkTools;
  instanceId: string;
  /** Serves on `transport` until it closes. */
  connect(transport: Transport): Promise<void>;
  close(): Promise<void>;
}

/** A random id for a server instance: it tells the proxy which agent's turns are this server's. */
export function newInstanceId(): string {
  return randomBytes(10).toString("hex");
}

/** A lookup through the proxy's control API; a function endpoint is asked again at each lookup. */
export function proxyLookup(endpoint: ForkMcpServerOptions["proxy"]): TurnLookup {
  if (typeof endpoint !== "function") {
    const client = new ProxyClient(endpoint);
    return (query) => client.findToolCall(query);
  }
  return async (query) => new ProxyClient(await endpoint()).findToolCall(query);
}

/** The fork tools of one server instance (a new id unless the options name one). */
export function forkToolsOf(options: ForkMcpServerOptions): { tools: ForkTools; instanceId: string } {
  const instanceId = options.instanceId ?? newInstanceId();
  const toolsOptions: ForkToolsOptions = {
    subagent: options.subagent,
    lookup: proxyLookup(options.proxy),
    instanceId,
  };
  if (options.limits !== undefined) toolsOptions.limits = options.limits;
  return { tools: new ForkTools(toolsOptions), instanceId };
}

/** Builds the MCP server with the four fork tools. */
export function createForkMcpServer(options: ForkMcpServerOptions): ForkMcpServer {
  const { tools, instanceId } = forkToolsOf(options);
  const server = new McpServer({ name: MCP_SERVER_NAME, version: options.version ?? "0.1.0" });
  for (const definition of forkToolDefinitions(instanceId)) {
    server.registerTool(
      definition.name,
      { description: definition.description, inputSchema: definition.inputShape },
      async (args: Record<string, unknown>, extra: unknown) => {
        const result = await definition.call(tools, args, toolCallContext(extra));
        return { content: [{ type: "text" as const, text: result.text }], isError: result.isError === true };
      },
    );
  }
  return {
    server,
    tools,
    instanceId,
    connect: (transport) => server.connect(transport),
    close: async () => {
      await server.close();
      await tools.close();
    },
  };
}
