// Which model client runs a child: the spec names the provider API (Anthropic's Messages when it says
// nothing; a native parent's own API); an OpenAI child is bound to its prompt cache key and to its
// native parent's request, so every request it sends starts with the bytes its siblings' do; a Gemini
// child to its native parent and to the fan-out's explicit cache of the prefix.
import {
  derivedPromptCacheKey,
  geminiSharedMessageCount,
  type LlmClient,
  nativeMessageCount,
} from "@forkd/core";
import type { GeminiLlmClient, OpenAiApi, OpenAiLlmClient } from "@forkd/llm";
import type { ForkPrefix, ForkSpec, LlmApi } from "@forkd/protocol";
import { DaemonError } from "./errors.js";

/** The OpenAI clients of a daemon, made on first use. */
export type OpenAiClients = (api: OpenAiApi) => OpenAiLlmClient;

/** The provider API of a run: the spec's, else its native parent's, else Anthropic's. */
export function runApi(spec: ForkSpec, prefix: ForkPrefix | null): LlmApi {
  const native = prefix?.native?.api;
  const api = spec.provider?.api ?? native ?? "anthropic";
  if (native !== undefined && api !== native)
    throw new DaemonError(
      "provider_unavailable",
      `a prefix sent to ${native} cannot run on ${api}: its bytes are ${native}'s`,
    );
  return api;
}

/**
 * The client one run sends its requests with.
 * - `anthropic`: the daemon's Messages client.
 * - `openai-chat` / `openai-responses`: the OpenAI client, with `prompt_cache_key` = the spec's (a
 *   fan-out's shard key), else for a native parent the key its own request carried (kept in the
 *   bytes), else one derived from the prefix's cache key hash, shared by every sibling; and the spec's
 *   `prompt_cache_retention`, else a native parent's own (in its bytes).
 * - `gemini`: the Gemini client, naming the spec's `cached_content`, else (for a parent's prefix,
 *   not the daemon's default) the fan-out's explicit cache, found or created once.
 * @throws {@link DaemonError} `provider_unavailable` when the daemon has no client for the API.
 */
export function runLlmClient(options: {
  api: LlmApi;
  anthropic: LlmClient;
  openai: OpenAiClients | undefined;
  gemini?: GeminiLlmClient | undefined;
  /** Whether the prefix is a parent's (shared by siblings), not the daemon's default request. */
  cacheShared?: boolean;
  spec: ForkSpec;
  prefix: ForkPrefix;
  prefixHash: string | null;
}): LlmClient {
  const { api, spec, prefix } = options;
  if (api === "anthropic") return options.anthropic;
  const native =
    prefix.native === undefined ? undefined : { prefix: prefix.native, count: nativeMessageCount(prefix) };
  if (api === "gemini") {
    if (options.gemini === undefined)
      throw new DaemonError(
        "provider_unavailable",
        "this daemon has no gemini client (set GEMINI_API_KEY, or llm.geminiApiKey)",
      );
    const cachedContent =
      spec.provider?.cached_content ?? (options.cacheShared === false ? undefined : "auto");
    return options.gemini.forRun({
      native: native?.prefix,
      count: geminiSharedMessageCount(prefix),
      cachedContent,
    });
  }
  if (options.openai === undefined)
    throw new DaemonError(
      "provider_unavailable",
      `this daemon has no ${api} client (set OPENAI_API_KEY, or llm.openaiApiKey)`,
    );
  const client = options.openai(api === "openai-chat" ? "chat" : "responses");
  const promptCacheKey =
    spec.provider?.prompt_cache_key ??
    (native !== undefined || options.prefixHash === null
      ? undefined
      : derivedPromptCacheKey(options.prefixHash));
  return client.forRun({
    promptCacheKey,
    promptCacheRetention: spec.provider?.prompt_cache_retention,
    native,
    // A rendered parent's request ended at its last message: marked on GPT-5.6 on (see the client).
    parentMessages:
      native === undefined && options.cacheShared !== false ? prefix.params.messages.length : undefined,
  });
}
