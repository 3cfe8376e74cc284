// The LlmClient on Anthropic's Messages API: one streamed request per attempt, our own retry policy
// around it, and the rule that a turn whose output had begun is never replayed here.
import type Anthropic from "@anthropic-ai/sdk";
import type { ClientOptions } from "@anthropic-ai/sdk";
import type { BetaMessageStreamParams } from "@anthropic-ai/sdk/resources/beta/messages/messages";
import type {
  MessageStreamParams,
  RawMessageStreamEvent,
} from "@anthropic-ai/sdk/resources/messages/messages";
import {
  type LlmCallOptions,
  type LlmClient,
  LlmError,
  type LlmRequest,
  type LlmResponse,
  type LlmStreamEvent,
  type Logger,
  silentLogger,
} from "@forkd/core";
import {
  type ContentBlock,
  type ProviderCacheMissReason,
  ProviderCacheMissReasonSchema,
  type ProviderUsage,
} from "@forkd/protocol";
import { hasEscapedKey, parseJsonText } from "@forkd/protocol/internal";
import { startAttempt } from "./attempt-control.js";
import { toLlmError } from "./errors.js";
import { sdkLogger } from "./logger.js";
import { spliceSealedBodies } from "./request-body.js";
import {
  abortableSleep,
  compileRetryPolicy,
  parseRetryAfter,
  type RetryOptions,
  type RetryPolicy,
  retryDelay,
} from "./retry.js";
import { withSdkWarningsRouted } from "./sdk-warnings.js";
import type { ProviderThrottle } from "./throttle.js";
import { mergeUsage } from "./usage.js";

/** The SDK's own default base URL. */
const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";

let sdkModule: Promise<typeof import("@anthropic-ai/sdk")> | undefined;
/** The `@anthropic-ai/sdk` module, imported once, when a client first needs it. */
function anthropicSdk(): Promise<typeof import("@anthropic-ai/sdk")> {
  sdkModule ??= import("@anthropic-ai/sdk");
  return sdkModule;
}

/** Default time allowed for the first byte of a response, and between two of its events. @unit ms */
export const DEFAULT_TIMEOUT_MS = 600_000;

/** Options of {@link AnthropicLlmClient}. */
export interface AnthropicClientOptions {
  /**
   * API key.
   * @default process.env.ANTHROPIC_API_KEY (read by the SDK, which also knows ANTHROPIC_AUTH_TOKEN and profiles)
   */
  apiKey?: string | undefined;
  /**
   * Base URL of the API, e.g. the simulator's `http://127.0.0.1:PORT`.
   * @default process.env.ANTHROPIC_BASE_URL, else https://api.anthropic.com
   */
  baseURL?: string | undefined;
  /**
   * Headers sent with every request (an `anthropic-beta` list, a proxy's routing header…).
   * @default {}
   */
  defaultHeaders?: Record<string, string>;
  /**
   * Per attempt: the longest wait for the response to start, and then for each next event of its
   * stream. A whole response may take longer; a stalled one may not.
   * @default 600000
   * @unit ms
   */
  timeout?: number;
  /** Retry policy. @default { maxRetries: 4, baseDelayMs: 500, maxDelayMs: 30000 } */
  retry?: RetryOptions;
  /**
   * Backoff shared with the account's other callers: consulted before each attempt, told of every
   * 429 and 529 (see {@link ProviderThrottle}).
   * @default none: each call backs off alone
   */
  throttle?: ProviderThrottle | undefined;
  /**
   * Where the client writes retries and failures. Also handed to the SDK, whose level is
   * `ANTHROPIC_LOG` (default `warn`).
   * @default a logger that writes nothing
   */
  logger?: Logger;
}

interface CompiledOptions {
  timeoutMs: number;
  retry: RetryPolicy;
  logger: Logger;
  throttle: ProviderThrottle | undefined;
}

/** Options → defaults → checked values, in one place. */
function compileOptions(options: AnthropicClientOptions): CompiledOptions {
  const timeoutMs = options.timeout ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new RangeError(`timeout must be a positive integer number of milliseconds, got ${timeoutMs}`);
  }
  return {
    timeoutMs,
    retry: compileRetryPolicy(options.retry),
    logger: options.logger ?? silentLogger,
    throttle: options.throttle,
  };
}

