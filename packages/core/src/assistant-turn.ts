// What follows an assistant message in a fork's conversation: its tool calls, whether the loop runs
// them, continues, or stops, and the user message that answers them. Shared by the turn loop and by
// resume, so a rebuilt conversation is the one the loop would have built.
import type { AssistantMessage, ForkResult, MessageParam } from "@forkd/protocol";
import { renderSystemReminder } from "./system-reminder.js";
import type { ToolCall } from "./tool-dispatcher.js";

/** Why a run ended, as a result reports it. */
export type ForkStopReason = ForkResult["stop"];

/** The `tool_result` text of a call that was running when its daemon died, and is not run again. */
export const INTERRUPTED_TOOL_RESULT = "interrupted by a daemon failure; not re-run";

/** What the loop does after an assistant message. */
export type AssistantTurnAction =
  /** Run the calls and answer them in one user message. */
  | { kind: "tools"; calls: ToolCall[] }
  /** Send the conversation again as it is (`pause_turn`: a server tool paused a long turn). */
  | { kind: "continue" }
  /** The run is done. */
  | { kind: "stop"; stop: ForkStopReason };

/** The client tool calls of `message`, in order. */
export function toolCallsOf(message: Pick<AssistantMessage, "content">): ToolCall[] {
  return message.content
    .filter((block) => block.type === "tool_use")
    .map((block) => ({ id: String(block.id), name: String(block.name), input: block.input }));
}

/**
 * Decides what follows `message`. Tool calls are run only when the model stopped to have them run
 * (`tool_use`): the calls of a response cut off by `max_tokens` may be incomplete and are not run.
 */
export function nextAction(
  message: Pick<AssistantMessage, "content">,
  stopReason: string | null,
): AssistantTurnAction {
  switch (stopReason) {
    case "tool_use": {
      const calls = toolCallsOf(message);
      return calls.length > 0 ? { kind: "tools", calls } : { kind: "stop", stop: "end_turn" };
    }
    case "pause_turn":
      return { kind: "continue" };
    case "max_tokens":
    case "model_context_window_exceeded":
      return { kind: "stop", stop: "max_tokens" };
    case "stop_sequence":
      return { kind: "stop", stop: "stop_sequence" };
    case "refusal":
      return { kind: "stop", stop: "refusal" };
    default:
      return { kind: "stop", stop: "end_turn" };
  }
}

/** One answered call. */
export interface ToolAnswer {
  toolUseId: string;
  content: string;
  isError: boolean;
}

/**
 * The user message answering a turn's calls, results in call order, then the system reminder (after
 * the results, so it never sits inside the cached part of the turn).
 */
export function toolResultsMessage(answers: readonly ToolAnswer[], systemReminder?: string): MessageParam {
  const content: Record<string, unknown>[] = answers.map((answer) =>
    answer.isError
      ? { type: "tool_result", tool_use_id: answer.toolUseId, content: answer.content, is_error: true }
      : { type: "tool_result", tool_use_id: answer.toolUseId, content: answer.content },
  );
  if (systemReminder !== undefined) content.push(renderSystemReminder(systemReminder));
  return { role: "user", content: content as MessageParam["content"] };
}

/** The text of an assistant message's text blocks, joined by newlines. */
export function textOf(message: Pick<MessageParam, "content">): string {
  if (typeof message.content === "string") return message.content;
  return message.content
    .filter((block) => block.type === "text" && typeof block.text === "string")
    .map((block) => block.text as string)
    .join("\n");
}
