// Rebuilds the assistant message a streamed Chat Completions reply carried, from its
// `chat.completion.chunk` events, in the shape the API takes back in the next request's `messages`:
// `{ role, content, refusal?, tool_calls? }`, each tool call's `arguments` joined from its deltas.
import { chatReplyForRequest } from "@forkd/core";
import { parseJsonText } from "@forkd/protocol/internal";
import { StreamAssemblyError } from "./errors.js";
import { SseAssembler } from "./sse.js";

/** A Chat Completions assistant message as the API accepts it back. */
export type ChatReply = Record<string, unknown> & { role: "assistant" };

/** A tool call of a Chat Completions message. */
export interface ChatToolCall {
  id: string;
  type: string;
  function: { name: string; arguments: string };
}

interface ChatDelta {
  content?: string | null;
  refusal?: string | null;
  tool_calls?: {
    index?: number;
    id?: string;
    type?: string;
    function?: { name?: string; arguments?: string };
  }[];
}

/**
 * Parses a Chat Completions event stream incrementally (choice 0: the one an agent continues). The
 * reply is complete at `data: [DONE]`, or at the body's end once a `finish_reason` was seen (an
 * OpenAI-compatible server that leaves `[DONE]` out).
 */
export class ChatAssembler extends SseAssembler<ChatReply> {
  #content: string | undefined;
  #refusal: string | undefined;
  readonly #calls = new Map<number, ChatToolCall>();
  #finished = false;

  protected onData(data: string): ChatReply | undefined {
    if (data.trim() === "[DONE]") return this.#message();
    const chunk = parseJsonText(data) as {
      error?: unknown;
      choices?: { index?: number; delta?: ChatDelta; finish_reason?: string | null }[];
    };
    if (chunk.error !== undefined)
      throw new StreamAssemblyError(`the stream carried an error: ${data.slice(0, 500)}`);
    // The last chunk of `stream_options.include_usage` has no choices.
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (choice === undefined) return undefined;
    const delta = choice.delta ?? {};
    if (typeof delta.content === "string") this.#content = (this.#content ?? "") + delta.content;
    if (typeof delta.refusal === "string") this.#refusal = (this.#refusal ?? "") + delta.refusal;
    for (const [position, part] of (delta.tool_calls ?? []).entries()) {
      const index = part.index ?? position;
      const call = this.#calls.get(index) ?? {
        id: "",
        type: "function",
        function: { name: "", arguments: "" },
      };
      this.#calls.set(index, call);
      if (part.id) call.id = part.id;
      if (part.type) call.type = part.type;
      // A name comes whole (some compatible servers repeat it in every chunk); arguments come in pieces.
      if (part.function?.name) call.function.name = part.function.name;
      if (typeof part.function?.arguments === "string") call.function.arguments += part.function.arguments;
    }
    if (choice.finish_reason) this.#finished = true;
    return undefined;
  }

  protected override onEnd(): ChatReply | undefined {
    return this.#finished ? this.#message() : undefined;
  }

  #message(): ChatReply {
    // No text (a reply of tool calls) is `null`, as the non-streamed API gives it, though the first
    // chunk may have opened the content with "".
    const message: Record<string, unknown> = { role: "assistant", content: this.#content || null };
    if (this.#refusal !== undefined) message.refusal = this.#refusal;
    if (this.#calls.size > 0)
      message.tool_calls = [...this.#calls].sort(([a], [b]) => a - b).map(([, call]) => call);
    return chatReplyForRequest(message) as ChatReply;
  }
}
