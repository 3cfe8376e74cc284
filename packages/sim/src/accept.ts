// What the OpenAI and Gemini routes do once a request is accepted and its cache plan made: the
// key's cache scope, the input usage the response will be charged, and the `accepted` event.
import { hiResNow } from "./clock.js";
import type { Exchange } from "./exchange.js";
import type { MessagesRouteContext } from "./routes/messages.js";

/** The cache scope of a request: the server's scoping of its key, else the key itself. */
export function cacheScopeOf(context: MessagesRouteContext, ex: Exchange, apiKey: string): string {
  return context.cacheScope === undefined
    ? (ex.entry.keyId as string)
    : `scope:${context.cacheScope(apiKey)}`;
}

/**
 * Marks the exchange accepted: its input usage (`promptTokens`, of which `cachedTokens` read from
 * the cache; no writes, which these providers do not charge apart) charged at first byte with
 * `outputTokens`, and the `accepted` event.
 */
export function acceptWithUsage(
  context: MessagesRouteContext,
  ex: Exchange,
  charge: {
    promptTokens: number;
    cachedTokens: number;
    /** Tokens written to the cache (OpenAI's GPT-5.6 family on). @default 0 */
    writtenTokens?: number;
    outputTokens: number;
    stream: boolean;
  },
): void {
  const at = hiResNow();
  ex.entry.acceptedAt = at;
  const written = charge.writtenTokens ?? 0;
  const usage = {
    input_tokens: charge.promptTokens - charge.cachedTokens - written,
    cache_creation_input_tokens: written,
    cache_read_input_tokens: charge.cachedTokens,
    cache_creation: { ephemeral_5m_input_tokens: written, ephemeral_1h_input_tokens: 0 },
    service_tier: "standard" as const,
  };
  ex.inputUsage = usage;
  context.accepted(() => ({ seq: ex.seq, id: ex.id, at, stream: charge.stream, usage }));
  ex.outputTokens = charge.outputTokens;
}
