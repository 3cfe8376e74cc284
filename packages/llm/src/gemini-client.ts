// The LlmClient on Gemini's generateContent API with the official `@google/genai` SDK: the canonical
// conversation rendered in Gemini's format (or a native parent's request with the child's contents
// after it), the parent's prefix held in one explicit cache per fan-out and named by every child,
// streamed over SSE, our own retry policy around it, usage mapped to forkd's fields.
//
// The body goes out byte for byte as forkd rendered it: the SDK would rebuild every part in its own
// key order and drop fields it does not know (a native parent's bytes would not survive), so each
// call hands the SDK a fetch (its documented `httpOptions.fetch`) that sends the rendered body in
// place of the SDK's. The SDK still makes the URL, the headers and the key, parses the SSE stream
// and the errors, and pages the cache listing.
import {
  GEMINI_CACHE_RENEW_BELOW_SECONDS,
  GEMINI_CACHE_TTL_SECONDS,
  type GeminiCachedPrefix,
  type GeminiPart,
  type GeminiPrefixSource,
  geminiCacheDisplayName,
  geminiCachedPrefix,
  geminiModelToAssistant,
  type LlmCallOptions,
  type LlmClient,
  LlmError,
  type LlmRequest,
  type LlmResponse,
  type LlmStreamEvent,
  type Logger,
  renderGeminiChildRequest,
  silentLogger,
} from "@forkd/core";
import type { ProviderUsage } from "@forkd/protocol";
import type { GenerateContentResponse, GoogleGenAI } from "@google/genai";
import { observerEmitter, retryOrThrow, startAttempt } from "./attempt-control.js";
import { errorCodeForStatus, toLlmError } from "./errors.js";
import type { GeminiCacheCoordinator, GeminiCacheRecord } from "./gemini-cache-coordinator.js";
import { restoreFunctionCallArgs, sendingBody, sendingBodyKeepingReply } from "./gemini-function-args.js";
import { compileRetryPolicy, type RetryOptions } from "./retry.js";

type GenAiSdk = typeof import("@google/genai");
let genAiModule: Promise<GenAiSdk> | undefined;
/** The SDK once loaded: errors are told apart with its classes. */
let loadedGenAi: GenAiSdk | undefined;
/**
 * `@google/genai`, imported once, when a client first needs it: a daemon that never calls Gemini
 * does not hold it in memory (bench #8's idle and peak RSS).
 */
function genAiSdk(): Promise<GenAiSdk> {
  genAiModule ??= import("@google/genai").then((sdk) => {
    loadedGenAi = sdk;
    return sdk;
  });
  return genAiModule;
}

/** Options of {@link GeminiLlmClient}. */
export interface GeminiClientOptions {
  /** @default process.env.GEMINI_API_KEY */
  apiKey?: string | undefined;
  /** Base URL without `/v1beta`, e.g. the simulator's `http://127.0.0.1:PORT`. @default process.env.GOOGLE_GEMINI_BASE_URL, else Google's */
  baseURL?: string | undefined;
  /** Per attempt: the longest wait for the first byte, and then between two chunks. @default 600000 @unit ms */
  timeout?: number;
  /** Retry policy. @default { maxRetries: 4, baseDelayMs: 500, maxDelayMs: 30000 } */
  retry?: RetryOptions;
  /** @default a logger that writes nothing */
  logger?: Logger;
  /**
   * How the client's fan-out caches are made and renewed once across daemons (see
   * {@link GeminiLlmClient.coordinate}). @default none: this client alone (siblings on one daemon share one lookup)
   */
  coordinator?: GeminiCacheCoordinator | undefined;
  /** The clock the caches' expiry is read by (tests move it with the simulator's). @default Date.now */
  now?: () => number;
}

/** What one child's requests carry besides the conversation. */
export interface GeminiRequestOptions extends Partial<GeminiPrefixSource> {
  /**
   * The explicit cache of the prefix: a name the parent gave (`cachedContents/…`), `"auto"` to find
   * the fan-out's cache or create it, or absent to send the whole prefix (implicit caching only).
   */
  cachedContent?: string | undefined;
}

/** Usage as Gemini reports it (`usageMetadata`). */
export interface GeminiUsage {
  promptTokenCount?: number;
  cachedContentTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
}

