// The LlmClient on OpenAI's APIs (Chat Completions or Responses) with the official `openai` SDK: the
// canonical conversation rendered in the API's format (or a native parent's request with the child's
// messages after it), streamed, our own retry policy around it, usage mapped to forkd's fields.

import {
  chatAssistantToCanonical,
  type LlmCallOptions,
  type LlmClient,
  LlmError,
  type LlmRequest,
  type LlmResponse,
  type LlmStreamEvent,
  type Logger,
  renderChatRequest,
  renderNativeChildRequest,
  renderResponsesRequest,
  responsesItemsToAssistant,
  silentLogger,
} from "@forkd/core";
import type { NativePrefix, ProviderUsage } from "@forkd/protocol";
import { parseJsonText } from "@forkd/protocol/internal";
import type OpenAI from "openai";
import { observerEmitter, retryOrThrow, startAttempt } from "./attempt-control.js";
import { errorCodeForStatus, toLlmError } from "./errors.js";
import { spliceSealedBodies } from "./request-body.js";
import { compileRetryPolicy, parseRetryAfter, type RetryOptions } from "./retry.js";

/** The `openai` SDK's own default base URL. */
const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";

let sdkModule: Promise<typeof import("openai")> | undefined;
/** The `openai` module, imported once, when a client first needs it. */
function openAiSdk(): Promise<typeof import("openai")> {
  sdkModule ??= import("openai");
  return sdkModule;
}

/** Which OpenAI API a client speaks. */
export type OpenAiApi = "chat" | "responses";

/** Options of {@link OpenAiLlmClient}. */
export interface OpenAiClientOptions {
  /** Chat Completions (`/chat/completions`) or Responses (`/responses`). */
  api: OpenAiApi;
  /** @default process.env.OPENAI_API_KEY */
  apiKey?: string | undefined;
  /** Base URL including `/v1`, e.g. the simulator's `http://127.0.0.1:PORT/v1`. @default process.env.OPENAI_BASE_URL, else https://api.openai.com/v1 */
  baseURL?: string | undefined;
  /** Per attempt: the longest wait for the first byte, and then between two events. @default 600000 @unit ms */
  timeout?: number;
  /** Retry policy. @default { maxRetries: 4, baseDelayMs: 500, maxDelayMs: 30000 } */
  retry?: RetryOptions;
  /** @default a logger that writes nothing */
  logger?: Logger;
}

/** What one child's requests carry besides the conversation. */
export interface OpenAiRequestOptions {
  /** Sent as `prompt_cache_key`: the routing key every child of one fan-out shard shares. */
  promptCacheKey?: string | undefined;
  /**
   * Sent as `prompt_cache_retention` (`in_memory` or `24h`, as the SDK's types document it), in place
   * of a native parent's own; absent: the native parent's own, else none (the provider's default).
   */
  promptCacheRetention?: "in_memory" | "24h" | undefined;
  /**
   * The native parent: the body starts with its request and reply, and only the canonical messages
   * from `nativeCount` on are rendered.
   */
  native?: { prefix: NativePrefix; count: number } | undefined;
  /**
   * A rendered (not native) parent: how many of the request's messages are the parent's own request.
   * On a model with explicit cache breakpoints (GPT-5.6 on) the last block of the last of them, a user
   * message, is marked: the parent's request ended there and wrote its implicit breakpoint, which the
   * child then reads (a native parent's is marked from its bytes).
   */
  parentMessages?: number | undefined;
}

/** Usage as OpenAI reports it: Chat (`prompt_tokens`…) or Responses (`input_tokens`…). */
export interface OpenAiUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number | null; cache_write_tokens?: number | null } | null;
  input_tokens?: number;
  output_tokens?: number;
  input_tokens_details?: { cached_tokens?: number | null; cache_write_tokens?: number | null } | null;
}

/**
 * OpenAI usage as forkd's: `input_tokens` the prompt tokens neither read from nor written to the
 * cache, `cache_read_input_tokens` the cached ones, `cache_creation_input_tokens` the ones written
 * (`cache_write_tokens`, which the SDK's types give as a breakdown of the prompt's tokens: reported
 * for the GPT-5.6 family's breakpoints, absent, so 0, before it), output as reported.
 */
