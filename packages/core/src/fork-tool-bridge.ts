// The parent's side of forking inside an agent loop: when the parent's model calls its fork tool, each
// call is answered at once with the placeholder, a child is launched for it through any ForkSubagent,
// and each child's <task-notification> is later delivered as a user message to append.
import type { AssistantMessage, ForkEvent, MessageParam, ToolResultBlock } from "@forkd/protocol";
import { raceAbort } from "./abort.js";
import { toolCallsOf } from "./assistant-turn.js";
import { createForkPrefix } from "./cache-safe-params.js";
import { type Clock, systemClock } from "./clock.js";
import { FORK_PLACEHOLDER_RESULT } from "./directive.js";
import type { ForkHandle, ForkOutcome, ForkParams, ForkSubagent } from "./fork-subagent.js";
import { type Logger, silentLogger } from "./logger.js";
import { checkForkRecursion } from "./recursion-guard.js";
import { taskNotificationFromOutcome, taskNotificationMessage } from "./task-notification.js";
import type { ToolCall } from "./tool-dispatcher.js";
import { DEFAULT_FORK_TOOL_NAMES } from "./turn-loop.js";

/** What the child of one fork call is asked to do. */
export interface ForkCallDescription {
  directive: string;
  description?: string;
}

/**
 * Reads a fork tool call's input the way Claude Code's Agent tool writes it: `prompt` (or
 * `directive`) is the directive, `description` the short name.
 */
export function describeForkCall(call: ToolCall): ForkCallDescription {
  const input = (call.input ?? {}) as Record<string, unknown>;
  const directive =
    typeof input.prompt === "string"
      ? input.prompt
      : typeof input.directive === "string"
        ? input.directive
        : "";
  const described: ForkCallDescription = { directive };
  if (typeof input.description === "string") described.description = input.description;
  return described;
}

/** Options of {@link ForkToolBridge}. */
export interface ForkToolBridgeOptions {
  /** Runs the children: in process or on a cluster. */
  subagent: ForkSubagent;
  /** Who forks. */
  parent: ForkParams["parent"];
  /** Names of the parent's fork tool. @default DEFAULT_FORK_TOOL_NAMES */
  toolNames?: readonly string[];
  /** The parent's query source; a fork's is refused by the recursion guard. @default "agent" */
  querySource?: string;
  /** Turns a fork call into a directive. @default describeForkCall */
  describeCall?: (call: ToolCall) => ForkCallDescription;
  /** Further params of the child of a call (limits, tool filter, overrides, …). */
  childParams?: (call: ToolCall) => Partial<Omit<ForkParams, "prefix" | "directive" | "forkCall" | "parent">>;
  /** Called with each notification as it arrives (it is also queued for {@link ForkToolBridge.takeNotifications}). */
  onNotification?: (message: MessageParam, outcome: ForkOutcome) => void;
  /** Sees every event of every child. */
  onEvent?: (event: ForkEvent) => void;
  /** @default systemClock */
  clock?: Clock;
  /** @default silentLogger */
  logger?: Logger;
}

/** A child started for one fork call. */
export interface LaunchedFork {
  toolUseId: string;
  description?: string;
  handle: ForkHandle;
}

/** The answer to a reply's fork calls. */
export interface ForkToolAnswers {
  /** One `tool_result` per fork call, in call order: the placeholder, or an error the model can act on. */
  toolResults: ToolResultBlock[];
  /** The children started. */
  launched: LaunchedFork[];
}

/**
 * Bridges a parent agent loop and a {@link ForkSubagent}. Call {@link answer} with the request the
 * parent sent and the reply it got; append the returned tool results (with the results of the other
 * tools of the reply) as the next user message; later append each notification from
 * {@link takeNotifications} or {@link notifications} (as its own user message, or merged into the next
 * user turn).
 */
export class ForkToolBridge implements AsyncDisposable {
  readonly #options: ForkToolBridgeOptions;
  readonly #toolNames: Set<string>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #running = new Map<string, { handle: ForkHandle; done: Promise<void> }>();
  #queue: MessageParam[] = [];
  #wake: (() => void) | undefined;
  #closed = false;

  constructor(options: ForkToolBridgeOptions) {
    this.#options = options;
    this.#toolNames = new Set(options.toolNames ?? DEFAULT_FORK_TOOL_NAMES);
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
  }

  /** Whether `block` is a call of the fork tool. */
  isForkCall(block: { type: string; name?: unknown }): boolean {
    return block.type === "tool_use" && typeof block.name === "string" && this.#toolNames.has(block.name);
  }

  /** Children still running. */
  get running(): number {
    return this.#running.size;
  }