/** Where one attempt got to: what the caller is owed if it fails now. */
interface AttemptProgress {
  startedAt: number;
  ttftMs: number | undefined;
  /** Usage from `message_start`, merged with each `message_delta` since. */
  usage: ProviderUsage | undefined;
  /** Text deltas received so far. */
  text: string;
  /** A content block started or a content delta arrived: from here a replay would be visible. */
  outputBegan: boolean;
  sawMessageStop: boolean;
  /** Each tool-input block's streamed JSON, by block index, to re-read where the SDK's parse may not be right. */
  toolInputJson: Map<number, string>;
}

type AttemptResult =
  | { ok: true; response: LlmResponse }
  | { ok: false; error: LlmError; retryAfterMs: number | undefined };

/**
 * The SDK's content blocks as plain data (its blocks carry lazy getters and hidden parse buffers), each
 * tool input whose streamed JSON has an escaped key read again with {@link parseJsonText}: the SDK parses
 * tool input with the native `JSON.parse`, which V8 12.8+ can make misread such a key.
 */
function plainContent(
  content: readonly unknown[],
  toolInputJson: ReadonlyMap<number, string>,
): ContentBlock[] {
  const blocks = parseJsonText(JSON.stringify(content)) as ContentBlock[];
  for (const [index, json] of toolInputJson) {
    const block = blocks[index] as { input?: unknown } | undefined;
    if (block === undefined || !("input" in block) || !hasEscapedKey(json)) continue;
    try {
      block.input = parseJsonText(json, true);
    } catch {
      // Not JSON: the SDK's reading stands, as it does for every malformed input.
    }
  }
  return blocks;
}

/**
 * {@link LlmClient} on the Anthropic Messages API, streaming.
 *
 * - The request goes out as given: the SDK serialises it with `JSON.stringify` after adding
 *   `"stream": true`; nothing is re-rendered or reordered, so the provider's prompt cache sees the
 *   parent's prefix byte for byte. A body that holds a sealed shared prefix (`sealSharedPrefix`) is
 *   written with the bytes of that prefix serialised once, not once per child: the same bytes.
 * - The SDK's own retries are off; this client retries 429, 529, 5xx, resets and timeouts with
 *   full-jitter backoff and `retry-after`, but never once output began (`stream_interrupted`).
 * - The caller's `signal` aborts at any point; the rejection carries the usage and text so far.
 */
export class AnthropicLlmClient implements LlmClient {
  #sdk: Promise<Anthropic> | undefined;
  /** The client once loaded: later requests take it without waiting a turn of the event loop. */
  #loaded: Anthropic | undefined;
  readonly #sdkOptions: ClientOptions;
  readonly #options: CompiledOptions;

