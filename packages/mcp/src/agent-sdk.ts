/**
 * forkd's fork tools for agents built on the Claude Agent SDK, in process: no MCP subprocess, the
 * same four tools (`fork`, `fork_status`, `fork_result`, `fork_abort`). The agent must still reach
 * the model through `forkd proxy` (`ANTHROPIC_BASE_URL` in `options.env`), which is how a fork
 * inherits the exact turn that called it.
 *
 * @example
 * ```ts
 * import { query } from "@anthropic-ai/claude-agent-sdk";
 * import { forkdAgentSdkServer } from "@forkd/mcp/agent-sdk";
 *
 * const forkd = forkdAgentSdkServer({ subagent: await NatsForkSubagent.create(nc), proxy: { url, controlToken } });
 * for await (const message of query({
 *   prompt: "Audit the repository; fork one child per package.",
 *   options: { mcpServers: { forkd: forkd.config }, env: { ANTHROPIC_BASE_URL: url, … } },
 * })) { … }
 * await forkd.close();
 * ```
 * @module
 */
import {
  createSdkMcpServer,
  type McpSdkServerConfigWithInstance,
  tool,
} from "@anthropic-ai/claude-agent-sdk";
import type { ForkTools } from "./fork-tools.js";
import { type ForkMcpServerOptions, forkToolsOf, MCP_SERVER_NAME } from "./stdio-server.js";
import { forkToolDefinitions, toolCallContext } from "./tool-definitions.js";

/** The in-process server: give `config` to `query()`'s `mcpServers` under the name `forkd`. */
export interface ForkdAgentSdkServer {
  config: McpSdkServerConfigWithInstance;
  tools: ForkTools;
  instanceId: string;
  close(): Promise<void>;
}

/** Builds the fork tools as an Agent SDK in-process MCP server. */
export function forkdAgentSdkServer(options: ForkMcpServerOptions): ForkdAgentSdkServer {
  const { tools, instanceId } = forkToolsOf(options);
  const config = createSdkMcpServer({
    name: MCP_SERVER_NAME,
    version: options.version ?? "0.1.0",
    tools: forkToolDefinitions(instanceId).map((definition) =>
      tool(definition.name, definition.description, definition.inputShape, async (args, extra) => {
        const result = await definition.call(tools, args as Record<string, unknown>, toolCallContext(extra));
        return { content: [{ type: "text", text: result.text }], isError: result.isError === true };
      }),
    ),
  });
  return {
    config,
    tools,
    instanceId,
    close: async () => {
      await tools.close();
    },
  };
}
