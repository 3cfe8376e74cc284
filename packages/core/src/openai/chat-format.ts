// OpenAI Chat Completions ⇄ forkd's canonical (Messages-shaped) conversation. Rendering is a map over
// messages, so two canonical conversations that share their first k messages render to bodies that
// share their first bytes: a child shares its parent's prefix on OpenAI as it does on Anthropic.
import type { AssistantMessage, CacheSafeParams, ContentBlock, MessageParam } from "@forkd/protocol";
import { InvalidPrefixError } from "../errors.js";
import type { LlmRequest } from "../llm-client.js";
import {
  blocksOf,
  markedPart,
  OPENAI_ITEM_BLOCK,
  systemText,
  takesCacheBreakpoints,
  toolArguments,
  toolOutputContent,
  toolUseBlock,
  unsupportedBlock,
} from "./content.js";

/** A Chat Completions message, as sent. */
export type ChatMessage = Record<string, unknown> & { role: string };

/** The sampling and tool fields of a canonical request, in Chat Completions' names. */
function renderSettings(request: LlmRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (request.tools !== undefined && request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: "function",
      function: {
        name: tool.name,
        ...(tool.description === undefined ? {} : { description: tool.description }),
        parameters: tool.input_schema ?? { type: "object", properties: {} },
      },
    }));
  }
  const choice = request.tool_choice;
  if (choice !== undefined) {
    body.tool_choice =
      choice.type === "any"
        ? "required"
        : choice.type === "tool"
          ? { type: "function", function: { name: String(choice.name) } }
          : choice.type;
  }
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.top_p !== undefined) body.top_p = request.top_p;
  if (request.stop_sequences !== undefined) body.stop = request.stop_sequences;
  return body;
}

/**
 * One canonical message as Chat Completions messages (tool results become `tool` messages first).
 * With `breakpoints` (a model that takes them), a user block carrying a breakpoint is marked (its
 * message keeps its parts, and a tool message's content is one text part, so the mark has a block).
 */
export function renderChatMessage(message: MessageParam, breakpoints = false): ChatMessage[] {
  if (message.role === "system") return [{ role: "system", content: systemText(message.content) ?? "" }];
  if (message.role === "assistant") {
    const text: string[] = [];
    const calls: Record<string, unknown>[] = [];
    for (const block of blocksOf(message.content)) {
      if (block.type === "text") text.push(String(block.text));
      else if (block.type === "tool_use")
        calls.push({
          id: String(block.id),
          type: "function",
          function: { name: String(block.name), arguments: toolArguments(block) },
        });
      else if (
        block.type === OPENAI_ITEM_BLOCK ||
        block.type === "thinking" ||
        block.type === "redacted_thinking"
      )
        continue; // Chat Completions takes no reasoning back.
      else unsupportedBlock(block, "assistant message");
    }
    const out: ChatMessage = { role: "assistant", content: text.length > 0 ? text.join("") : null };
    if (calls.length > 0) out.tool_calls = calls;
    return [out];
  }
  if (typeof message.content === "string") return [{ role: "user", content: message.content }];
  const out: ChatMessage[] = [];
  const parts: Record<string, unknown>[] = [];
  for (const block of message.content) {
    if (block.type === "tool_result") {
      out.push({
        role: "tool",
        tool_call_id: String(block.tool_use_id),
        content: toolOutputContent(block, "text", breakpoints),
      });
    } else if (block.type === "text")
      parts.push(markedPart({ type: "text", text: String(block.text) }, block, breakpoints));
    else if (block.type === "image") parts.push(imagePart(block));
    else unsupportedBlock(block, "user message");
  }
  if (parts.length === 1 && parts[0]!.type === "text" && parts[0]!.prompt_cache_breakpoint === undefined)
    out.push({ role: "user", content: parts[0]!.text });
  else if (parts.length > 0) out.push({ role: "user", content: parts });
  return out;
}

function imagePart(block: ContentBlock): Record<string, unknown> {
  const source = block.source as
    | { type?: string; media_type?: string; data?: string; url?: string }
    | undefined;
  if (source?.type === "base64")
    return { type: "image_url", image_url: { url: `data:${source.media_type};base64,${source.data}` } };
  if (source?.type === "url") return { type: "image_url", image_url: { url: source.url } };
  return unsupportedBlock(block, "image source");
}

/**
 * The Chat Completions body of a canonical request: system first, then the messages, then tools and
 * sampling settings; `max_tokens` as `max_completion_tokens`. Breakpoint markers become
 * `prompt_cache_breakpoint` on a model that takes them (GPT-5.6 on) and are dropped before it (OpenAI
 * caches prefixes by itself there). Streaming fields are the client's to add.
 */