  constructor(options: AnthropicClientOptions = {}) {
    this.#options = compileOptions(options);
    this.#sdkOptions = {
      apiKey: options.apiKey,
      baseURL: options.baseURL,
      defaultHeaders: options.defaultHeaders,
      timeout: this.#options.timeoutMs,
      // Ours is the only retry policy: the SDK's would replay silently and hide retries from the log.
      maxRetries: 0,
      // No redirect is followed: fetch would otherwise keep a second copy of every request body for
      // the whole call (it tees the body to re-send it after a 307/308), ~190 kB per child at 48k.
      // The Messages API does not redirect; a base URL that does fails as a connection error.
      fetchOptions: { redirect: "error", window: null },
      logger: options.logger === undefined ? undefined : sdkLogger(options.logger),
    };
  }

  // The SDK (its whole API surface: ~250 modules, ~18 MB of a daemon's RSS) is loaded at the first
  // request: a daemon configured for OpenAI or Gemini models that never calls Anthropic does not
  // hold it. Its error classes, which toLlmError needs, come from the SDK's small error module.
  #client(): Promise<Anthropic> {
    this.#sdk ??= anthropicSdk().then((sdk) => {
      const client = new sdk.default(this.#sdkOptions);
      spliceSealedBodies(client);
      this.#loaded = client;
      return client;
    });
    return this.#sdk;
  }

  /** The base URL requests go to (as the SDK resolves it: the option, ANTHROPIC_BASE_URL, its default). */
  get baseURL(): string {
    return this.#sdkOptions.baseURL ?? process.env.ANTHROPIC_BASE_URL ?? ANTHROPIC_DEFAULT_BASE_URL;
  }

  async createMessage(request: LlmRequest, options: LlmCallOptions = {}): Promise<LlmResponse> {
    const { signal } = options;
    const emit = this.#emitter(options.onEvent);
    if (signal?.aborted) {
      throw new LlmError("aborted", "The model call was aborted before it started.");
    }
    const throttle = this.#options.throttle;
    for (let attempt = 1; ; attempt++) {
      await throttle?.clearance(request.model, signal);
      const result = await this.#attempt(request, signal, emit);
      if (result.ok) return result.response;
      const { error, retryAfterMs } = result;
      const delayMs = retryDelay(error, attempt, retryAfterMs, this.#options.retry);
      // "Slow down" holds the account's other calls of this model too, for as long as it says.
      if (throttle !== undefined && (error.code === "rate_limited" || error.code === "overloaded")) {
        const holdMs = retryAfterMs ?? delayMs;
        if (holdMs !== undefined && holdMs > 0) throttle.report(request.model, Date.now() + holdMs);
      }
      if (delayMs === undefined) {
        this.#logFailure(error, attempt, retryAfterMs);
        throw error;
      }
      this.#options.logger.warn(
        {
          model: request.model,
          attempt,
          code: error.code,
          status: error.status,
          delayMs,
          // An attempt that failed after message_start was billed for its input: say so here, since
          // the response that follows carries only the retry's usage.
          partialUsage: error.partialUsage,
          err: error,
        },
        "llm attempt failed; retrying",
      );
      emit({
        type: "retry",
        attempt,
        delayMs,
        error: error.code,
        status: error.status,
      });
      await abortableSleep(delayMs, signal);
    }
  }

  /** One HTTP request and its stream. Never throws: the retry loop decides what a failure means. */
  async #attempt(
    request: LlmRequest,
    signal: AbortSignal | undefined,
    emit: (event: LlmStreamEvent) => void,
  ): Promise<AttemptResult> {
    const attempt = startAttempt(signal, this.#options.timeoutMs);
    const { controller } = attempt;
    const progress: AttemptProgress = {
      startedAt: performance.now(),
      ttftMs: undefined,
      usage: undefined,
      text: "",
      outputBegan: false,
      sawMessageStop: false,
      toolInputJson: new Map(),
    };
    try {
      const sdk = this.#loaded ?? (await this.#client());
      attempt.arm();
      const requestOptions = { signal: controller.signal, maxRetries: 0, timeout: this.#options.timeoutMs };
      // Passed through untouched: LlmRequest is the Messages API body, typed loosely by protocol.
      // With betas, the SDK's beta Messages API sends them as the `anthropic-beta` header.
      const stream = withSdkWarningsRouted(this.#options.logger, () =>
        request.betas !== undefined && request.betas.length > 0
          ? // The beta stream emits the same events (a superset of their fields) as the plain one.
            (sdk.beta.messages.stream(
              request as unknown as BetaMessageStreamParams,
              requestOptions,
            ) as unknown as ReturnType<Anthropic["messages"]["stream"]>)
          : sdk.messages.stream(request as unknown as MessageStreamParams, requestOptions),
      );
      stream.on("streamEvent", (event: RawMessageStreamEvent) => {
        attempt.arm();
        this.#observe(event, progress, stream.request_id ?? undefined, emit);
      });
      await stream.done();
      if (!progress.sawMessageStop) {
        throw new LlmError("connection", "The response stream ended before message_stop.", {
          retryable: true,
        });
      }
      const message = await stream.finalMessage();
      const cacheMissReason = cacheMissReasonOf(message);
      return {
        ok: true,
        response: {
          ...(cacheMissReason === undefined ? {} : { cacheMissReason }),
          id: message.id,
          model: message.model,
          // Plain data: the SDK's blocks carry lazy getters and hidden parse buffers.
          message: {
            role: "assistant",
            content: plainContent(message.content, progress.toolInputJson),
          },
          stop_reason: message.stop_reason,
          usage: progress.usage ?? (message.usage as unknown as ProviderUsage),
          ttftMs: progress.ttftMs ?? 0,
          durationMs: performance.now() - progress.startedAt,
        },
      };
    } catch (thrown) {
      controller.abort();
      const error = toLlmError(thrown, {
        aborted: signal?.aborted === true,
        timedOut: attempt.timedOut(),
        outputBegan: progress.outputBegan,
        partialUsage: progress.usage,
        partialText: progress.usage === undefined && !progress.outputBegan ? undefined : progress.text,
      });
      return { ok: false, error, retryAfterMs: parseRetryAfter(responseHeaders(thrown)) };
    } finally {
      attempt.close();
    }
  }

  /** Tracks one raw stream event and forwards what the caller observes. */
  #observe(
    event: RawMessageStreamEvent,
    progress: AttemptProgress,
    requestId: string | undefined,
    emit: (event: LlmStreamEvent) => void,
  ): void {
    switch (event.type) {
      case "message_start": {
        progress.ttftMs = performance.now() - progress.startedAt;
        progress.usage = { ...(event.message.usage as unknown as ProviderUsage) };
        emit({
          type: "response_started",
          ttftMs: progress.ttftMs,
          requestId,
        });
        return;
      }
      case "message_delta":
        if (progress.usage) {
          progress.usage = mergeUsage(progress.usage, event.usage as unknown as Record<string, unknown>);
        }
        return;
      case "content_block_start":
        progress.outputBegan = true;
        return;
      case "content_block_delta":
        progress.outputBegan = true;
        if (event.delta.type === "text_delta") {
          progress.text += event.delta.text;
          emit({ type: "text_delta", text: event.delta.text });
        } else if (event.delta.type === "thinking_delta") {
          emit({ type: "thinking_delta", thinking: event.delta.thinking });
        } else if (event.delta.type === "input_json_delta") {
          const sofar = progress.toolInputJson.get(event.index) ?? "";
          progress.toolInputJson.set(event.index, sofar + event.delta.partial_json);
        }
        return;
      case "message_stop":
        progress.sawMessageStop = true;
        return;
      case "content_block_stop":
        return;
    }
  }

  /** Wraps the caller's observer so that a throwing observer cannot break the stream. */
  #emitter(onEvent: LlmCallOptions["onEvent"]): (event: LlmStreamEvent) => void {
    if (!onEvent) return () => {};
    return (event) => {
      try {
        onEvent(event);
      } catch (error) {
        this.#options.logger.error(
          { type: event.type, err: error },
          "llm onEvent observer threw; event dropped",
        );
      }
    };
  }

  #logFailure(error: LlmError, attempts: number, retryAfterMs: number | undefined): void {
    if (error.code === "aborted") {
      this.#options.logger.debug({ attempts }, "llm call aborted");
      return;
    }
    this.#options.logger.warn(
      {
        code: error.code,
        status: error.status,
        retryable: error.retryable,
        attempts,
        retryAfterMs,
        err: error,
      },
      "llm call failed",
    );
  }
}

/** The response headers an SDK error carries, if any (for `retry-after`). */
function responseHeaders(error: unknown): Headers | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const headers = (error as { headers?: unknown }).headers;
  return headers instanceof Headers ? headers : undefined;
}

/** Creates an {@link AnthropicLlmClient}. */
export function anthropicClient(options: AnthropicClientOptions = {}): AnthropicLlmClient {
  return new AnthropicLlmClient(options);
}

/**
 * The provider's `diagnostics.cache_miss_reason` of a response (on `message_start` when streamed, so
 * on the final message too), as plain data; `undefined` when absent, pending (`null`) or malformed.
 */
export function cacheMissReasonOf(message: unknown): ProviderCacheMissReason | undefined {
  const diagnostics = (message as { diagnostics?: unknown } | null)?.diagnostics;
  if (typeof diagnostics !== "object" || diagnostics === null) return undefined;
  const parsed = ProviderCacheMissReasonSchema.safeParse(
    (diagnostics as { cache_miss_reason?: unknown }).cache_miss_reason,
  );
  return parsed.success ? (JSON.parse(JSON.stringify(parsed.data)) as ProviderCacheMissReason) : undefined;
}