/**
 * Gemini usage as forkd's: `input_tokens` the prompt less its cached tokens (`promptTokenCount`
 * counts them), `cache_read_input_tokens` the cached ones (explicit or implicit), `output_tokens` the
 * candidates' and the thoughts' tokens (both billed as output), and `written` tokens of an explicit
 * cache this request created as `cache_creation_input_tokens` (billed as input plus storage).
 */
export function usageFromGemini(
  usage: GeminiUsage | null | undefined,
  written = 0,
  stored = 0,
): ProviderUsage {
  const prompt = (usage?.promptTokenCount ?? 0) + (usage?.toolUsePromptTokenCount ?? 0);
  const cached = usage?.cachedContentTokenCount ?? 0;
  return {
    input_tokens: prompt - cached,
    output_tokens: (usage?.candidatesTokenCount ?? 0) + (usage?.thoughtsTokenCount ?? 0),
    cache_creation_input_tokens: written,
    cache_read_input_tokens: cached,
    // A renewal's storage, on the one response that reports it (`stored` token-seconds).
    ...(stored > 0 ? { cache_storage_token_seconds: stored } : {}),
  };
}

const STOP_REASONS: Record<string, string> = {
  STOP: "end_turn",
  MAX_TOKENS: "max_tokens",
  SAFETY: "refusal",
  RECITATION: "refusal",
  BLOCKLIST: "refusal",
  PROHIBITED_CONTENT: "refusal",
  SPII: "refusal",
};

/** The explicit cache a request names, and the tokens written creating it that no request billed yet. */
interface CacheUse {
  name: string;
  /** The memo's key, when found or created here. */
  displayName?: string;
  written: number;
  /** The tokens it holds (0 when unknown: a cache the parent named). */
  tokens: number;
  /** Storage bought by renewals that no request billed yet. @unit token-seconds */
  stored: number;
  /** When the cache expires, as last known (found, created or renewed here). @unit ms since epoch */
  expiresAt?: number;
  /** The renewal in flight, shared by the siblings that need it. */
  renewing?: Promise<void> | undefined;
}

/**
 * {@link LlmClient} on Gemini's generateContent API, streaming (`streamGenerateContent?alt=sse`).
 * Use {@link GeminiLlmClient.forRun} for a child: it binds the native prefix and the explicit cache.
 *
 * - One explicit cache per prefix: its display name is a hash of what it holds, so the siblings of a
 *   fan-out (released after the first child's response began) find the first one's cache by listing
 *   instead of each creating one; on one daemon, concurrent siblings share one lookup. A prefix below
 *   the model's minimum is sent whole. Caches live {@link GEMINI_CACHE_TTL_SECONDS} and are left to
 *   expire; a child that finds its cache gone makes it again once. With a
 *   {@link GeminiCacheCoordinator} ({@link GeminiLlmClient.coordinate}) one daemon creates (and
 *   renews) the cache while its siblings' daemons wait for it.
 * - Billed once: a creation's tokens as `cache_creation_input_tokens`, a renewal's storage as
 *   `cache_storage_token_seconds`, each on the first response that succeeds after it.
 * - The SDK's retries are off; 429, 5xx, resets and timeouts are retried with backoff, never once
 *   output began (`stream_interrupted`).
 * - The caller's signal aborts at any point; the rejection carries the text so far.
 */
export class GeminiLlmClient implements LlmClient {
  #sdk: Promise<GoogleGenAI> | undefined;
  readonly #sdkOptions: ConstructorParameters<typeof GoogleGenAI>[0];
  readonly #timeoutMs: number;
  readonly #retry: ReturnType<typeof compileRetryPolicy>;
  readonly #logger: Logger;
  /** display name → the cache found or created for it (null: the prefix is too small to cache). */
  readonly #caches = new Map<string, Promise<CacheUse | null>>();
  #coordinator: GeminiCacheCoordinator | undefined;
  readonly #now: () => number;
  /** Caches found gone: a coordinator's record still naming one is not taken (the cache is made again). */
  readonly #gone = new Set<string>();

