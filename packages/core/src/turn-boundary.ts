// What a run is told between its turns: a graceful stop, and steering messages from its parent. The
// loop asks at every turn boundary (before a model call, before each tool call for a stop); the
// resume rebuild applies a logged `steered` event exactly as the loop did, so both build the same
// conversation.
import type { MessageParam, ProviderUsage } from "@forkd/protocol";
import type { LlmRequest } from "./llm-client.js";

/** A steering message: a user message added to a running child at its next turn boundary. */
export interface SteeringMessage {
  /** The steer request's id (a repeated id is added once). */
  id: string;
  text: string;
  /** Who sent it. */
  by?: string | undefined;
}

/** Asked by the turn loop at every turn boundary. */
export interface TurnBoundary {
  /**
   * The reason of a graceful stop, once one was requested: the loop finishes the model turn or the
   * tool it is in, starts nothing new and ends `completed` with `stop: "stopped"`.
   */
  stopRequested(): string | undefined;
  /** Steering messages received since the last call, oldest first; each is handed out once. */
  takeSteering(): SteeringMessage[];
  /**
   * Asked before each model call: resolves `go` when the call may be made (a shared budget may hold
   * it — the run pauses meanwhile), `stop` when a graceful stop came while it waited. Rejects only
   * when `signal` aborts.
   */
  admitTurn?(turn: TurnAdmission, signal: AbortSignal): Promise<"go" | "stop">;
  /**
   * Told the usage of a call {@link admitTurn} admitted, once it returned (`null`: the call failed
   * and reported none), so a shared budget can replace its reservation with what was spent.
   */
  settleTurn?(turn: number, model: string, usage: ProviderUsage | null): Promise<void>;
}

/** A model call about to be made. */
export interface TurnAdmission {
  turn: number;
  model: string;
  /** The request, as it will be sent (for an estimate of its cost). */
  request: LlmRequest;
}

/**
 * The conversation with a steering message added as the user's: merged into the last message when
 * that is the user's (the tool results a turn just produced; two user messages in a row would be
 * merged by the provider anyway), a new user message after an assistant one. Never mutates a message
 * (they may be the shared, frozen prefix's).
 */
export function withSteering(messages: MessageParam[], text: string): void {
  const last = messages.at(-1);
  const block = { type: "text", text } as const;
  if (last?.role === "user") {
    const content =
      typeof last.content === "string"
        ? [{ type: "text", text: last.content }, block]
        : [...last.content, block];
    messages[messages.length - 1] = { role: "user", content: content as MessageParam["content"] };
    return;
  }
  messages.push({ role: "user", content: [block] as MessageParam["content"] });
}
