// How the turn loop runs a tool call: the daemon and the in-process fork each supply a dispatcher.

/** A tool call the model made. */
export interface ToolCall {
  id: string;
  name: string;
  input: unknown;
}

/** What a tool returned, as it will appear in the `tool_result` block. */
export interface ToolOutcome {
  content: string;
  isError: boolean;
}

/** Context of one tool execution. */
export interface ToolExecutionContext {
  runId: string;
  turn: number;
  /** Working directory of the run. */
  cwd: string;
  /** Aborts the tool: a dispatcher kills child processes and resolves promptly. */
  signal: AbortSignal;
}

/** Executes tool calls. */
export interface ToolDispatcher {
  /** Runs `call`. Must not throw for a tool's own failure: return `{ isError: true }` instead. */
  execute(call: ToolCall, context: ToolExecutionContext): Promise<ToolOutcome>;
  /**
   * True when re-running the tool after a crash cannot change anything (reads, greps).
   * On resume, an interrupted call of such a tool is run again; any other is reported as interrupted.
   */
  isSafeToRepeat(call: ToolCall): boolean;
}

/** Decision on a tool call that needs approval. */
export type PermissionDecision = { decision: "allow" } | { decision: "deny" | "timeout"; reason: string };

/** Asks whoever may approve a tool call (the parent, under an `ask` policy). */
export interface PermissionAsker {
  /** Whether `call` needs asking at all under the run's policy. */
  needsApproval(call: ToolCall): boolean;
  ask(call: ToolCall, options: { signal: AbortSignal; timeoutMs: number }): Promise<PermissionDecision>;
}
