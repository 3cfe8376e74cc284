// What the four fork tools do, whatever carries them (forkd mcp over stdio, the Agent SDK in
// process). A `fork` call is matched, through the proxy, to the turn whose reply made it; the first
// call of a reply launches every fork call of that reply as one warm-first fan-out from that turn's
// exact prefix, and each call then answers with its own child's run id.
import type { NatsForkHandle, NatsForkSubagent } from "@forkd/client";
import {
  type ForkOutcome,
  type ForkParams,
  renderTaskNotification,
  taskNotificationFromOutcome,
} from "@forkd/core";
import { emptyUsageTotals, ForkdError, toWireError } from "@forkd/protocol";
import { type FoundToolCall, forkPrefixOfTurn, type ToolCallQuery } from "@forkd/proxy";

/** The text a tool returns to the model; `isError` marks a call that did nothing. */
export interface ToolText {
  text: string;
  isError?: boolean;
}

/** Finds the recorded turn whose reply holds a call (a {@link ProxyClient}, or a proxy's own store). */
export type TurnLookup = (query: ToolCallQuery & { waitMs: number }) => Promise<FoundToolCall | undefined>;

/** Options of {@link ForkTools}. */
export interface ForkToolsOptions {
  /** Runs the children. */
  subagent: Pick<NatsForkSubagent, "fanOut">;
  /** Finds the turn a `fork` call came from. */
  lookup: TurnLookup;
  /** This server's id, in its fork tool's description (see `mcpInstanceMarker`). */
  instanceId: string;
  /** How long a lookup waits for the proxy to have recorded the turn. @default 5000 @unit ms */
  lookupWaitMs?: number;
  /** Given to every child (`max_turns`, `timeout_ms`, budgets). */
  limits?: ForkParams["limits"];
  /** Longest `fork_result` waits when the model names no timeout. @default 600 @unit seconds */
  defaultResultTimeoutS?: number;
}

/** The arguments of `fork`. */
export interface ForkArgs {
  directive: string;
  label?: string | undefined;
  wait?: boolean | undefined;
  timeout_s?: number | undefined;
}

/** What the MCP request said about the call besides its arguments. */
export interface ToolCallContext {
  /** The `tool_use` id of the call (Claude Code's `_meta["claudecode/toolUseId"]`), when given. */
  toolUseId?: string | undefined;
}

/** The arguments that name runs: `run_id`, else `label`, else every run of this server. */
export interface RunSelector {
  run_id?: string | undefined;
  label?: string | undefined;
}

interface TrackedRun {
  handle: NatsForkHandle;
  label: string | undefined;
  toolUseId: string;
  directive: string;
  startedAt: number;
  outcome: Promise<ForkOutcome>;
  settled: ForkOutcome | undefined;
  /** Its result was returned by fork_result (or fork with wait). */
  reported: boolean;
}

/** Thrown for arguments the model got wrong; its message goes back to the model. */
class ToolInputError extends ForkdError<"invalid_tool_input"> {
  override readonly name = "ToolInputError";
  readonly code = "invalid_tool_input";
  readonly retryable = false;
}

/** The fork tools' behaviour, transport-free. */
export class ForkTools {
  readonly #options: ForkToolsOptions;
  /** Children launched, by the `tool_use` id of the fork call they answer. */
  readonly #byToolUse = new Map<string, TrackedRun>();
  readonly #byRunId = new Map<string, TrackedRun>();
  /** `tool_use` ids a `fork` call has already been answered for. */
  readonly #answered = new Set<string>();

  constructor(options: ForkToolsOptions) {
    this.#options = options;
  }