export function renderChatRequest(request: LlmRequest): Record<string, unknown> {
  const messages: ChatMessage[] = [];
  const system = systemText(request.system);
  if (system !== undefined) messages.push({ role: "system", content: system });
  const breakpoints = takesCacheBreakpoints(request.model);
  for (const message of request.messages) messages.push(...renderChatMessage(message, breakpoints));
  return {
    model: request.model,
    messages,
    ...renderSettings(request),
    max_completion_tokens: request.max_tokens,
  };
}

/**
 * Renders the messages of a conversation after `from` (the part a child added to its prefix), with
 * their breakpoints marked when `breakpoints` (see {@link renderChatMessage}).
 */
export function renderChatMessages(
  messages: readonly MessageParam[],
  from: number,
  breakpoints = false,
): ChatMessage[] {
  return messages.slice(from).flatMap((message) => renderChatMessage(message, breakpoints));
}

function contentText(content: unknown, where: string): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content
      .map((part: { type?: unknown; text?: unknown }) => {
        if (typeof part.text === "string") return part.text;
        throw new InvalidPrefixError(`a ${String(part.type)} part is not supported in ${where}`);
      })
      .join("");
  throw new InvalidPrefixError(`${where}: content must be a string or parts`);
}

/** A Chat Completions assistant message as a canonical one (text, then tool calls). */
export function chatAssistantToCanonical(message: Record<string, unknown>): AssistantMessage {
  const content: ContentBlock[] = [];
  const text = contentText(message.content, "an assistant message");
  if (text !== "") content.push({ type: "text", text });
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as Record<string, unknown>[]) : [];
  for (const call of calls) {
    const fn = call.function as { name?: unknown; arguments?: unknown } | undefined;
    if (typeof call.id !== "string" || typeof fn?.name !== "string")
      throw new InvalidPrefixError("a tool call needs an id and a function name", { path: ["tool_calls"] });
    content.push(toolUseBlock(call.id, fn.name, typeof fn.arguments === "string" ? fn.arguments : "{}"));
  }
  return { role: "assistant", content };
}

/**
 * A Chat Completions request as canonical params: system and developer messages before the first
 * other message become the system prompt, runs of `tool` messages one user turn of `tool_result`
 * blocks (a user message right after them joins that turn), function tools `{name, description,
 * input_schema}`. What the core reasons about (tools, tool calls, directives) is kept; the bytes sent
 * come from the native request itself.
 * @throws {@link InvalidPrefixError} for a message the core cannot read.
 */
export function chatRequestToCanonical(body: Record<string, unknown>): CacheSafeParams {
  if (typeof body.model !== "string") throw new InvalidPrefixError("model is required", { path: ["model"] });
  const native = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : undefined;
  if (native === undefined) throw new InvalidPrefixError("messages must be an array", { path: ["messages"] });
  const system: string[] = [];
  const messages: MessageParam[] = [];
  let i = 0;
  for (; i < native.length && (native[i]!.role === "system" || native[i]!.role === "developer"); i++)
    system.push(contentText(native[i]!.content, `messages[${i}]`));
  for (; i < native.length; i++) {
    const message = native[i]!;
    const last = messages[messages.length - 1];
    switch (message.role) {
      case "system":
      case "developer":
        messages.push({ role: "system", content: contentText(message.content, `messages[${i}]`) });
        break;
      case "assistant":
        messages.push(chatAssistantToCanonical(message));
        break;
      case "tool": {
        const block = {
          type: "tool_result",
          tool_use_id: String(message.tool_call_id),
          content: contentText(message.content, `messages[${i}]`),
        };
        if (
          last?.role === "user" &&
          Array.isArray(last.content) &&
          last.content.every((b) => b.type === "tool_result")
        )
          last.content.push(block);
        else messages.push({ role: "user", content: [block] });
        break;
      }
      case "user": {
        const text = { type: "text", text: contentText(message.content, `messages[${i}]`) };
        if (last?.role === "user" && Array.isArray(last.content)) last.content.push(text);
        else messages.push({ role: "user", content: [text] });
        break;
      }
      default:
        throw new InvalidPrefixError(`messages[${i}]: unknown role ${String(message.role)}`, {
          path: ["messages", i],
        });
    }
  }
  const tools = Array.isArray(body.tools)
    ? (body.tools as { type?: unknown; function?: Record<string, unknown> }[]).map((tool, index) => {
        if (tool.type !== "function" || typeof tool.function?.name !== "string")
          throw new InvalidPrefixError(`tools[${index}] must be a function tool with a name`, {
            path: ["tools", index],
          });
        return {
          name: tool.function.name,
          ...(tool.function.description === undefined ? {} : { description: tool.function.description }),
          input_schema: tool.function.parameters ?? { type: "object", properties: {} },
        };
      })
    : undefined;
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  return {
    model: body.model,
    ...(typeof maxTokens === "number" ? { max_tokens: maxTokens } : {}),
    ...(system.length > 0 ? { system: system.join("\n\n") } : {}),
    ...(tools === undefined ? {} : { tools }),
    messages,
  };
}
