// A parent that spoke OpenAI's API itself (qwen-code, the Codex CLI): its request and reply are the
// child's first bytes. The core reasons about the same conversation in canonical form; what goes on
// the wire is the native request with the child's own messages rendered after it.
import type { ForkPrefix, MessageParam, NativePrefix } from "@forkd/protocol";
import { InvalidPrefixError } from "../errors.js";
import { geminiForkPrefixFromNative } from "../gemini/child-request.js";
import type { LlmRequest } from "../llm-client.js";
import { chatAssistantToCanonical, chatRequestToCanonical, renderChatMessages } from "./chat-format.js";
import { PROMPT_CACHE_BREAKPOINT, takesCacheBreakpoints } from "./content.js";
import {
  renderResponsesItems,
  responsesItemsToAssistant,
  responsesRequestToCanonical,
  stringInputItem,
  withoutStoredReferences,
} from "./responses-format.js";

/** The fields of a Chat Completions assistant message the API accepts back in a request. */
const CHAT_REPLY_FIELDS = ["content", "refusal", "tool_calls"] as const;

/**
 * A Chat Completions reply as the API accepts it back: `{role, content, refusal?, tool_calls?}`. What
 * it returned but does not take as input (`annotations`, `audio` metadata…) never enters a request.
 */
export function chatReplyForRequest(message: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { role: "assistant" };
  for (const field of CHAT_REPLY_FIELDS) if (message[field] !== undefined) out[field] = message[field];
  return out;
}

/**
 * The fork prefix of a native parent: its canonical params and reply (what the recursion guard, the
 * tool filter and the placeholders read) derived from the native request and reply, which are kept.
 * A daemon derives these itself rather than trusting canonical params sent beside a native prefix.
 * @throws {@link InvalidPrefixError} for a request the core cannot read.
 */
export function forkPrefixFromNative(native: NativePrefix): ForkPrefix {
  if (native.api === "gemini") return geminiForkPrefixFromNative(native);
  if (native.api === "openai-chat") {
    if (native.reply.length > 1)
      throw new InvalidPrefixError("a Chat Completions reply is one assistant message", {
        path: ["native", "reply"],
      });
    const params = chatRequestToCanonical(native.request);
    const reply = native.reply[0] === undefined ? undefined : chatAssistantToCanonical(native.reply[0]);
    return { params, ...(reply === undefined ? {} : { reply }), native };
  }
  const params = responsesRequestToCanonical(native.request);
  return {
    params,
    ...(native.reply.length > 0 ? { reply: responsesItemsToAssistant(native.reply) } : {}),
    native,
  };
}

/**
 * How many messages at the head of a child's canonical conversation the native request and reply
 * stand for: the parent's messages, plus the reply unless it continued a prefilled assistant turn.
 */
export function nativeMessageCount(prefix: Pick<ForkPrefix, "params" | "reply">): number {
  const messages: readonly MessageParam[] = prefix.params.messages;
  const hasReply = prefix.reply !== undefined && prefix.reply.content.length > 0;
  if (!hasReply) return messages.length;
  return messages[messages.length - 1]?.role === "assistant" ? messages.length : messages.length + 1;
}

/**
 * The body of a child's request on the native parent's API: the parent's request with every field
 * as it sent it, its messages (or input items) followed by its reply and then the child's own
 * messages rendered from `request` after `count` (see {@link nativeMessageCount}). The model is the
 * request's (an override changes it); the output limit stays the parent's.
 */
