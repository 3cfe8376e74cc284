// Tool filters decide, call by call, whether a fork may run a tool. A fork keeps its parent's tool
// definitions byte for byte (changing them would break the provider's prompt cache), so a filter never
// removes tools from the request: it refuses calls, and the refusal goes back to the model as an error
// tool_result it can recover from within the same turn. See docs/tool-filters.md.
import type { ToolFilterSpec } from "@forkd/protocol";
import type { ToolCall } from "../tool-dispatcher.js";
import { resolveConfinedPath } from "./path-confinement.js";
import { classifyShellCommand } from "./shell/index.js";

/** Why a tool call was refused. String literals so callers can `switch` exhaustively. */
export type ToolDenialCode =
  /** The filter does not allow this tool at all. */
  | "tool_not_allowed"
  /** A shell command that the read-only classifier did not accept. */
  | "shell_not_read_only"
  /** A write or edit whose path resolves outside the memory directory (or into a `.git` directory). */
  | "path_outside_memory_dir"
  /** Arguments wrapped in another object or encoded as JSON text, which the filter will not unwrap. */
  | "argument_envelope"
  /** Arguments missing the field the filter checks, or of the wrong type. */
  | "invalid_arguments";

/** A refused call. It is data, not an error: the turn loop turns it into an `is_error` tool_result. */
export interface ToolFilterDenial {
  readonly allowed: false;
  readonly code: ToolDenialCode;
  /** What was refused and why, naming the tool, the command or the path. */
  readonly reason: string;
}

/** A filter's verdict on one call. */
export type ToolFilterDecision = { readonly allowed: true } | ToolFilterDenial;

