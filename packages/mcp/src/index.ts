/**
 * forkd's fork tools over MCP, for agents forkd did not write: `fork`, `fork_status`, `fork_result`
 * and `fork_abort`. `forkd mcp` serves them on stdio for Claude Code; `@forkd/mcp/agent-sdk` gives
 * them to the Claude Agent SDK in process. Either way the agent talks to the model through
 * `forkd proxy`, and a `fork` call forks the exact turn that made it.
 *
 * @example
 * ```ts
 * import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
 * import { createForkMcpServer } from "@forkd/mcp";
 *
 * const server = createForkMcpServer({ subagent: await NatsForkSubagent.create(nc), proxy: { url, controlToken } });
 * await server.connect(new StdioServerTransport());
 * ```
 * @module
 */
export {
  type ForkArgs,
  ForkTools,
  type ForkToolsOptions,
  type RunSelector,
  type ToolCallContext,
  type ToolText,
  type TurnLookup,
} from "./fork-tools.js";
export {
  createForkMcpServer,
  type ForkMcpServer,
  type ForkMcpServerOptions,
  MCP_SERVER_NAME,
  newInstanceId,
  proxyLookup,
} from "./stdio-server.js";
export { type ForkToolDefinition, forkToolDefinitions, toolCallContext } from "./tool-definitions.js";
