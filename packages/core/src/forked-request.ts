// Builds a child's request from the parent's prefix: the parent's messages and reply kept bit for
// bit, every tool call answered with the same placeholder, the breakpoint on the last shared block,
// and the child's directive block last: the only bytes that differ between siblings.
import type {
  AssistantMessage,
  ContentBlock,
  ForkPrefix,
  MessageParam,
  TextBlock,
  ToolResultBlock,
} from "@forkd/protocol";
import { lastBreakpointCandidate, type MessageBlockLocation, placeBreakpoint } from "./breakpoints.js";
import { replyAsMessage } from "./cache-safe-params.js";
import { type DirectiveBlockOptions, FORK_PLACEHOLDER_RESULT, renderDirectiveBlock } from "./directive.js";
import type { LlmRequest } from "./llm-client.js";
import { renderSystemReminder } from "./system-reminder.js";

/** `max_tokens` of a child whose parent's request had none and no override is given. */
export const DEFAULT_MAX_TOKENS = 8192;

/**
 * The model turn put between the placeholder results and the directive under strict alternation. It is
 * constant, so it is shared by every sibling and carries the breakpoint.
 */
export const FORK_ACKNOWLEDGEMENT = "Acknowledged: the forks are running. Waiting for my own directive.";

/**
 * Which history the child was built from.
 * - `tool_use_reply`: the parent's reply called tools; each call got a placeholder result.
 * - `text_reply`: the reply called no tool (a programmatic fork); the directive follows it.
 * - `user_tail`: no reply, the history ends on a user turn; the directive was added to that turn.
 * - `assistant_tail`: no reply, the history ends on an assistant turn, answered like a reply.
 * - `empty`: nothing to inherit; the directive is the first message.
 */
export type ForkShape = "tool_use_reply" | "text_reply" | "user_tail" | "assistant_tail" | "empty";

/** Options of {@link buildForkedRequest}. */
export interface BuildForkedRequestOptions extends DirectiveBlockOptions {
  /**
   * For providers that need strict user/model alternation with tool results in a turn of their own:
   * `user(results) → assistant(acknowledgement) → user(directive)` instead of
   * `user(results, directive)`. Both are valid Anthropic requests.
   * @default false
   */
  strictAlternation?: boolean | undefined;
  /** Replaces the parent's model. Changes the cache key: the child misses the parent's cache. */
  model?: string | undefined;
  /** Replaces the parent's `max_tokens`. Does not change the cache key. @default the parent's, else {@link DEFAULT_MAX_TOKENS} */
  maxTokens?: number | undefined;
  /** TTL of the fork's breakpoint. @default "5m" */
  breakpointTtl?: "5m" | "1h" | undefined;
  /** A `critical_system_reminder`, appended after the directive: after the cache boundary. */
  systemReminder?: string | undefined;
  /** The placeholder `tool_result` text. @default FORK_PLACEHOLDER_RESULT */
  placeholderText?: string | undefined;
}

/** A child's first request and where its parts are. */
export interface ForkedRequest {
  request: LlmRequest;
  shape: ForkShape;
  /** The child's directive block: the first block that differs between siblings. */
  directive: MessageBlockLocation;
  /** The last shared block, which carries the fork's breakpoint; `null` when no block could. */
  breakpoint: MessageBlockLocation | null;
  /** Messages of the parent's request, unchanged at the head of the child's (the last one may have gained blocks). */
  inheritedMessageCount: number;
}

function toBlocks(content: MessageParam["content"]): ContentBlock[] {
  if (typeof content !== "string") return content;
  return content === "" ? [] : [{ type: "text", text: content }];
}

/** The placeholder `tool_result` for every `tool_use` of `reply`, in order. */
export function placeholderToolResults(
  reply: Pick<AssistantMessage, "content">,
  text: string = FORK_PLACEHOLDER_RESULT,
): ToolResultBlock[] {
  return reply.content
    .filter((block) => block.type === "tool_use")
    .map((block) => ({ type: "tool_result", tool_use_id: String(block.id), content: text }));
}

/**
 * Builds the child's first request from the parent's prefix.
 *
 * With a reply that called tools, the result is
 * `[…parent messages, reply, user(placeholder×N, directive)]`; without tool calls
 * `[…, reply, user(directive)]`; with no reply and a history ending on a user turn the directive is
 * appended to that turn as its last block. The breakpoint goes on the last shared block (see
 * `placeBreakpoint` for how the parent's own breakpoints are kept). The parent's objects are never
 * written into; everything the child changes is a copy.
 *
 * @throws {@link InvalidForkParamsError} for an invalid run id or an empty directive.
 */