export function usageFromOpenAi(usage: OpenAiUsage | null | undefined): ProviderUsage {
  const prompt = usage?.prompt_tokens ?? usage?.input_tokens ?? 0;
  const details = usage?.prompt_tokens_details ?? usage?.input_tokens_details;
  const cached = details?.cached_tokens ?? 0;
  const written = details?.cache_write_tokens ?? 0;
  return {
    input_tokens: prompt - cached - written,
    output_tokens: usage?.completion_tokens ?? usage?.output_tokens ?? 0,
    cache_creation_input_tokens: written,
    cache_read_input_tokens: cached,
  };
}

/**
 * `request` with a breakpoint marker (`cache_control`, which the renderers turn into
 * `prompt_cache_breakpoint` on a model that takes them) on the last block of its message
 * `parentMessages - 1` when that is a user message whose last block is text or a tool result and
 * carries none. A string content is one text block on Responses (rendered the same either way);
 * on Chat Completions it stays a string (a list of parts would be other bytes than the parent's).
 * The request's own objects are not changed.
 */
export function markParentEnd(request: LlmRequest, parentMessages: number, api: OpenAiApi): LlmRequest {
  const message = request.messages[parentMessages - 1];
  if (message?.role !== "user") return request;
  if (typeof message.content === "string" && api === "chat") return request;
  const blocks =
    typeof message.content === "string"
      ? [{ type: "text" as const, text: message.content }]
      : message.content;
  const last = blocks[blocks.length - 1];
  if (last === undefined || (last.type !== "text" && last.type !== "tool_result")) return request;
  if ((last as { cache_control?: unknown }).cache_control != null) return request;
  const content = [...blocks.slice(0, -1), { ...last, cache_control: { type: "ephemeral" } }];
  const messages = [...request.messages];
  messages[parentMessages - 1] = { ...message, content } as typeof message;
  return { ...request, messages };
}

const STOP_REASONS: Record<string, string> = {
  stop: "end_turn",
  tool_calls: "tool_use",
  length: "max_tokens",
  content_filter: "refusal",
};

/** What streaming one attempt needs. */
interface StreamContext {
  body: Record<string, unknown>;
  callOptions: { signal: AbortSignal; maxRetries: number; timeout: number };
  progress: Progress;
  /** Reports the first byte (once). */
  started: (requestId: string | undefined) => void;
  emit: (event: LlmStreamEvent) => void;
  /** Re-arms the idle timer. */
  arm: () => void;
}

interface Progress {
  startedAt: number;
  ttftMs: number | undefined;
  text: string;
  outputBegan: boolean;
}

/**
 * {@link LlmClient} on OpenAI's Chat Completions or Responses API, streaming. Use
 * {@link OpenAiLlmClient.forRun} for a child: it binds the prompt cache key and the native prefix.
 *
 * - The SDK's retries are off; 429, 5xx, resets and timeouts are retried with backoff and
 *   `retry-after`, never once output began (`stream_interrupted`).
 * - The caller's signal aborts at any point; the rejection carries the text so far.
 */
export class OpenAiLlmClient implements LlmClient {
  #sdk: Promise<OpenAI> | undefined;
  readonly #sdkOptions: ConstructorParameters<typeof OpenAI>[0];
  readonly #api: OpenAiApi;
  readonly #timeoutMs: number;
  readonly #retry: ReturnType<typeof compileRetryPolicy>;
  readonly #logger: Logger;

