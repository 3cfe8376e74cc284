// Test-only: a deterministic LlmClient that answers from a script, records every request exactly as
// sent (as JSON text, so later changes to objects cannot hide what went over the wire), and honours
// its AbortSignal like a real client.
import type { ContentBlock, ProviderUsage } from "@forkd/protocol";
import {
  type LlmCallOptions,
  type LlmClient,
  LlmError,
  type LlmRequest,
  type LlmResponse,
} from "../llm-client.js";

/** One scripted answer: a response, or a function of the request that makes one (or throws). */
export type ScriptStep =
  | (Partial<LlmResponse> & { content?: ContentBlock[]; text?: string })
  | ((request: LlmRequest, options: LlmCallOptions) => Promise<Partial<LlmResponse>> | Partial<LlmResponse>);

export function usage(partial: Partial<ProviderUsage> = {}): ProviderUsage {
  return {
    input_tokens: 10,
    output_tokens: 5,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    ...partial,
  };
}

export function textReply(text: string, extra: Partial<LlmResponse> = {}): Partial<LlmResponse> {
  return {
    message: { role: "assistant", content: [{ type: "text", text }] },
    stop_reason: "end_turn",
    ...extra,
  };
}

export function toolReply(
  calls: { id: string; name: string; input: unknown }[],
  extra: Partial<LlmResponse> = {},
): Partial<LlmResponse> {
  return {
    message: {
      role: "assistant",
      content: [
        { type: "text", text: "Calling tools." },
        ...calls.map((call) => ({ type: "tool_use", id: call.id, name: call.name, input: call.input })),
      ],
    },
    stop_reason: "tool_use",
    ...extra,
  };
}

export class ScriptedLlmClient implements LlmClient {
  readonly requests: string[] = [];
  readonly #steps: ScriptStep[];
  #next = 0;

  constructor(steps: ScriptStep[]) {
    this.#steps = steps;
  }

  get calls(): number {
    return this.#next;
  }

  lastRequest(): LlmRequest {
    return JSON.parse(this.requests.at(-1) ?? "null") as LlmRequest;
  }

  async createMessage(request: LlmRequest, options: LlmCallOptions = {}): Promise<LlmResponse> {
    this.requests.push(JSON.stringify(request));
    options.signal?.throwIfAborted();
    const step = this.#steps[this.#next++];
    if (step === undefined) throw new LlmError("invalid_request", `script has no step ${this.#next}`);
    const partial = typeof step === "function" ? await step(request, options) : step;
    options.onEvent?.({ type: "response_started", ttftMs: 1 });
    const message = partial.message ?? { role: "assistant", content: [{ type: "text", text: "done" }] };
    for (const block of message.content) {
      if (block.type === "text" && typeof block.text === "string")
        options.onEvent?.({ type: "text_delta", text: block.text });
    }
    return {
      id: `msg_${this.#next}`,
      model: request.model,
      message,
      stop_reason: partial.stop_reason === undefined ? "end_turn" : partial.stop_reason,
      usage: partial.usage ?? usage(),
      ttftMs: partial.ttftMs ?? 1,
      durationMs: partial.durationMs ?? 2,
      ...(partial.cacheMissReason === undefined ? {} : { cacheMissReason: partial.cacheMissReason }),
    };
  }
}

/** A step that never answers until its signal aborts, then rejects like a real client. */
export function hangingStep(onStart?: () => void): ScriptStep {
  return (_request, options) =>
    new Promise((_resolve, reject) => {
      onStart?.();
      const abort = () => reject(new LlmError("aborted", "request aborted"));
      if (options.signal?.aborted) abort();
      options.signal?.addEventListener("abort", abort, { once: true });
    });
}
