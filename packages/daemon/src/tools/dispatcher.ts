// The daemon's built-in tools behind the core ToolDispatcher contract: Read, Glob, Grep, Bash, Write
// and Edit, confined to one workspace; the fork tool refused (the recursion guard); anything else
// handed to a fallback dispatcher (the daemon's NATS tool-host router).
import {
  DEFAULT_FORK_TOOL_NAMES,
  type ToolCall,
  type ToolDispatcher,
  type ToolExecutionContext,
  type ToolOutcome,
} from "@forkd/core";
import type { z } from "zod";
import type { DaemonLogger } from "../logger.js";
import { type BashPolicy, bashTool, isReadOnlyCommand } from "./bash.js";
import {
  ABORTED,
  confine,
  describeError,
  fail,
  hiddenFilesOf,
  type PathAlias,
  type ToolRun,
} from "./context.js";
import { globTool } from "./glob.js";
import { grepTool } from "./grep.js";
import {
  BashInputSchema,
  EditInputSchema,
  GlobInputSchema,
  GrepInputSchema,
  parseToolInput,
  ReadInputSchema,
  WriteInputSchema,
} from "./inputs.js";
import { readTool } from "./read.js";
import type { Sandbox } from "./sandbox.js";
import { daemonSecrets, type NamedSecret, scrubSecrets } from "./secrets.js";
import { DEFAULT_SKIPPED_DIRS } from "./walk.js";
import { editTool, writeTool } from "./write.js";

/** Names of the built-in tools. */
export const BUILTIN_TOOL_NAMES = ["Read", "Glob", "Grep", "Bash", "Write", "Edit"] as const;
export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number];

/** Options of {@link createBuiltinToolDispatcher}. */
export interface BuiltinToolDispatcherOptions {
  /** Absolute root of the run's files; every path a tool touches is confined to it. */
  workspace: string;
  /** What Bash may run. */
  bashPolicy: BashPolicy;
  /** Timeout of a Bash call that gives none. @default 120000 @unit ms */
  bashTimeoutMs?: number;
  /** Variables added to Bash's minimal environment (for example a `GIT_AUTHOR_NAME`). @default {} */
  bashEnv?: Readonly<Record<string, string>>;
  /**
   * The sandbox Bash runs in (see `probeSandbox`). Absent: commands run unsandboxed, which only an
   * operator's explicit `tools.sandbox: "off"` should lead to.
   */
  sandbox?: Sandbox | undefined;
  /** Directories a sandboxed command sees besides {@link workspace} (a worktree's repository). @default [] */
  sandboxVisible?: readonly string[];
  /** A tool result is cut to this size, with a marker saying how much was cut. @default 30000 @unit bytes */
  outputCapBytes?: number;
  /** Runs tools this dispatcher does not provide; without it they are answered with an error result. */
  fallback?: ToolDispatcher;
  /** Tools refused with the recursion guard's message. @default ["Agent", "Task"] */
  forkToolNames?: readonly string[];
  /** Built-in tools served here; the others go to `fallback`. @default all of {@link BUILTIN_TOOL_NAMES} */
  tools?: readonly BuiltinToolName[];
  /** Directory names Glob and Grep do not descend into (unless the pattern names them). @default [".git", "node_modules"] */
  skipDirs?: readonly string[];
  /**
   * The longest one Grep call may spend matching (on a worker thread) before it is stopped and the
   * model told to narrow it. @default GREP_MATCH_TIME_LIMIT_MS (30 s) @unit ms
   */
  grepTimeLimitMs?: number;
  /**
   * Absolute directories that stand for ones in the workspace, such as the parent's checkout for a
   * worktree run (see `RunWorktree.pathAlias`): a path the model copied from the parent's conversation
   * is re-rooted before confinement. @default []
   */
  pathAliases?: readonly PathAlias[];
  /**
   * Values no tool result may carry (the daemon's API key, NATS password, …), replaced by a marker.
   * @default the daemon's secrets: its secret-named environment variables and those its configuration holds (see `daemonSecrets`)
   */
  secrets?: readonly NamedSecret[];
  /**
   * Files no built-in tool may read or change, by any path: the daemon's credential files (see
   * `secretFilesOf`). Bash's sandbox covers them; this keeps Read, Grep, Edit and Write off them.
   * @default the sandbox's `hidden` files, else none
   */
  hiddenFiles?: readonly string[];
  /** Receives a debug line per call and a warning when a tool throws. */
  logger?: Pick<DaemonLogger, "debug" | "warn">;
}

/** Told to a fork that calls the fork tool. */
export function recursionRefusal(toolName: string): string {
  return (
    `Refused: you are a fork (a sub-agent forked from a parent conversation), and a fork cannot fork again: ` +
    `${toolName} is not available to you. Do the work yourself with your other tools, then give your answer.`
  );
}

interface BuiltinTool {
  run(input: unknown, run: ToolRun): Promise<ToolOutcome>;
  safeToRepeat(input: unknown): boolean;
}