  constructor(options: OpenAiClientOptions) {
    this.#api = options.api;
    this.#timeoutMs = options.timeout ?? 600_000;
    this.#retry = compileRetryPolicy(options.retry);
    this.#logger = options.logger ?? silentLogger;
    this.#sdkOptions = {
      apiKey: options.apiKey ?? process.env.OPENAI_API_KEY ?? "",
      baseURL: options.baseURL ?? process.env.OPENAI_BASE_URL,
      timeout: this.#timeoutMs,
      maxRetries: 0,
      fetchOptions: { redirect: "error" },
    };
  }

  // The SDK is loaded at the first request: a daemon that never calls OpenAI does not hold it
  // (~12 MB of RSS per process, bench #8).
  #client(): Promise<OpenAI> {
    this.#sdk ??= openAiSdk().then((sdk) => {
      const client = new sdk.default(this.#sdkOptions);
      // A native parent's request is sealed in a daemon: its bytes are written once for all siblings,
      // and the values its client wrote otherwise than JavaScript go out as it wrote them.
      spliceSealedBodies(client);
      return client;
    });
    return this.#sdk;
  }

  /** The API this client speaks. */
  get api(): OpenAiApi {
    return this.#api;
  }

  /** The base URL requests go to (the SDK's default when none was given). */
  get baseURL(): string {
    return this.#sdkOptions?.baseURL ?? OPENAI_DEFAULT_BASE_URL;
  }

  /** An {@link LlmClient} for one child: every request carries `options`' key and native prefix. */
  forRun(options: OpenAiRequestOptions): LlmClient {
    return { createMessage: (request, callOptions) => this.send(request, options, callOptions) };
  }

  createMessage(request: LlmRequest, options: LlmCallOptions = {}): Promise<LlmResponse> {
    return this.send(request, {}, options);
  }

  /** The request body as it goes out (before the SDK adds nothing: streaming fields are set here). */
  body(request: LlmRequest, options: OpenAiRequestOptions = {}): Record<string, unknown> {
    const rendered =
      options.parentMessages === undefined
        ? request
        : markParentEnd(request, options.parentMessages, this.#api);
    const body =
      options.native !== undefined
        ? renderNativeChildRequest(options.native.prefix, request, options.native.count)
        : this.#api === "chat"
          ? renderChatRequest(rendered)
          : renderResponsesRequest(rendered);
    if (options.promptCacheKey !== undefined) body.prompt_cache_key = options.promptCacheKey;
    if (options.promptCacheRetention !== undefined)
      body.prompt_cache_retention = options.promptCacheRetention;
    body.stream = true;
    if (this.#api === "chat") body.stream_options = { include_usage: true };
    return body;
  }

  /** Sends one request with retries. Rejects with {@link LlmError}. */
  async send(
    request: LlmRequest,
    requestOptions: OpenAiRequestOptions,
    options: LlmCallOptions = {},
  ): Promise<LlmResponse> {
    const { signal } = options;
    const emit = observerEmitter(options.onEvent, this.#logger);
    if (signal?.aborted) throw new LlmError("aborted", "The model call was aborted before it started.");
    const body = this.body(request, requestOptions);
    for (let attempt = 1; ; attempt++) {
      const result = await this.#attempt(body, signal, emit);
      if (result.ok) return result.response;
      await retryOrThrow(result.error, attempt, result.retryAfterMs, {
        policy: this.#retry,
        model: request.model,
        logger: this.#logger,
        emit,
        signal,
      });
    }
  }

  async #attempt(
    body: Record<string, unknown>,
    signal: AbortSignal | undefined,
    emit: (event: LlmStreamEvent) => void,
  ): Promise<
    { ok: true; response: LlmResponse } | { ok: false; error: LlmError; retryAfterMs: number | undefined }
  > {
    const attempt = startAttempt(signal, this.#timeoutMs);
    const { controller } = attempt;
    const progress: Progress = {
      startedAt: performance.now(),
      ttftMs: undefined,
      text: "",
      outputBegan: false,
    };
    const started = (requestId: string | undefined) => {
      if (progress.ttftMs !== undefined) return;
      progress.ttftMs = performance.now() - progress.startedAt;
      emit({ type: "response_started", ttftMs: progress.ttftMs, requestId });
    };
    try {
      attempt.arm();
      const stream: StreamContext = {
        body,
        callOptions: { signal: controller.signal, maxRetries: 0, timeout: this.#timeoutMs },
        progress,
        started,
        emit,
        arm: () => attempt.arm(),
      };
      const response =
        this.#api === "chat" ? await this.#streamChat(stream) : await this.#streamResponses(stream);
      return { ok: true, response };
    } catch (thrown) {
      controller.abort();
      const { APIError } = await openAiSdk();
      const error = toLlmError(await asLlmError(thrown), {
        aborted: signal?.aborted === true,
        timedOut: attempt.timedOut(),
        outputBegan: progress.outputBegan,
        partialText: progress.outputBegan ? progress.text : undefined,
      });
      const headers = thrown instanceof APIError ? (thrown.headers as Headers | undefined) : undefined;
      return { ok: false, error, retryAfterMs: parseRetryAfter(headers) };
    } finally {
      attempt.close();
    }
  }

  async #streamChat(context: StreamContext): Promise<LlmResponse> {
    const { body, callOptions, progress, started, emit, arm } = context;
    const sdk = await this.#client();
    const { data: stream, request_id } = await sdk.chat.completions
      .create(body as unknown as OpenAI.ChatCompletionCreateParamsStreaming, callOptions)
      .withResponse();
    const calls: { id: string; name: string; arguments: string }[] = [];
    let id = "";
    let model = String(body.model);
    let finish: string | null = null;
    let usage: OpenAiUsage | undefined;
    for await (const chunk of stream) {
      arm();
      started(request_id ?? undefined);
      id = chunk.id;
      model = chunk.model;
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (choice === undefined) continue;
      const delta = choice.delta;
      if (typeof delta.content === "string" && delta.content !== "") {
        progress.outputBegan = true;
        progress.text += delta.content;
        emit({ type: "text_delta", text: delta.content });
      }
      for (const call of delta.tool_calls ?? []) {
        progress.outputBegan = true;
        let slot = calls[call.index];
        if (slot === undefined) {
          slot = { id: "", name: "", arguments: "" };
          calls[call.index] = slot;
        }
        if (call.id) slot.id = call.id;
        if (call.function?.name) slot.name += call.function.name;
        if (call.function?.arguments) slot.arguments += call.function.arguments;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    if (finish === null)
      throw new LlmError("connection", "The response stream ended without a finish_reason.", {
        retryable: true,
      });
    const message = chatAssistantToCanonical({
      role: "assistant",
      content: progress.text,
      ...(calls.length > 0
        ? {
            tool_calls: calls.map((c) => ({
              id: c.id,
              type: "function",
              function: { name: c.name, arguments: c.arguments },
            })),
          }
        : {}),
    });
    return {
      id,
      model,
      message,
      stop_reason: STOP_REASONS[finish] ?? finish,
      usage: usageFromOpenAi(usage),
      ttftMs: progress.ttftMs ?? 0,
      durationMs: performance.now() - progress.startedAt,
    };
  }

  async #streamResponses(context: StreamContext): Promise<LlmResponse> {
    const { body, callOptions, progress, started, emit, arm } = context;
    const sdk = await this.#client();
    const { data: stream, request_id } = await sdk.responses
      .create(body as unknown as OpenAI.Responses.ResponseCreateParamsStreaming, callOptions)
      .withResponse();
    let final: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      arm();
      started(request_id ?? undefined);
      switch (event.type) {
        case "response.output_text.delta":
          progress.outputBegan = true;
          progress.text += event.delta;
          emit({ type: "text_delta", text: event.delta });
          break;
        case "response.output_item.added":
          progress.outputBegan = true;
          break;
        case "response.completed":
        case "response.incomplete":
          final = event.response;
          break;
        case "response.failed":
          throw new LlmError(
            event.response.error?.code === "rate_limit_exceeded" ? "rate_limited" : "server_error",
            event.response.error?.message ?? "The response failed.",
            { retryable: true },
          );
        case "error":
          throw new LlmError("server_error", event.message, { retryable: true });
      }
    }
    if (final === undefined)
      throw new LlmError("connection", "The response stream ended before response.completed.", {
        retryable: true,
      });
    const message = responsesItemsToAssistant(
      parseJsonText(JSON.stringify(final.output)) as Record<string, unknown>[],
    );
    const calls = message.content.some((block) => block.type === "tool_use");
    return {
      id: final.id,
      model: final.model,
      message,
      stop_reason: final.status === "incomplete" ? "max_tokens" : calls ? "tool_use" : "end_turn",
      usage: usageFromOpenAi(final.usage as OpenAiUsage | null),
      ttftMs: progress.ttftMs ?? 0,
      durationMs: performance.now() - progress.startedAt,
    };
  }
}

/** An OpenAI SDK error as an {@link LlmError} with the code of its status (the rest is classified by `toLlmError`). */
async function asLlmError(thrown: unknown): Promise<unknown> {
  const { APIConnectionTimeoutError, APIError, APIUserAbortError } = await openAiSdk();
  if (thrown instanceof APIUserAbortError)
    return new LlmError("aborted", "The model call was aborted.", { cause: thrown });
  if (thrown instanceof APIConnectionTimeoutError)
    return new LlmError("timeout", "The model call timed out.", { retryable: true, cause: thrown });
  if (thrown instanceof APIError && typeof thrown.status === "number") {
    const code = errorCodeForStatus(thrown.status);
    return new LlmError(code, thrown.message, { status: thrown.status, cause: thrown });
  }
  return thrown;
}