  constructor(options: GeminiClientOptions = {}) {
    this.#coordinator = options.coordinator;
    this.#now = options.now ?? Date.now;
    this.#timeoutMs = options.timeout ?? 600_000;
    this.#retry = compileRetryPolicy(options.retry);
    this.#logger = options.logger ?? silentLogger;
    const baseUrl = options.baseURL ?? process.env.GOOGLE_GEMINI_BASE_URL;
    this.#sdkOptions = {
      apiKey: options.apiKey ?? process.env.GEMINI_API_KEY ?? "",
      httpOptions: {
        ...(baseUrl === undefined || baseUrl === "" ? {} : { baseUrl }),
        retryOptions: { attempts: 1 },
      },
    };
  }

  // The SDK is loaded at the first request (see genAiSdk).
  #client(): Promise<GoogleGenAI> {
    this.#sdk ??= genAiSdk().then((sdk) => new sdk.GoogleGenAI(this.#sdkOptions));
    return this.#sdk;
  }

  /**
   * Makes and renews the fan-out caches through `coordinator` from now on: one creation per cache
   * across the daemons that share it (siblings launched at once on several daemons), and one
   * renewal per TTL, its storage billed by the one request that renewed.
   */
  coordinate(coordinator: GeminiCacheCoordinator): void {
    this.#coordinator = coordinator;
  }

  /** An {@link LlmClient} for one child: every request carries `options`' prefix and cache. */
  forRun(options: GeminiRequestOptions): LlmClient {
    return { createMessage: (request, callOptions) => this.send(request, options, callOptions) };
  }

  createMessage(request: LlmRequest, options: LlmCallOptions = {}): Promise<LlmResponse> {
    return this.send(request, {}, options);
  }

  /** The generateContent body of `request` (streaming is the URL's, not the body's). */
  body(
    request: LlmRequest,
    options: GeminiRequestOptions = {},
    cachedContent?: string,
  ): Record<string, unknown> {
    return renderGeminiChildRequest(request, sourceOf(request, options), cachedContent);
  }

  /** Sends one request with retries. Rejects with {@link LlmError}. */
  async send(
    request: LlmRequest,
    requestOptions: GeminiRequestOptions,
    options: LlmCallOptions = {},
  ): Promise<LlmResponse> {
    const { signal } = options;
    const emit = observerEmitter(options.onEvent, this.#logger);
    if (signal?.aborted) throw new LlmError("aborted", "The model call was aborted before it started.");
    let remade = false;
    for (let attempt = 1; ; attempt++) {
      let cache: CacheUse | null = null;
      // The creation is billed once, to the first request that succeeds with it: claimed here, before
      // any await, so that concurrent siblings on this daemon do not each report it.
      // A renewal's storage likewise.
      let written = 0;
      let stored = 0;
      let result: Awaited<ReturnType<GeminiLlmClient["attempt"]>>;
      try {
        cache = await this.#cacheOf(request, requestOptions, signal);
        written = cache?.written ?? 0;
        stored = cache?.stored ?? 0;
        if (cache !== null) {
          cache.written = 0;
          cache.stored = 0;
        }
        const body = this.body(request, requestOptions, cache?.name);
        result = await this.attempt(request.model, body, signal, emit, written, stored);
      } catch (thrown) {
        // The cache's lookup or creation failed: classified as a model call's failure would be.
        result = {
          ok: false,
          error: toLlmError(asLlmError(thrown, signal), { aborted: signal?.aborted === true }),
        };
      }
      if (result.ok) return result.response;
      if (cache !== null) {
        cache.written += written;
        cache.stored += stored;
      }
      if (cache?.displayName !== undefined && !remade && isCacheGone(result.error)) {
        // Expired, or deleted by someone else: make it again, once, and say so.
        remade = true;
        this.#gone.add(cache.name);
        this.#caches.delete(cache.displayName);
        this.#logger.warn({ cache: cache.name }, "gemini explicit cache gone; creating it again");
        continue;
      }
      await retryOrThrow(result.error, attempt, undefined, {
        policy: this.#retry,
        model: request.model,
        logger: this.#logger,
        emit,
        signal,
      });
    }
  }

  /** The explicit cache a request names: the parent's, the fan-out's (found or created), or none. */
  async #cacheOf(
    request: LlmRequest,
    options: GeminiRequestOptions,
    signal: AbortSignal | undefined,
  ): Promise<CacheUse | null> {
    const named = options.cachedContent;
    if (named === undefined) return null;
    if (named !== "auto") return { name: named, written: 0, tokens: 0, stored: 0 };
    const prefix = geminiCachedPrefix(request, sourceOf(request, options));
    if (prefix.contents.length === 0) return null;
    const displayName = geminiCacheDisplayName(request.model, prefix);
    let pending = this.#caches.get(displayName);
    if (pending === undefined) {
      pending = this.#findOrCreate(request.model, displayName, prefix, signal);
      this.#caches.set(displayName, pending);
      // A failed lookup is not remembered: the next request tries again.
      pending.catch(() => this.#caches.delete(displayName));
    }
    const use = await pending;
    if (use?.expiresAt !== undefined && this.#needsRenewal(use.expiresAt)) await this.#renew(use, signal);
    return use;
  }

  /** Whether a cache expiring at `expiresAt` is renewed before a request names it. */
  #needsRenewal(expiresAt: number): boolean {
    return expiresAt - this.#now() < GEMINI_CACHE_RENEW_BELOW_SECONDS * 1000;
  }

  /**
   * Extends a cache a child still needs by another TTL (its storage is billed for as long as it
   * lives: a short TTL renewed while the fan-out runs costs what the fan-out needs). Concurrent
   * siblings on this daemon renew once; with a coordinator, one daemon renews while the others go
   * on naming the cache (it still has up to {@link GEMINI_CACHE_RENEW_BELOW_SECONDS} to live).
   * The storage a renewal adds (tokens × the seconds it moves the expiry) is left on `use` for the
   * next request to bill.
   */
  async #renew(use: CacheUse, signal: AbortSignal | undefined): Promise<void> {
    use.renewing ??= this.#renewOnce(use, signal).finally(() => {
      use.renewing = undefined;
    });
    await use.renewing;
  }

  async #renewOnce(use: CacheUse, signal: AbortSignal | undefined): Promise<void> {
    const sdk = await this.#client();
    const abort = signal === undefined ? {} : { abortSignal: signal };
    const extend = async (expiresBefore: number): Promise<GeminiCacheRecord> => {
      const updated = await sdk.caches.update({
        name: use.name,
        config: { ttl: `${GEMINI_CACHE_TTL_SECONDS}s`, ...abort },
      });
      const expiresAt = Date.parse(updated.expireTime ?? "") || this.#now() + GEMINI_CACHE_TTL_SECONDS * 1000;
      const tokens = updated.usageMetadata?.totalTokenCount ?? use.tokens;
      // Only what the renewal added: the storage up to `expiresBefore` was paid already.
      const seconds = Math.max(0, expiresAt - expiresBefore) / 1000;
      use.stored += tokens * seconds;
      this.#logger.info(
        { cache: use.name, ttlSeconds: GEMINI_CACHE_TTL_SECONDS, storedSeconds: seconds, tokens },
        "gemini explicit cache renewed",
      );
      return { name: use.name, expiresAt, tokens };
    };
    const coordinator = this.#coordinator;
    if (coordinator === undefined || use.displayName === undefined) {
      use.expiresAt = (await extend(use.expiresAt ?? this.#now())).expiresAt;
      return;
    }
    const outcome = await coordinator.exclusive(
      use.displayName,
      async () => {
        // The expiry as it is now (another daemon may have renewed since this one last looked):
        // the storage billed is what this renewal adds to it, so each second is billed once.
        const current = await sdk.caches.get({ name: use.name, config: abort });
        const expiresAt = Date.parse(current.expireTime ?? "");
        if (Number.isFinite(expiresAt) && !this.#needsRenewal(expiresAt))
          return { name: use.name, expiresAt, tokens: use.tokens };
        return extend(Number.isFinite(expiresAt) ? expiresAt : this.#now());
      },
      {
        wait: false,
        accept: (record) => record.name === use.name && !this.#needsRenewal(record.expiresAt),
      },
    );
    // Held by another daemon: it renews; the cache lives long enough for this request.
    if (outcome !== undefined) use.expiresAt = outcome.record.expiresAt;
  }

  /**
   * The fan-out's cache, found by listing or created. With a coordinator, one daemon looks (and
   * creates) while its siblings' daemons wait for the cache it names; without, siblings on other
   * daemons may each create one unless warm-first released them after the first child's request.
   */
  async #findOrCreate(
    model: string,
    displayName: string,
    prefix: GeminiCachedPrefix,
    signal: AbortSignal | undefined,
  ): Promise<CacheUse | null> {
    const coordinator = this.#coordinator;
    if (coordinator === undefined) return this.#listOrCreate(model, displayName, prefix, signal);
    let made: CacheUse | null = null;
    const outcome = await coordinator.exclusive(
      displayName,
      async () => {
        made = await this.#listOrCreate(model, displayName, prefix, signal);
        return made === null
          ? { name: null, expiresAt: 0, tokens: 0 }
          : { name: made.name, expiresAt: made.expiresAt ?? 0, tokens: made.tokens };
      },
      {
        wait: true,
        accept: (record) =>
          record.name === null || (!this.#gone.has(record.name) && this.#fresh(record.expiresAt)),
        signal,
      },
    );
    // `wait: true` always ends with a record; this daemon's own work keeps what it created to bill.
    if (outcome === undefined || outcome.ran) return made;
    const { record } = outcome;
    if (record.name === null) return null;
    return {
      name: record.name,
      displayName,
      written: 0,
      tokens: record.tokens,
      stored: 0,
      expiresAt: record.expiresAt,
    };
  }

  /** Whether a cache expiring at `expiresAt` lives long enough to be named (not about to expire on the way). */
  #fresh(expiresAt: number): boolean {
    return expiresAt > this.#now() + 5_000;
  }

  async #listOrCreate(
    model: string,
    displayName: string,
    prefix: GeminiCachedPrefix,
    signal: AbortSignal | undefined,
  ): Promise<CacheUse | null> {
    const modelName = `models/${model.replace(/^models\//, "")}`;
    const pager = await (await this.#client()).caches.list({
      config: { pageSize: 1000, ...(signal === undefined ? {} : { abortSignal: signal }) },
    });
    // A cache about to expire may be gone before the request reaches it: make a fresh one instead.
    for await (const cached of pager) {
      if (
        cached.displayName === displayName &&
        cached.model === modelName &&
        cached.name !== undefined &&
        this.#fresh(Date.parse(cached.expireTime ?? ""))
      )
        return {
          name: cached.name,
          displayName,
          written: 0,
          tokens: cached.usageMetadata?.totalTokenCount ?? 0,
          stored: 0,
          expiresAt: Date.parse(cached.expireTime ?? ""),
        };
    }
    try {
      const created = await (await this.#client()).caches.create({
        model: modelName,
        config: {
          ...(signal === undefined ? {} : { abortSignal: signal }),
          // The prefix as rendered, not as the SDK would rebuild it (see the file's head).
          httpOptions: {
            fetch: sendingBody({
              model: modelName,
              displayName,
              ...prefix,
              ttl: `${GEMINI_CACHE_TTL_SECONDS}s`,
            }),
          },
        },
      });
      if (created.name === undefined) throw new LlmError("unknown", "cachedContents.create returned no name");
      const tokens = created.usageMetadata?.totalTokenCount ?? 0;
      return {
        name: created.name,
        displayName,
        written: tokens,
        tokens,
        stored: 0,
        expiresAt: Date.parse(created.expireTime ?? "") || this.#now() + GEMINI_CACHE_TTL_SECONDS * 1000,
      };
    } catch (thrown) {
      const { ApiError } = await genAiSdk();
      if (thrown instanceof ApiError && thrown.status === 400 && /too small/i.test(thrown.message)) {
        this.#logger.info(
          { model, displayName },
          "prefix below the model's explicit-cache minimum; sent whole",
        );
        return null;
      }
      throw thrown;
    }
  }

  /** One streamed attempt of `body`. */
  async attempt(
    model: string,
    body: Record<string, unknown>,
    signal: AbortSignal | undefined,
    emit: (event: LlmStreamEvent) => void,
    written: number,
    stored = 0,
  ): Promise<{ ok: true; response: LlmResponse } | { ok: false; error: LlmError }> {
    const control = startAttempt(signal, this.#timeoutMs);
    const startedAt = performance.now();
    let ttftMs: number | undefined;
    let text = "";
    let outputBegan = false;
    try {
      control.arm();
      const sent = sendingBodyKeepingReply(body);
      const stream = await (await this.#client()).models.generateContentStream({
        model,
        // What the SDK would send in place of `body` (see the file's head); it requires contents.
        contents: [{ role: "user", parts: [{ text: "" }] }],
        config: {
          abortSignal: control.controller.signal,
          httpOptions: { fetch: sent.fetch },
        },
      });
      const parts: GeminiPart[] = [];
      let finish: string | undefined;
      let usage: GeminiUsage | undefined;
      let id = "";
      let modelVersion = model;
      for await (const chunk of stream as AsyncGenerator<GenerateContentResponse>) {
        control.arm();
        if (ttftMs === undefined) {
          ttftMs = performance.now() - startedAt;
          emit({ type: "response_started", ttftMs, requestId: chunk.responseId });
        }
        if (chunk.responseId) id = chunk.responseId;
        if (chunk.modelVersion) modelVersion = chunk.modelVersion;
        if (chunk.usageMetadata) usage = chunk.usageMetadata as GeminiUsage;
        const candidate = chunk.candidates?.[0];
        for (const part of (candidate?.content?.parts ?? []) as GeminiPart[]) {
          outputBegan = true;
          if (typeof part.text === "string" && part.thought !== true) {
            text += part.text;
            emit({ type: "text_delta", text: part.text });
          }
          appendPart(parts, part);
        }
        if (candidate?.finishReason) finish = candidate.finishReason;
      }
      if (finish === undefined)
        throw new LlmError("connection", "The response stream ended without a finishReason.", {
          retryable: true,
        });
      restoreFunctionCallArgs(parts, await sent.reply());
      const message = geminiModelToAssistant({ parts });
      const calls = message.content.some((block) => block.type === "tool_use");
      return {
        ok: true,
        response: {
          id,
          model: modelVersion,
          message,
          stop_reason:
            finish === "STOP" && calls ? "tool_use" : (STOP_REASONS[finish] ?? finish.toLowerCase()),
          usage: usageFromGemini(usage, written, stored),
          ttftMs: ttftMs ?? 0,
          durationMs: performance.now() - startedAt,
        },
      };
    } catch (thrown) {
      control.controller.abort();
      const error = toLlmError(asLlmError(thrown, signal), {
        aborted: signal?.aborted === true,
        timedOut: control.timedOut(),
        outputBegan,
        partialText: outputBegan ? text : undefined,
      });
      return { ok: false, error };
    } finally {
      control.close();
    }
  }
}

