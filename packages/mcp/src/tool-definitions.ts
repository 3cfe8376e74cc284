// The four tools as the model sees them: names, descriptions, input shapes. One definition for both
// carriers (the MCP SDK and the Agent SDK take the same zod shapes).
import { mcpInstanceMarker } from "@forkd/proxy";
import { z } from "zod";
import type { ForkTools, ToolCallContext, ToolText } from "./fork-tools.js";

const runSelector = {
  run_id: z.string().min(1).max(128).optional().describe("The run id `fork` returned."),
  label: z.string().min(1).max(120).optional().describe("The label given to `fork`, instead of a run id."),
};

const timeout = z
  .number()
  .min(0)
  .max(3600)
  .optional()
  .describe("Seconds to wait for the result before answering that it is still running (default 600).");

/** A tool: its name, what the model is told, its input shape and what it does. */
export interface ForkToolDefinition {
  name: "fork" | "fork_status" | "fork_result" | "fork_abort";
  description: string;
  inputShape: z.ZodRawShape;
  call(tools: ForkTools, args: Record<string, unknown>, context: ToolCallContext): Promise<ToolText>;
}

/** The MCP request's `_meta` key under which Claude Code (and the Agent SDK) names the call's `tool_use` id. */
const TOOL_USE_ID_META = "claudecode/toolUseId";

/** What a tool handler's `extra` (MCP SDK or Agent SDK) says about the call. */
export function toolCallContext(extra: unknown): ToolCallContext {
  const meta = (extra as { _meta?: Record<string, unknown> } | null | undefined)?._meta;
  const toolUseId = meta?.[TOOL_USE_ID_META];
  return typeof toolUseId === "string" && toolUseId !== "" ? { toolUseId } : {};
}

/** The tool definitions of one server instance (its id goes in the fork tool's description). */
export function forkToolDefinitions(instanceId: string): ForkToolDefinition[] {
  return [
    {
      name: "fork",
      // The marker goes first: clients may cut long descriptions, and the proxy must find it.
      description: [
        mcpInstanceMarker(instanceId),
        "Fork a sub-agent that inherits this entire conversation and works on the directive in the background, on a forkd cluster.",
        "It starts from exactly this point of the conversation, so the provider's prompt cache serves it cheaply; give it a short directive, not a briefing.",
        "Several fork calls in one reply start together. Returns at once with a run_id; the child's report comes from fork_result.",
        "Set wait to true to get the report in this call instead.",
      ].join(" "),
      inputShape: {
        directive: z.string().min(1).describe("What the child should do."),
        label: z
          .string()
          .min(1)
          .max(120)
          .optional()
          .describe("A short name for the child, to refer to it later."),
        wait: z
          .boolean()
          .optional()
          .describe("Wait for the child to finish and return its report (default false)."),
        timeout_s: timeout,
      },
      call: (tools, args, context) => tools.fork(args as never, context),
    },
    {
      name: "fork_status",
      description: "List the forks this session started (or the one named) with their status and age.",
      inputShape: runSelector,
      call: (tools, args) => tools.status(args),
    },
    {
      name: "fork_result",
      description:
        "Wait for forks to finish and return each one's <task-notification> report. Name a run_id or label; with neither, every fork of this session not reported yet.",
      inputShape: { ...runSelector, timeout_s: timeout },
      call: (tools, args) => tools.result(args),
    },
    {
      name: "fork_abort",
      description: "Stop a running fork, named by run_id or label.",
      inputShape: {
        ...runSelector,
        reason: z.string().max(500).optional().describe("Why, for the run's log."),
      },
      call: (tools, args) => tools.abort(args),
    },
  ];
}