/** What a filter may consult besides the call. */
export interface ToolFilterContext {
  /** Working directory of the run: relative paths in tool arguments are resolved against it. Absolute. */
  readonly cwd: string;
  /** Aborts a check that touches the file system; the promise then rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
}

/** Decides whether a fork may run a tool call. */
export interface ToolFilter {
  /** `"all"`, `"allow"` or `"memory"` for the built-in filters (the `kind` of their wire spec). */
  readonly kind: string;
  /**
   * Checks one call. Resolves with a denial rather than rejecting for anything about the call itself;
   * rejects only when `context.signal` aborts.
   */
  check(call: ToolCall, context: ToolFilterContext): Promise<ToolFilterDecision>;
}

const ALLOWED: ToolFilterDecision = Object.freeze({ allowed: true });

function deny(code: ToolDenialCode, reason: string): ToolFilterDenial {
  return { allowed: false, code, reason };
}

/** A filter that allows every tool call. */
export function allowAllTools(): ToolFilter {
  return { kind: "all", check: async () => ALLOWED };
}

/**
 * A filter that allows only the tools named in `names` (exact, case-sensitive names); every other call
 * is refused with `tool_not_allowed`. The arguments are not inspected.
 */
export function allowListTools(names: readonly string[]): ToolFilter {
  const allowed = new Set(names);
  const listed = allowed.size === 0 ? "none" : [...allowed].join(", ");
  return {
    kind: "allow",
    check: async (call) =>
      allowed.has(call.name)
        ? ALLOWED
        : deny(
            "tool_not_allowed",
            `the tool "${call.name}" is not among this fork's allowed tools (${listed})`,
          ),
  };
}

/** Tools the memory filter always allows: they only read. */
export const MEMORY_READ_TOOLS: readonly string[] = ["Read", "Glob", "Grep", "LS", "NotebookRead"];

/** Tools the memory filter allows inside the memory directory, with the argument naming their target. */
export const MEMORY_WRITE_TOOLS: Readonly<Record<string, string>> = {
  Write: "file_path",
  Edit: "file_path",
  MultiEdit: "file_path",
  NotebookEdit: "notebook_path",
};

/** The shell tool, allowed for commands the read-only classifier accepts. Its argument is `command`. */
export const MEMORY_SHELL_TOOL = "Bash";

/**
 * Keys that wrap the real arguments in the envelopes models and lenient executors produce. None of them
 * is an argument of the tools the memory filter inspects, so their presence means a wrapper.
 */
export const ARGUMENT_ENVELOPE_KEYS: readonly string[] = [
  "input",
  "args",
  "arguments",
  "params",
  "parameters",
  "tool_input",
  "toolInput",
  "kwargs",
  "payload",
  "data",
];

/** Options of {@link memoryToolFilter}. */
export interface MemoryToolFilterOptions {
  /** The one directory writes and edits may touch; relative to the run's cwd when not absolute. */
  readonly memoryDir: string;
}

/**
 * The read-only "memory" filter: reads, globs and greps are always allowed; a Bash command only when
 * {@link classifyShellCommand} finds it read-only; Write, Edit, MultiEdit and NotebookEdit only when
 * their path resolves (symlinks, `..`, relative paths, missing parents) inside `memoryDir`, and not
 * into a `.git` directory there. Arguments wrapped in an envelope are refused. Any other tool is refused.
 */
export function memoryToolFilter(options: MemoryToolFilterOptions): ToolFilter {
  const { memoryDir } = options;
  return {
    kind: "memory",
    async check(call, context) {
      if (MEMORY_READ_TOOLS.includes(call.name)) return ALLOWED;
      if (call.name === MEMORY_SHELL_TOOL) return checkShell(call.input);
      const field = Object.hasOwn(MEMORY_WRITE_TOOLS, call.name) ? MEMORY_WRITE_TOOLS[call.name] : undefined;
      if (field !== undefined) return checkWrite(call.name, call.input, field, memoryDir, context);
      return deny(
        "tool_not_allowed",
        `the tool "${call.name}" is not available to a read-only fork (allowed: ${MEMORY_READ_TOOLS.join(", ")}, ` +
          `read-only ${MEMORY_SHELL_TOOL} commands, and ${Object.keys(MEMORY_WRITE_TOOLS).join(", ")} inside ${memoryDir})`,
      );
    },
  };
}

function checkShell(input: unknown): ToolFilterDecision {
  const args = inspectArguments(MEMORY_SHELL_TOOL, input, "command");
  if (!args.ok) return args.denial;
  if (args.object.run_in_background === true) {
    return deny(
      "shell_not_read_only",
      "run_in_background is not allowed: a background command outlives the check",
    );
  }
  const verdict = classifyShellCommand(args.value);
  return verdict.readOnly
    ? ALLOWED
    : deny("shell_not_read_only", `the command is not read-only: ${verdict.reason}`);
}

async function checkWrite(
  tool: string,
  input: unknown,
  field: string,
  memoryDir: string,
  context: ToolFilterContext,
): Promise<ToolFilterDecision> {
  const args = inspectArguments(tool, input, field);
  if (!args.ok) return args.denial;
  const resolved = await resolveConfinedPath(memoryDir, args.value, context.cwd, { signal: context.signal });
  if (!resolved.ok) {
    return resolved.code === "invalid_path"
      ? deny("invalid_arguments", `${tool} ${field}: ${resolved.reason}`)
      : deny(
          "path_outside_memory_dir",
          `${tool} may only write inside the memory directory ${memoryDir}: ${resolved.reason}`,
        );
  }
  // git runs programs named in a repository's config (core.fsmonitor, diff drivers, hooks); a fork that
  // could write .git/config could make a later read-only `git status` run anything.
  const parts = [...resolved.path.slice(resolved.root.length).split("/"), ...args.value.split("/")];
  if (parts.some((part) => part.toLowerCase() === ".git")) {
    return deny(
      "path_outside_memory_dir",
      `${tool} may not write inside a .git directory (${resolved.path}): git runs programs named in repository configuration`,
    );
  }
  return ALLOWED;
}

type Inspected =
  | { readonly ok: true; readonly object: Readonly<Record<string, unknown>>; readonly value: string }
  | { readonly ok: false; readonly denial: ToolFilterDenial };

/**
 * Finds the argument the filter checks, refusing envelopes (see docs/tool-filters.md): the filter
 * judges exactly the field the tool will use, so anything that an executor might unwrap into different
 * arguments is refused rather than guessed at.
 */
function inspectArguments(tool: string, input: unknown, field: string): Inspected {
  const refuse = (code: ToolDenialCode, reason: string): Inspected => ({
    ok: false,
    denial: deny(code, `${tool}: ${reason}`),
  });
  if (typeof input === "string") {
    return refuse("argument_envelope", "the arguments are a string (JSON text?) instead of an object");
  }
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    return refuse("invalid_arguments", `the arguments must be an object, got ${describe(input)}`);
  }
  const object = input as Readonly<Record<string, unknown>>;
  const keys = Object.keys(object);
  const wrapper = keys.find((key) => ARGUMENT_ENVELOPE_KEYS.includes(key));
  if (wrapper !== undefined) return refuse("argument_envelope", `the arguments are wrapped in "${wrapper}"`);
  if (!Object.hasOwn(object, field) && keys.length === 1) {
    const only = object[keys[0]!];
    if (isPlainObject(only) || (typeof only === "string" && isJsonText(only))) {
      return refuse("argument_envelope", `the arguments are wrapped in "${keys[0]}"`);
    }
  }
  const value = Object.hasOwn(object, field) ? object[field] : undefined;
  if (typeof value !== "string" || value === "") {
    return refuse("invalid_arguments", `"${field}" must be a non-empty string, got ${describe(value)}`);
  }
  if (isJsonText(value))
    return refuse("argument_envelope", `"${field}" holds JSON text instead of a plain value`);
  return { ok: true, object, value };
}