/** Where a request's prefix comes from: the options' native parent and count, else none. */
function sourceOf(request: LlmRequest, options: GeminiRequestOptions): GeminiPrefixSource {
  return { native: options.native, count: options.count ?? request.messages.length };
}

/**
 * Adds a streamed part to the reply: a text chunk joins the text before it (the API streams one
 * text part in pieces) unless either is a thought or carries a signature, which stay parts of their own.
 */
function appendPart(parts: GeminiPart[], part: GeminiPart): void {
  const last = parts[parts.length - 1];
  const plain = (p: GeminiPart | undefined) =>
    p !== undefined &&
    typeof p.text === "string" &&
    p.thought === undefined &&
    p.thoughtSignature === undefined;
  if (plain(last) && plain(part) && Object.keys(part).length === 1) last!.text = `${last!.text}${part.text}`;
  else parts.push({ ...part });
}

/** A cache the request named is gone (expired or deleted): the API answers 403 or 404 naming it. */
function isCacheGone(error: LlmError): boolean {
  return (error.status === 403 || error.status === 404) && /cachedcontent/i.test(error.message);
}

/** An SDK error as an {@link LlmError} with the code of its status (the rest is classified by `toLlmError`). */
function asLlmError(thrown: unknown, signal: AbortSignal | undefined): unknown {
  if (thrown instanceof LlmError) return thrown;
  if (signal?.aborted) return new LlmError("aborted", "The model call was aborted.", { cause: thrown });
  if (loadedGenAi !== undefined && thrown instanceof loadedGenAi.ApiError)
    return new LlmError(errorCodeForStatus(thrown.status), thrown.message, {
      status: thrown.status,
      cause: thrown,
    });
  return thrown;
}