  /**
   * Answers every fork call of `reply` at once and launches a child for each. The prefix (request and
   * reply) is snapshotted once and shared by all children, so their requests are identical up to their
   * directive blocks. Calls of other tools are left to the parent's loop.
   *
   * @throws {@link InvalidPrefixError} when `request` or `reply` cannot be forked from.
   */
  answer(request: unknown, reply: AssistantMessage): ForkToolAnswers {
    const calls = toolCallsOf(reply).filter((call) => this.#toolNames.has(call.name));
    if (calls.length === 0) return { toolResults: [], launched: [] };
    const prefix = createForkPrefix(request, reply);
    const guard = checkForkRecursion({
      querySource: this.#options.querySource ?? "agent",
      messages: prefix.params.messages,
    });
    const toolResults: ToolResultBlock[] = [];
    const launched: LaunchedFork[] = [];
    for (const call of calls) {
      if (!guard.allowed) {
        toolResults.push(errorResult(call, guard.error.toolResultText));
        continue;
      }
      const described = (this.#options.describeCall ?? describeForkCall)(call);
      if (described.directive.trim() === "") {
        toolResults.push(
          errorResult(call, "Fork not started: the call has no prompt. Call the tool again with a prompt."),
        );
        continue;
      }
      let handle: ForkHandle;
      try {
        handle = this.#options.subagent.fork({
          ...this.#options.childParams?.(call),
          prefix,
          directive: described.directive,
          forkCall:
            described.description === undefined
              ? { tool_use_id: call.id }
              : { tool_use_id: call.id, description: described.description },
          parent: this.#options.parent,
          querySource: this.#options.querySource ?? "agent",
        });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        toolResults.push(errorResult(call, `Fork not started: ${message}`));
        continue;
      }
      const fork: LaunchedFork = { toolUseId: call.id, handle };
      if (described.description !== undefined) fork.description = described.description;
      launched.push(fork);
      toolResults.push({
        type: "tool_result",
        tool_use_id: call.id,
        content: `${FORK_PLACEHOLDER_RESULT} (task-id: ${handle.runId}). Its report will arrive as a <task-notification>.`,
      });
      this.#watch(fork);
    }
    return { toolResults, launched };
  }

  /** The notifications that arrived since the last call, oldest first. */
  takeNotifications(): MessageParam[] {
    const taken = this.#queue;
    this.#queue = [];
    return taken;
  }

  /** Notifications as they arrive, until the bridge is disposed or `signal` aborts. */
  async *notifications(options: { signal?: AbortSignal } = {}): AsyncGenerator<MessageParam> {
    for (;;) {
      const taken = this.takeNotifications();
      yield* taken;
      if (taken.length > 0) continue;
      if (this.#closed) return;
      const arrived = new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      await (options.signal === undefined ? arrived : raceAbort(arrived, options.signal));
    }
  }

  /** Resolves when every child launched so far has ended and its notification is queued. */
  async settled(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running.values()].map((run) => run.done));
  }

  /** Aborts every running child. */
  async abortAll(reason = "aborted by parent"): Promise<void> {
    await Promise.all([...this.#running.values()].map((run) => run.handle.abort(reason)));
  }

  /** Aborts the children still running, waits for them, and ends {@link notifications}. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.abortAll("the parent's fork bridge was disposed");
    await this.settled();
    this.#closed = true;
    this.#wake?.();
  }

  #watch(fork: LaunchedFork): void {
    const launchedAt = this.#clock.now();
    let toolUses = 0;
    const counting = (async () => {
      for await (const event of fork.handle.events()) {
        if (event.type === "tool.result") toolUses += 1;
        this.#options.onEvent?.(event);
      }
    })().catch((error: unknown) =>
      this.#logger.warn({ err: error, run_id: fork.handle.runId }, "fork events ended"),
    );
    const done = (async () => {
      const outcome = await fork.handle.result();
      await counting;
      const context = { toolUseId: fork.toolUseId, toolUses, durationMs: this.#clock.now() - launchedAt };
      const notification = taskNotificationFromOutcome(
        outcome,
        fork.description === undefined ? context : { ...context, description: fork.description },
      );
      const message = taskNotificationMessage(notification);
      this.#queue.push(message);
      this.#options.onNotification?.(message, outcome);
      const wake = this.#wake;
      this.#wake = undefined;
      wake?.();
    })()
      .catch((error: unknown) =>
        this.#logger.error({ err: error, run_id: fork.handle.runId }, "fork notification lost"),
      )
      .finally(() => this.#running.delete(fork.handle.runId));
    this.#running.set(fork.handle.runId, { handle: fork.handle, done });
  }
}

function errorResult(call: ToolCall, text: string): ToolResultBlock {
  return { type: "tool_result", tool_use_id: call.id, content: text, is_error: true };
}