export function buildForkedRequest(prefix: ForkPrefix, options: BuildForkedRequestOptions): ForkedRequest {
  const { params } = prefix;
  const placeholder = options.placeholderText ?? FORK_PLACEHOLDER_RESULT;
  const directiveBlock = renderDirectiveBlock(options);
  const tail: ContentBlock[] = [directiveBlock];
  if (options.systemReminder !== undefined) tail.push(renderSystemReminder(options.systemReminder));

  const messages: MessageParam[] = [...params.messages];
  const inheritedMessageCount = messages.length;
  const reply = prefix.reply !== undefined && prefix.reply.content.length > 0 ? prefix.reply : undefined;
  const last = messages[messages.length - 1];
  let shape: ForkShape;
  let breakpoint: MessageBlockLocation | null = null;

  if (reply !== undefined && last?.role === "assistant") {
    // A prefilled turn: the reply continues it, so both are one assistant turn.
    messages[messages.length - 1] = { ...last, content: [...toBlocks(last.content), ...reply.content] };
  } else if (reply !== undefined) {
    // Only role and content: a spec from another client may carry the API's whole reply object.
    messages.push(replyAsMessage(reply));
  }
  const answered = messages[messages.length - 1];

  if (answered === undefined) {
    shape = "empty";
    messages.push({ role: "user", content: tail });
  } else if (answered.role === "system") {
    // A trailing system message (mid-conversation-system beta) stays as sent; the directive is a
    // user turn of its own after it.
    shape = "user_tail";
    messages.push({ role: "user", content: tail });
  } else if (answered.role === "user") {
    shape = "user_tail";
    const kept = toBlocks(answered.content);
    const candidate = lastBreakpointCandidate(kept);
    if (candidate !== -1)
      breakpoint = { area: "messages", messageIndex: messages.length - 1, blockIndex: candidate };
    messages[messages.length - 1] = { ...answered, content: [...kept, ...tail] };
  } else {
    const assistantIndex = messages.length - 1;
    const results = placeholderToolResults({ content: toBlocks(answered.content) }, placeholder);
    shape = results.length > 0 ? "tool_use_reply" : reply !== undefined ? "text_reply" : "assistant_tail";
    if (results.length === 0) {
      const blocks = toBlocks(answered.content);
      const candidate = lastBreakpointCandidate(blocks);
      if (candidate !== -1) {
        // A string cannot carry a marker; the same text as one text block can.
        if (typeof answered.content === "string") messages[assistantIndex] = { ...answered, content: blocks };
        breakpoint = { area: "messages", messageIndex: assistantIndex, blockIndex: candidate };
      }
      messages.push({ role: "user", content: tail });
    } else if (options.strictAlternation === true) {
      const acknowledgement: TextBlock = { type: "text", text: FORK_ACKNOWLEDGEMENT };
      messages.push({ role: "user", content: results });
      messages.push({ role: "assistant", content: [acknowledgement] });
      breakpoint = { area: "messages", messageIndex: messages.length - 1, blockIndex: 0 };
      messages.push({ role: "user", content: tail });
    } else {
      messages.push({ role: "user", content: [...results, ...tail] });
      breakpoint = { area: "messages", messageIndex: messages.length - 1, blockIndex: results.length - 1 };
    }
  }

  const request = {
    ...params,
    model: options.model ?? params.model,
    max_tokens: options.maxTokens ?? params.max_tokens ?? DEFAULT_MAX_TOKENS,
    messages,
    // Not a body field: the LLM client sends it as the `anthropic-beta` header.
    ...(prefix.betas === undefined || prefix.betas.length === 0 ? {} : { betas: prefix.betas }),
  } as LlmRequest;
  // `diagnostics` names one earlier response, so it is per request, not cache-safe: copied verbatim it
  // would compare the child with the parent's previous turn. A parent that opted in (its request has
  // the object) has its own request's fingerprint stored under its reply's id: the child compares
  // with that, so the provider says where the child left the parent's prefix.
  if (Object.hasOwn(params, "diagnostics")) {
    const replyId = (prefix.reply as { id?: unknown } | undefined)?.id;
    (request as Record<string, unknown>).diagnostics = {
      previous_message_id: typeof replyId === "string" ? replyId : null,
    };
  }
  if (breakpoint !== null) {
    placeBreakpoint(request, breakpoint, { ttl: options.breakpointTtl });
  }
  const lastIndex = request.messages.length - 1;
  const lastContent = request.messages[lastIndex]!.content as unknown[];
  return {
    request,
    shape,
    directive: { area: "messages", messageIndex: lastIndex, blockIndex: lastContent.length - tail.length },
    breakpoint,
    inheritedMessageCount,
  };
}