function isPlainObject(value: unknown): boolean {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** JSON text of an object, an array or a string: a double-encoded argument. */
function isJsonText(value: string): boolean {
  const text = value.trim();
  if (!/^[{["]/.test(text)) return false;
  try {
    // Text that starts with {, [ or " and parses is an object, an array or a string.
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (value === undefined) return "nothing";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * Builds the filter a wire spec names. A spec of an unknown kind (a newer peer) yields a filter that
 * refuses every call: failing closed is safe, and the refusals say why.
 */
export function toolFilterFromSpec(spec: ToolFilterSpec): ToolFilter {
  switch (spec.kind) {
    case "all":
      return allowAllTools();
    case "allow":
      return allowListTools(spec.tools);
    case "memory":
      return memoryToolFilter({ memoryDir: spec.memory_dir });
    default: {
      const kind = String((spec as { kind?: unknown }).kind);
      return {
        kind,
        check: async () =>
          deny("tool_not_allowed", `the tool filter kind "${kind}" is unknown; every call is refused`),
      };
    }
  }
}

const HINTS: Readonly<Record<ToolDenialCode, string>> = {
  tool_not_allowed:
    "Do not call this tool again in this run. Continue with the tools that are allowed, or say in your final answer what you could not do and why.",
  shell_not_read_only:
    "Only read-only shell commands run here: simple commands such as ls, cat, head, grep, rg, find (without -exec or -delete), " +
    "sed -n, sort, wc, git status/log/diff/show, joined by pipes, ; && or ||, with no redirection except to /dev/null and no $(…). " +
    "Use the Read, Glob and Grep tools to read, split the command into simpler read-only ones, " +
    "or use Write/Edit inside the memory directory to record something.",
  path_outside_memory_dir:
    "Writes and edits are confined to the memory directory (symlinks and .. are resolved first). " +
    "Choose a path inside it, or put what you wanted to write in your final answer instead.",
  argument_envelope:
    "Call the tool again with its arguments as a plain JSON object with the fields of its schema at the top level " +
    '(for example {"file_path": "…", "content": "…"} or {"command": "…"}), not wrapped in another key and not encoded as a JSON string.',
  invalid_arguments: "Call the tool again with the arguments its input schema requires.",
};

/**
 * The text of the `is_error` tool_result for a refused call: what was refused, why, and what the model
 * can do instead, so it can recover within the turn.
 */
export function denialToolResultText(denial: ToolFilterDenial): string {
  return `Tool call refused (${denial.code}): ${denial.reason}\n${HINTS[denial.code]}`;
}
