// Rebuilds a run from its event log so another daemon can continue it: the conversation (from
// llm.message and tool.result events), the turn count, the usage, and the tool ledger: which calls of
// the unfinished turn have a recorded result, which were interrupted, which never started.
import type {
  AssistantMessage,
  ForkEvent,
  MessageParam,
  ProviderUsage,
  TerminalForkEvent,
} from "@forkd/protocol";
import { isTerminalEvent } from "@forkd/protocol";
import { nextAction, type ToolAnswer, toolResultsMessage } from "./assistant-turn.js";
import { EventLogError } from "./errors.js";
import type { LlmRequest } from "./llm-client.js";
import type { ToolCall } from "./tool-dispatcher.js";
import { withSteering } from "./turn-boundary.js";

/** One call of the unfinished turn, as the log left it. */
export type LedgerEntry =
  /** A result was recorded: it is reused, the call is never run again. */
  | { call: ToolCall; state: "recorded"; answer: ToolAnswer }
  /** A `tool.call` without a result: it was running when the daemon died. */
  | { call: ToolCall; state: "interrupted" }
  /** Never started. */
  | { call: ToolCall; state: "not_started" };

/** One response's usage, with the model that made it. */
export interface TurnUsage {
  turn: number;
  model: string;
  usage: ProviderUsage;
}

/** The last assistant message, when the log stops before the loop was done with it. */
export interface PendingTurn {
  turn: number;
  message: AssistantMessage;
  stopReason: string | null;
  /** Its calls, when it called tools and stopped to have them run. */
  ledger: LedgerEntry[];
}

/** Everything the turn loop needs to continue a run. */
export interface ResumeState {
  /** The conversation: the initial request's messages, then every message the run appended. */
  messages: MessageParam[];
  /** Turns whose response was recorded. */
  turns: number;
  /** Tool calls answered so far. */
  toolUses: number;
  /** Usage per recorded response, to be summed and priced again. */
  turnUsages: TurnUsage[];
  /** The last response, when the loop had not finished with it; `null` when the next turn is simply sent. */
  pending: PendingTurn | null;
  /** The last assistant message the run appended, if any (its text is the run's final text). */
  lastAssistant: AssistantMessage | null;
  /** Highest seq in the log; the next event is `lastSeq + 1`. */
  lastSeq: number;
  /** Highest attempt in the log. */
  lastAttempt: number;
  /** Time of the first event (the run's start). @unit ms since epoch */
  startedAt: number | null;
  /** The log's terminal event, when the run already ended (then there is nothing to resume). */
  terminal: TerminalForkEvent | null;
}

/** Options of {@link rebuildRunState}. */
export interface RebuildOptions {
  /** The run's system reminder: part of every tool-results message the loop appended. */
  systemReminder?: string | undefined;
}

function orderedLog(events: readonly ForkEvent[]): ForkEvent[] {
  const bySeq = new Map<number, ForkEvent>();
  for (const event of events) if (!bySeq.has(event.seq)) bySeq.set(event.seq, event);
  const ordered = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  ordered.forEach((event, index) => {
    if (event.seq !== index + 1) {
      throw new EventLogError(`the event log has a gap: expected seq ${index + 1}, found ${event.seq}`, {
        seq: event.seq,
      });
    }
    if (event.run_id !== ordered[0]!.run_id) {
      throw new EventLogError(
        `event ${event.seq} belongs to run ${event.run_id}, not ${ordered[0]!.run_id}`,
        {
          seq: event.seq,
        },
      );
    }
  });
  return ordered;
}

/**
 * Rebuilds a run's state from `initialRequest` (the child's first request, built again from its spec)
 * and its event log (any order, duplicates allowed, no gaps).
 *
 * - The conversation is the request's messages plus each `llm.message`, and, once the next turn
 *   started, the user message of the previous turn's `tool.result`s (rebuilt exactly as the loop
 *   wrote it).
 * - The ledger of the last turn: a call with a recorded `tool.result` is never run again; a
 *   `tool.call` without one was interrupted; a call without either never started. The loop decides
 *   what to do with them (see `runTurnLoop`).
 * - An `llm.request` without its `llm.message` leaves nothing pending: the request is sent again.
 *
 * @throws {@link EventLogError} for a gap, events of two runs, or a turn that started although the
 * previous turn's calls have no results.
 */
export function rebuildRunState(
  initialRequest: LlmRequest,
  events: readonly ForkEvent[],
  options: RebuildOptions = {},
): ResumeState {
  const log = orderedLog(events);
  const state: ResumeState = {
    messages: [...initialRequest.messages],
    turns: 0,
    toolUses: 0,
    turnUsages: [],
    pending: null,
    lastAssistant: null,
    lastSeq: log.at(-1)?.seq ?? 0,
    lastAttempt: log.reduce((max, event) => Math.max(max, event.attempt), 0),
    startedAt: log[0]?.ts ?? null,
    terminal: null,
  };
  const modelOfTurn = new Map<number, string>();
  const started = new Set<string>();
  const answers = new Map<string, ToolAnswer>();

  const closePending = (seq: number) => {
    const pending = state.pending;
    if (pending === null) return;
    state.pending = null;
    if (pending.ledger.length === 0) return;
    const missing = pending.ledger.filter((entry) => !answers.has(entry.call.id));
    if (missing.length > 0) {
      throw new EventLogError(
        `turn ${pending.turn + 1} started, but calls ${missing.map((m) => m.call.id).join(", ")} of turn ${pending.turn} have no result`,
        { seq },
      );
    }
    const turnAnswers = pending.ledger.map((entry) => answers.get(entry.call.id)!);
    state.messages.push(toolResultsMessage(turnAnswers, options.systemReminder));
  };

  for (const event of log) {
    if (isTerminalEvent(event)) {
      state.terminal = event;
      continue;
    }
    switch (event.type) {
      case "llm.request":
        closePending(event.seq);
        modelOfTurn.set(event.turn, event.model);
        break;
      case "llm.message": {
        closePending(event.seq);
        state.messages.push(event.message);
        state.lastAssistant = event.message;
        state.turns = Math.max(state.turns, event.turn);
        state.turnUsages.push({
          turn: event.turn,
          model: modelOfTurn.get(event.turn) ?? initialRequest.model,
          usage: event.usage,
        });
        const action = nextAction(event.message, event.stop_reason);
        state.pending = {
          turn: event.turn,
          message: event.message,
          stopReason: event.stop_reason,
          ledger: action.kind === "tools" ? action.calls.map((call) => ({ call, state: "not_started" })) : [],
        };
        break;
      }
      case "steered":
        // Emitted after the previous turn's results and before the next request, as the loop adds it.
        closePending(event.seq);
        withSteering(state.messages, event.text);
        break;
      case "tool.call":
        started.add(event.tool_use_id);
        break;
      case "tool.result":
        if (!answers.has(event.tool_use_id)) state.toolUses += 1;
        answers.set(event.tool_use_id, {
          toolUseId: event.tool_use_id,
          content: event.content,
          isError: event.is_error,
        });
        break;
      default:
        break;
    }
  }
  if (state.pending !== null) {
    state.pending.ledger = state.pending.ledger.map(({ call }): LedgerEntry => {
      const answer = answers.get(call.id);
      if (answer !== undefined) return { call, state: "recorded", answer };
      return started.has(call.id) ? { call, state: "interrupted" } : { call, state: "not_started" };
    });
  }
  return state;
}