/** A tool whose input is checked against `schema` before `run` sees it. */
function tool<T>(
  name: BuiltinToolName,
  schema: z.ZodType<T>,
  run: (input: T, toolRun: ToolRun) => Promise<ToolOutcome>,
  safeToRepeat: (input: T) => boolean,
): [BuiltinToolName, BuiltinTool] {
  return [
    name,
    {
      run: async (input, toolRun) => {
        const parsed = parseToolInput(name, schema, input);
        return parsed.ok ? run(parsed.value, toolRun) : fail(parsed.message);
      },
      safeToRepeat: (input) => {
        const parsed = parseToolInput(name, schema, input);
        return parsed.ok && safeToRepeat(parsed.value);
      },
    },
  ];
}

/**
 * Creates the daemon's dispatcher of built-in tools.
 *
 * A tool's own failure (bad input, missing file, path outside the workspace, non-zero exit, timeout,
 * abort) is an outcome with `isError: true`, never a throw. Every tool stops promptly on the call's
 * abort signal; Bash kills the command's whole process group.
 */
export function createBuiltinToolDispatcher(options: BuiltinToolDispatcherOptions): ToolDispatcher {
  const outputCapBytes = options.outputCapBytes ?? 30_000;
  const skipDirs = options.skipDirs ?? DEFAULT_SKIPPED_DIRS;
  const forkTools = new Set(options.forkToolNames ?? DEFAULT_FORK_TOOL_NAMES);
  const bashSettings = {
    policy: options.bashPolicy,
    defaultTimeoutMs: options.bashTimeoutMs ?? 120_000,
    env: options.bashEnv ?? {},
    sandbox:
      options.sandbox === undefined
        ? undefined
        : { sandbox: options.sandbox, visible: [options.workspace, ...(options.sandboxVisible ?? [])] },
  };
  const all = new Map<BuiltinToolName, BuiltinTool>([
    tool("Read", ReadInputSchema, readTool, () => true),
    tool(
      "Glob",
      GlobInputSchema,
      (input, run) => globTool(input, run, skipDirs),
      () => true,
    ),
    tool(
      "Grep",
      GrepInputSchema,
      (input, run) => grepTool(input, run, { skipDirs, timeLimitMs: options.grepTimeLimitMs }),
      () => true,
    ),
    tool(
      "Bash",
      BashInputSchema,
      (input, run) => bashTool(input, run, bashSettings),
      (input) => isReadOnlyCommand(input.command),
    ),
    tool("Write", WriteInputSchema, writeTool, () => false),
    tool("Edit", EditInputSchema, editTool, () => false),
  ]);
  const enabled = new Set<string>(options.tools ?? BUILTIN_TOOL_NAMES);
  const builtin = (name: string) => (enabled.has(name) ? all.get(name as BuiltinToolName) : undefined);
  const { logger } = options;
  const secrets = options.secrets ?? daemonSecrets();
  const hiddenPaths = options.hiddenFiles ?? options.sandbox?.hidden ?? [];
  const scrubbed = (outcome: ToolOutcome): ToolOutcome => {
    const content = scrubSecrets(outcome.content, secrets);
    return content === outcome.content ? outcome : { ...outcome, content };
  };

  return {
    async execute(call: ToolCall, context: ToolExecutionContext): Promise<ToolOutcome> {
      if (forkTools.has(call.name)) {
        logger?.debug(
          { runId: context.runId, tool: call.name, toolUseId: call.id },
          "fork tool refused in a fork",
        );
        return fail(recursionRefusal(call.name));
      }
      const found = builtin(call.name);
      if (found === undefined) {
        if (options.fallback !== undefined) return scrubbed(await options.fallback.execute(call, context));
        return fail(
          `Unknown tool ${call.name}: it is not available on this daemon. Use one of your other tools.`,
        );
      }
      if (context.signal.aborted) return ABORTED;
      const started = performance.now();
      let outcome: ToolOutcome;
      try {
        const hidden = hiddenPaths.length === 0 ? undefined : await hiddenFilesOf(hiddenPaths);
        const cwd = await confine(
          {
            workspace: options.workspace,
            cwd: options.workspace,
            signal: context.signal,
            outputCapBytes,
            pathAliases: [],
            hidden,
          },
          context.cwd,
        );
        outcome = cwd.ok
          ? await found.run(call.input, {
              workspace: options.workspace,
              cwd: cwd.path,
              signal: context.signal,
              outputCapBytes,
              pathAliases: options.pathAliases ?? [],
              hidden,
            })
          : fail(`The run's working directory ${context.cwd} is outside the workspace ${options.workspace}.`);
      } catch (error) {
        // An abort during path resolution, or a bug; the model still gets a result it can read.
        if (!context.signal.aborted)
          logger?.warn({ runId: context.runId, tool: call.name, err: error }, "built-in tool threw");
        outcome = context.signal.aborted ? ABORTED : fail(`${call.name} failed: ${describeError(error)}`);
      }
      logger?.debug(
        {
          runId: context.runId,
          turn: context.turn,
          tool: call.name,
          toolUseId: call.id,
          isError: outcome.isError,
          ms: Math.round(performance.now() - started),
        },
        "built-in tool done",
      );
      return scrubbed(outcome);
    },

    isSafeToRepeat(call: ToolCall): boolean {
      if (forkTools.has(call.name)) return true;
      const found = builtin(call.name);
      if (found !== undefined) return found.safeToRepeat(call.input);
      return options.fallback?.isSafeToRepeat(call) ?? false;
    },
  };
}