export function renderNativeChildRequest(
  native: NativePrefix,
  request: Pick<LlmRequest, "model" | "messages">,
  count: number,
): Record<string, unknown> {
  const body: Record<string, unknown> = { ...native.request };
  // The same key in the same place: a model override changes only its value.
  body.model = request.model;
  // With no reply, the child's first blocks joined the parent's last user message in canonical form:
  // on the wire they follow the parent's message, as one of their own.
  const joined = joinedToLastParentMessage(native, request.messages, count);
  // GPT-5.6 on: the parent's last input block is marked, where the parent's own request ended and
  // wrote its implicit breakpoint (see markParentBoundary); the child's own messages carry the fork's
  // breakpoint on the last block siblings share.
  const breakpoints = takesCacheBreakpoints(request.model);
  if (native.api === "openai-chat") {
    const messages = native.request.messages as unknown[];
    body.messages = [
      ...(breakpoints ? markParentBoundary(messages) : messages),
      ...native.reply.map(chatReplyForRequest),
      ...(joined ? renderChatMessages([joined], 0, breakpoints) : []),
      ...renderChatMessages(request.messages, count, breakpoints),
    ];
  } else {
    const input = native.request.input;
    const items = typeof input === "string" ? [stringInputItem(input)] : (input as unknown[]);
    const added = [
      ...native.reply,
      ...(joined ? renderResponsesItems([joined], 0, breakpoints) : []),
      ...renderResponsesItems(request.messages, count, breakpoints),
    ];
    // A parent that stores nothing (the Codex CLI) asks for its reasoning encrypted and sends it
    // back so; what the reply or the child's own turns hold that refers to stored items goes.
    body.input = [
      ...(breakpoints ? markParentBoundary(items) : items),
      ...(native.request.store === false ? withoutStoredReferences(added) : added),
    ];
  }
  return body;
}

/** Content blocks that take a breakpoint (input blocks, as the SDK's types give them). */
const MARKABLE_BLOCKS = new Set([
  "input_text",
  "input_image",
  "input_file",
  "text",
  "image_url",
  "file",
  "input_audio",
]);

/**
 * A native parent's request items with a breakpoint on the last block of the last one: the end of
 * the parent's own request, where OpenAI put the implicit breakpoint it wrote (at its latest user or
 * tool message), so the first child reads what the parent wrote; with no reply it is also the last
 * thing siblings share. That block (of a message's content, or of a tool output's parts) gains
 * `prompt_cache_breakpoint`, and nothing else changes. An item whose content is a string, whose last
 * block is not an input block, or that carries a breakpoint of its own already is left as sent (a
 * parent's own breakpoints pass byte for byte).
 */
export function markParentBoundary(items: readonly unknown[]): unknown[] {
  const last = items[items.length - 1] as Record<string, unknown> | undefined;
  const field = Array.isArray(last?.content) ? "content" : "output";
  const content = last?.[field];
  if (!Array.isArray(content)) return [...items];
  // Undefined for an empty list: not an object, left as sent.
  const block = content[content.length - 1] as Record<string, unknown> | null | undefined;
  if (block === null || typeof block !== "object" || !MARKABLE_BLOCKS.has(String(block.type)))
    return [...items];
  if (content.some((b) => (b as Record<string, unknown> | null)?.prompt_cache_breakpoint !== undefined))
    return [...items];
  const marked = { ...block, prompt_cache_breakpoint: PROMPT_CACHE_BREAKPOINT };
  return [...items.slice(0, -1), { ...last, [field]: [...content.slice(0, -1), marked] }];
}

/**
 * The blocks a child added to the parent's last message (the parent's turn has no reply, so the
 * child's directive joined its last user message in canonical form), as a user message of their own;
 * none when the turn has a reply or nothing was added.
 */
function joinedToLastParentMessage(
  native: NativePrefix,
  messages: readonly MessageParam[],
  count: number,
): MessageParam | undefined {
  if (native.reply.length > 0) return undefined;
  const parent =
    native.api === "openai-chat"
      ? chatRequestToCanonical(native.request)
      : responsesRequestToCanonical(native.request);
  const parentBlocks = blocksOf(parent.messages[count - 1]!).length;
  const added = blocksOf(messages[count - 1]!).slice(parentBlocks);
  return added.length === 0 ? undefined : { role: "user", content: added as MessageParam["content"] };
}

/** A message's content blocks; a string is one text block. */
function blocksOf(message: MessageParam): readonly unknown[] {
  return typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
}
