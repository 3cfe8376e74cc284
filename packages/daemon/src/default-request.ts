// What a fork without cache-safe params is sent: a parent on its first turn has nothing to share,
// so the run still works, with the daemon's own system prompt and built-in tools (and its result
// says the cache was not shared).
import type { ForkPrefix, ToolDefinition } from "@forkd/protocol";
import type { DaemonConfig } from "./config.js";

/** The daemon's system prompt for forks that inherit none. */
export const DEFAULT_SYSTEM_PROMPT =
  "You are a forkd worker: a sub-agent running a task on behalf of a parent agent. Work in the " +
  "workspace with the tools you have, do not ask questions, and finish with a short report.";

const path = { type: "string", description: "Path, absolute or relative to the working directory" };

/** JSON Schema definitions of the built-in tools, in the order they are offered. */
export const BUILTIN_TOOL_DEFINITIONS: readonly ToolDefinition[] = [
  {
    name: "Read",
    description: "Read a text file; returns numbered lines.",
    input_schema: {
      type: "object",
      properties: { file_path: path, offset: { type: "integer" }, limit: { type: "integer" } },
      required: ["file_path"],
    },
  },
  {
    name: "Glob",
    description: "List files matching a glob pattern, newest first.",
    input_schema: {
      type: "object",
      properties: { pattern: { type: "string" }, path },
      required: ["pattern"],
    },
  },
  {
    name: "Grep",
    description: "Search file contents with a regular expression.",
    input_schema: {
      type: "object",
      properties: {
        pattern: { type: "string" },
        path,
        glob: { type: "string" },
        output_mode: { type: "string", enum: ["content", "files_with_matches", "count"] },
      },
      required: ["pattern"],
    },
  },
  {
    name: "Bash",
    description: "Run a shell command in the working directory.",
    input_schema: {
      type: "object",
      properties: { command: { type: "string" }, timeout: { type: "integer" } },
      required: ["command"],
    },
  },
  {
    name: "Write",
    description: "Write a file inside the workspace.",
    input_schema: {
      type: "object",
      properties: { file_path: path, content: { type: "string" } },
      required: ["file_path", "content"],
    },
  },
  {
    name: "Edit",
    description: "Replace exact text in a file inside the workspace.",
    input_schema: {
      type: "object",
      properties: {
        file_path: path,
        old_string: { type: "string" },
        new_string: { type: "string" },
        replace_all: { type: "boolean" },
      },
      required: ["file_path", "old_string", "new_string"],
    },
  },
];

/** The prefix used in place of a missing one. */
export function defaultForkParams(
  config: Pick<DaemonConfig, "defaultModel" | "defaultMaxTokens">,
): ForkPrefix {
  return {
    params: {
      model: config.defaultModel,
      max_tokens: config.defaultMaxTokens,
      system: DEFAULT_SYSTEM_PROMPT,
      tools: [...BUILTIN_TOOL_DEFINITIONS],
      messages: [],
    },
  };
}
