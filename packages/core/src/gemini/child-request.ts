// A child's requests on Gemini. Its prefix is its parent's contents through the parent's last item
// (the native request's own bytes when the parent spoke Gemini itself), with the parent's
// systemInstruction and tools. Either the whole prefix is sent (implicit caching may serve it) or it
// lives in one explicit `cachedContents` resource that the request names instead: then the request
// carries only the contents after the prefix, and never systemInstruction, tools or toolConfig (the
// API refuses a request that names a cache and sets them).
import type { ForkPrefix, NativePrefix } from "@forkd/protocol";
import { InvalidPrefixError } from "../errors.js";
import type { LlmRequest } from "../llm-client.js";
import {
  GEMINI_SETTINGS_FIELDS,
  type GeminiContent,
  geminiModelToAssistant,
  geminiRequestToCanonical,
  renderGeminiContents,
  renderGeminiRequest,
} from "./format.js";

/** Where a child's prefix comes from: a native Gemini parent's bytes, else the canonical conversation. */
export interface GeminiPrefixSource {
  /** The native parent, when it spoke Gemini itself. */
  native?: NativePrefix | undefined;
  /**
   * How many of the child's canonical messages are its parent's, unchanged in every sibling (see
   * {@link geminiSharedMessageCount}); for a native parent, as many of its contents and reply.
   */
  count: number;
}

/**
 * How many leading messages of a child's conversation are the parent's and the same in every
 * sibling: the parent's messages and its reply; without a reply, all but a last user message, which
 * the child's placeholders and directive join (so it differs between siblings).
 */
export function geminiSharedMessageCount(prefix: Pick<ForkPrefix, "params" | "reply">): number {
  const messages = prefix.params.messages;
  const last = messages[messages.length - 1];
  if (prefix.reply !== undefined && prefix.reply.content.length > 0)
    return last?.role === "assistant" ? messages.length : messages.length + 1;
  return last?.role === "user" ? messages.length - 1 : messages.length;
}

/** What an explicit cache of the prefix holds: the prefix contents and the model's settings. */
export interface GeminiCachedPrefix {
  contents: GeminiContent[];
  systemInstruction?: unknown;
  tools?: unknown;
  toolConfig?: unknown;
}

/**
 * The fork prefix of a native Gemini parent: canonical params and reply derived from its request
 * (the model from the URL it was sent to) and the candidate's content it got back.
 * @throws {@link InvalidPrefixError} without a model, or for a request the core cannot read.
 */
export function geminiForkPrefixFromNative(native: NativePrefix): ForkPrefix {
  if (native.model === undefined)
    throw new InvalidPrefixError("a Gemini prefix names its model (the request's URL did)", {
      path: ["native", "model"],
    });
  if (native.reply.length > 1)
    throw new InvalidPrefixError("a Gemini reply is one model content", { path: ["native", "reply"] });
  const params = geminiRequestToCanonical(native.request, native.model.replace(/^models\//, ""));
  const turn = Array.isArray(native.request.contents) ? native.request.contents.length : 0;
  const first = native.reply[0] as GeminiContent | undefined;
  const reply = first === undefined ? undefined : geminiModelToAssistant(first, turn);
  return { params, ...(reply === undefined ? {} : { reply }), native };
}

/** The full body of a request: the prefix, then the child's own contents after it. */
function fullBody(request: LlmRequest, source: GeminiPrefixSource): Record<string, unknown> {
  const { native } = source;
  if (native === undefined) return renderGeminiRequest(request);
  const body: Record<string, unknown> = { ...native.request };
  // The parent's contents and reply map one to one onto the canonical messages they were read as:
  // the shared ones go as the parent sent them, the rest as the child has them.
  const items = [...(native.request.contents as unknown[]), ...native.reply];
  body.contents = [...items.slice(0, source.count), ...renderGeminiContents(request.messages, source.count)];
  return body;
}

/**
 * The prefix an explicit cache holds: the prefix's contents (the parent's, through its last item)
 * and its systemInstruction, tools and toolConfig, each as the full request has it.
 */
export function geminiCachedPrefix(request: LlmRequest, source: GeminiPrefixSource): GeminiCachedPrefix {
  const body = fullBody(request, source);
  const out: GeminiCachedPrefix = { contents: (body.contents as GeminiContent[]).slice(0, source.count) };
  for (const field of GEMINI_SETTINGS_FIELDS) if (body[field] !== undefined) out[field] = body[field];
  return out;
}

/**
 * The generateContent body of a child's request. Without `cachedContent`: the whole prefix, then the
 * child's contents. With it: the same body less the prefix's contents and the model's settings, and
 * `cachedContent` naming the cache. A native parent's other fields (generationConfig, safety
 * settings…) stay as it sent them; a canonical request's are rendered.
 */
export function renderGeminiChildRequest(
  request: LlmRequest,
  source: GeminiPrefixSource,
  cachedContent?: string,
): Record<string, unknown> {
  const body = fullBody(request, source);
  if (cachedContent === undefined) return body;
  for (const field of GEMINI_SETTINGS_FIELDS) delete body[field];
  body.contents = (body.contents as GeminiContent[]).slice(source.count);
  body.cachedContent = cachedContent;
  return body;
}