  /** `fork`: starts the child this call asks for (and its siblings of the same reply). */
  async fork(args: ForkArgs, context: ToolCallContext = {}): Promise<ToolText> {
    return this.#guard(async () => {
      if (typeof args.directive !== "string" || args.directive.trim() === "") {
        throw new ToolInputError("fork needs a non-empty directive");
      }
      const input: Record<string, unknown> = { directive: args.directive };
      if (args.label !== undefined) input.label = args.label;
      const query = {
        mcpInstance: this.#options.instanceId,
        toolName: "fork",
        input,
        exclude: [...this.#answered],
        waitMs: this.#options.lookupWaitMs ?? 5000,
      };
      // By the call's own id when the agent gave it: the input alone cannot tell apart two pending
      // calls with the same directive (two sub-agents of one session). An id the proxy never saw
      // (a client that rewrites ids) falls back to the input.
      const match =
        (context.toolUseId === undefined
          ? undefined
          : await this.#options.lookup({ ...query, toolUseId: context.toolUseId })) ??
        (await this.#options.lookup(context.toolUseId === undefined ? query : { ...query, waitMs: 0 }));
      if (match === undefined) {
        throw new ToolInputError(
          "forkd did not see the reply that made this call, so it cannot fork this conversation. " +
            `The agent must reach the model through \`forkd proxy\` (${BASE_URL_SETTINGS}), and the proxy must be the one this server was given. ` +
            "If it does, the proxy's stderr says why it recorded no turn (a reply it could not read back, an upstream it could not reach).",
        );
      }
      this.#answered.add(match.toolUse.id);
      if (!this.#byToolUse.has(match.toolUse.id)) this.#launchReply(match);
      const run = this.#byToolUse.get(match.toolUse.id);
      if (run === undefined) throw new Error(`no child was launched for ${match.toolUse.id}`);
      if (args.wait === true) return { text: await this.#resultText(run, args.timeout_s) };
      return {
        text: [
          "Fork started — processing in background.",
          `run_id: ${run.handle.runId}`,
          ...(run.label === undefined ? [] : [`label: ${run.label}`]),
          "Call fork_result with this run_id (or label) to get its <task-notification> when you need it.",
        ].join("\n"),
      };
    });
  }

  /** `fork_status`: one line per run (or the named one). */
  async status(selector: RunSelector): Promise<ToolText> {
    return this.#guard(async () => {
      const runs = this.#select(selector, false);
      if (runs.length === 0) return { text: "No forks started by this session." };
      const now = Date.now();
      return {
        text: runs
          .map((run) => {
            const status = run.settled?.status ?? "running";
            const seconds = Math.round((now - run.startedAt) / 1000);
            return `${run.handle.runId}  ${run.label ?? "-"}  ${status}  ${seconds}s  ${firstLine(run.directive)}`;
          })
          .join("\n"),
      };
    });
  }

  /** `fork_result`: waits (up to the timeout) and returns each named run's `<task-notification>`. */
  async result(selector: RunSelector & { timeout_s?: number | undefined }): Promise<ToolText> {
    return this.#guard(async () => {
      const runs = this.#select(selector, true);
      if (runs.length === 0)
        return { text: "No forks left to report: every fork of this session was reported." };
      const texts = await Promise.all(runs.map((run) => this.#resultText(run, selector.timeout_s)));
      return { text: texts.join("\n\n") };
    });
  }

  /** `fork_abort`: asks the named runs to stop. */
  async abort(selector: RunSelector & { reason?: string | undefined }): Promise<ToolText> {
    return this.#guard(async () => {
      if (selector.run_id === undefined && selector.label === undefined) {
        throw new ToolInputError("fork_abort needs a run_id or a label");
      }
      const runs = this.#select(selector, false).filter((run) => run.settled === undefined);
      await Promise.all(runs.map((run) => run.handle.abort(selector.reason ?? "aborted by the parent")));
      return {
        text:
          runs.length === 0
            ? "Nothing to abort: no such run is still running."
            : `Abort sent to ${runs.map((r) => r.handle.runId).join(", ")}.`,
      };
    });
  }

  /** Stops following the runs (they go on on the cluster). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#byRunId.values()].map((run) => run.handle[Symbol.asyncDispose]()));
  }

  /** Launches every fork call of the matched reply that has no child yet, as one fan-out. */
  #launchReply(match: FoundToolCall): void {
    const { turn } = match;
    const calls = turn.toolCalls.filter(
      (call) =>
        call.name === match.toolUse.name &&
        !this.#byToolUse.has(call.id) &&
        typeof (call.input as { directive?: unknown } | null)?.directive === "string",
    );
    const children = calls.map((call) => {
      const input = call.input as { directive: string; label?: unknown };
      const label = typeof input.label === "string" ? input.label : undefined;
      return {
        directive: input.directive,
        label,
        forkCall:
          label === undefined ? { tool_use_id: call.id } : { tool_use_id: call.id, description: label },
      };
    });
    const base: Parameters<ForkToolsOptions["subagent"]["fanOut"]>[0] = {
      prefix: forkPrefixOfTurn(turn),
      parent: { agent_id: `forkd-mcp:${this.#options.instanceId}`, session_id: turn.session.slice(0, 256) },
    };
    // An OpenAI or Gemini parent's children speak its API: their requests start with its request's bytes.
    if (turn.api !== "anthropic") base.provider = { api: turn.api };
    if (this.#options.limits !== undefined) base.limits = this.#options.limits;
    const handles = this.#options.subagent.fanOut(base, children);
    handles.forEach((handle, index) => {
      const call = calls[index]!;
      const child = children[index]!;
      const run: TrackedRun = {
        handle,
        label: child.label,
        toolUseId: call.id,
        directive: child.directive,
        startedAt: Date.now(),
        outcome: handle.result().catch((error: unknown) => unfollowedOutcome(handle.runId, error)),
        settled: undefined,
        reported: false,
      };
      void run.outcome.then((outcome) => {
        run.settled = outcome;
      });
      this.#byToolUse.set(call.id, run);
      this.#byRunId.set(handle.runId, run);
    });
  }

  #select(selector: RunSelector, unreportedByDefault: boolean): TrackedRun[] {
    const runs = [...this.#byRunId.values()];
    if (selector.run_id !== undefined) {
      const run = this.#byRunId.get(selector.run_id);
      if (run === undefined)
        throw new ToolInputError(`no fork with run_id ${selector.run_id} was started by this session`);
      return [run];
    }
    if (selector.label !== undefined) {
      const labelled = runs.filter((run) => run.label === selector.label);
      if (labelled.length === 0)
        throw new ToolInputError(`no fork labelled "${selector.label}" was started by this session`);
      return labelled;
    }
    return unreportedByDefault ? runs.filter((run) => !run.reported) : runs;
  }

  async #resultText(run: TrackedRun, timeoutS: number | undefined): Promise<string> {
    const seconds = Math.min(Math.max(timeoutS ?? this.#options.defaultResultTimeoutS ?? 600, 0), 3600);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), seconds * 1000);
    });
    const outcome = await Promise.race([run.outcome, timedOut]).finally(() => clearTimeout(timer));
    if (outcome === undefined) {
      return `${run.handle.runId}${run.label === undefined ? "" : ` (${run.label})`} is still running after ${seconds}s; call fork_result again later.`;
    }
    run.reported = true;
    const context =
      run.label === undefined
        ? { toolUseId: run.toolUseId }
        : { toolUseId: run.toolUseId, description: run.label };
    return renderTaskNotification(taskNotificationFromOutcome(outcome, context));
  }

  async #guard(call: () => Promise<ToolText>): Promise<ToolText> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof ToolInputError) return { text: error.message, isError: true };
      return { text: `forkd: ${(error as Error).message}`, isError: true };
    }
  }
}

/** What points each kind of agent at the proxy, for the error that says it did not. */
const BASE_URL_SETTINGS =
  "ANTHROPIC_BASE_URL; an OpenAI agent's OpenAI base URL, <proxy>/openai: OPENAI_BASE_URL for qwen-code, base_url in config.toml for the Codex CLI; the Gemini CLI's GOOGLE_GEMINI_BASE_URL, <proxy>/gemini";

function firstLine(text: string): string {
  const line = text.split("\n", 1)[0] ?? "";
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

/**
 * A run whose result this session could not follow (its spec was never stored, or the connection
 * closed): reported as failed with the reason. A rejection kept in a run's outcome would reach no one
 * until `fork_result` and end the server's process as unhandled.
 */
function unfollowedOutcome(runId: string, error: unknown): ForkOutcome {
  return { status: "failed", runId, error: toWireError(error), usage: emptyUsageTotals() };
}
