// From a turn loop's outcome to the run's terminal event, and from a terminal event to what the parent
// sees (ForkOutcome). The caller emits the terminal event: the loop's outcome is enough to build it,
// and only the caller knows what else ends a run (a worktree commit, a failure before the loop).
import type { ForkEventBody, ForkResult, TerminalForkEvent } from "@forkd/protocol";
import type { ForkOutcome } from "./fork-subagent.js";
import { parseForkReport } from "./report.js";
import type { TurnLoopOutcome } from "./turn-loop.js";

/** What a terminal event needs beyond the loop's outcome. */
export interface TerminalEventContext {
  /** Whether the child inherited the parent's prefix (and so could share its cache). */
  cacheShared: boolean;
  /** The commit of the child's changes, when it ran in a worktree. */
  commit?: ForkResult["commit"];
}

/** The result of a completed run, with the report parsed out of its final text. */
export function forkResultOf(
  outcome: Extract<TurnLoopOutcome, { status: "completed" }>,
  context: TerminalEventContext,
): ForkResult {
  const result: ForkResult = {
    final_text: outcome.finalText,
    usage: outcome.usage,
    turns: outcome.turns,
    tool_uses: outcome.toolUses,
    duration_ms: outcome.durationMs,
    cache_shared: context.cacheShared,
    stop: outcome.stop,
  };
  if (outcome.stopReason !== undefined) result.stop_reason = outcome.stopReason;
  const report = parseForkReport(outcome.finalText);
  if (report !== undefined) result.report = report;
  if (context.commit !== undefined) result.commit = context.commit;
  return result;
}

/**
 * The terminal event body of a loop's outcome: `completed`, `failed` (a timeout is a failure with code
 * `timeout`) or `aborted`.
 */
export function outcomeToTerminalEvent(
  outcome: TurnLoopOutcome,
  context: TerminalEventContext,
): Extract<ForkEventBody, { type: "completed" | "failed" | "aborted" }> {
  switch (outcome.status) {
    case "completed":
      return { type: "completed", result: forkResultOf(outcome, context) };
    case "failed":
    case "timeout":
      return { type: "failed", error: outcome.error, usage: outcome.usage };
    case "aborted":
      return { type: "aborted", reason: outcome.reason, usage: outcome.usage };
    default: {
      const unreachable: never = outcome;
      throw new TypeError(`unknown outcome ${JSON.stringify(unreachable)}`);
    }
  }
}

/** What the parent sees of a terminal event: `aborted` is `killed`, a `failed` with code `timeout` is `timeout`. */
export function forkOutcomeFromTerminalEvent(event: TerminalForkEvent): ForkOutcome {
  switch (event.type) {
    case "completed":
      return { status: "completed", runId: event.run_id, result: event.result };
    case "aborted":
      return { status: "killed", runId: event.run_id, reason: event.reason, usage: event.usage };
    case "failed":
      return event.error.code === "timeout"
        ? { status: "timeout", runId: event.run_id, error: event.error, usage: event.usage }
        : { status: "failed", runId: event.run_id, error: event.error, usage: event.usage };
    default: {
      const unreachable: never = event;
      throw new TypeError(`unknown terminal event ${JSON.stringify(unreachable)}`);
    }
  }
}
