// What the two OpenAI formats share: reading canonical (Messages-shaped) content, the text of a tool
// result, and the `arguments` string of a tool call as the model wrote it.

import { type ContentBlock, type MessageParam, modelFacts } from "@forkd/protocol";
import { parseJsonText } from "@forkd/protocol/internal";
import { InvalidPrefixError } from "../errors.js";

/**
 * The field of a canonical `tool_use` block that keeps the model's own `arguments` string. OpenAI
 * returns arguments as a string; re-writing them from the parsed `input` could change whitespace or
 * key order, and with it the next request's prefix.
 */
export const OPENAI_ARGUMENTS_FIELD = "openai_arguments";

/**
 * The field of a canonical `tool_use` block that keeps the Responses `namespace` a call named (the
 * Codex CLI offers each MCP server's tools as one `namespace` tool). The block's `name` is then the
 * qualified `<namespace>__<name>` (`mcp__forkd__fork`), the name Claude Code gives an MCP tool, which
 * the recursion guard and the tool filter read; the call goes back to the API as it came.
 */
export const OPENAI_NAMESPACE_FIELD = "openai_namespace";

/** The name a namespaced call goes by in canonical form: `<namespace>__<name>`. */
export function namespacedToolName(namespace: string, name: string): string {
  return `${namespace}__${name}`;
}

/**
 * A canonical block that carries one OpenAI item verbatim (a Responses `reasoning` item, or any item
 * forkd does not reason about): rendered back exactly as received.
 */
export const OPENAI_ITEM_BLOCK = "openai_item";

/** Blocks of a message's content (a string is one text block). */
export function blocksOf(content: MessageParam["content"]): ContentBlock[] {
  if (typeof content !== "string") return content;
  return content === "" ? [] : [{ type: "text", text: content }];
}

/** The text of a `tool_result`'s content: a string, or its text blocks joined by a newline. */
export function toolResultText(content: unknown): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return JSON.stringify(content);
  return content
    .map((block: { type?: unknown; text?: unknown }) =>
      block.type === "text" && typeof block.text === "string" ? block.text : JSON.stringify(block),
    )
    .join("\n");
}

/** The `arguments` string of a `tool_use` block: the model's own when kept, else its input as JSON. */
export function toolArguments(block: ContentBlock): string {
  const kept = (block as Record<string, unknown>)[OPENAI_ARGUMENTS_FIELD];
  if (typeof kept === "string") return kept;
  return JSON.stringify((block as { input?: unknown }).input ?? {});
}

/**
 * A `tool_use` block from an OpenAI call: `input` parsed from `args` (an object, or `{}` when the
 * model wrote something else), the string itself kept for rendering.
 */
export function toolUseBlock(id: string, name: string, args: string): ContentBlock {
  let input: unknown = {};
  try {
    const parsed: unknown = parseJsonText(args);
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) input = parsed;
  } catch {
    // Malformed arguments are kept as a string below; the tool sees an empty input and fails clearly.
  }
  return { type: "tool_use", id, name, input, [OPENAI_ARGUMENTS_FIELD]: args };
}

/** The text of a system prompt (a string, or text blocks joined by a blank line). */
export function systemText(system: unknown): string | undefined {
  if (system === undefined) return undefined;
  if (typeof system === "string") return system;
  if (!Array.isArray(system)) throw new InvalidPrefixError("system must be a string or text blocks");
  return system.map((block: { text?: unknown }) => String(block.text ?? "")).join("\n\n");
}

/** A canonical block that has no OpenAI form. @throws {@link InvalidPrefixError} */
export function unsupportedBlock(block: ContentBlock, where: string): never {
  throw new InvalidPrefixError(`a ${block.type} block has no OpenAI form (${where})`);
}

/**
 * `prompt_cache_breakpoint` as the SDK's types define it: on an input content block, it marks the
 * exact end of a reusable prefix (OpenAI's GPT-5.6 family on).
 */
export const PROMPT_CACHE_BREAKPOINT = { mode: "explicit" } as const;

/** Whether OpenAI's `model` takes explicit cache breakpoints (forkd's model facts: GPT-5.6 on). */
export function takesCacheBreakpoints(model: string): boolean {
  return modelFacts(model)?.explicitCacheBreakpoints === true;
}

/**
 * An input content part, marked with {@link PROMPT_CACHE_BREAKPOINT} when `breakpoints` are on and
 * the canonical block it renders carries a breakpoint (`cache_control`, where forkd puts the fork's
 * breakpoint and a parent put its own): the same prefix OpenAI then caches.
 */
export function markedPart(
  part: Record<string, unknown>,
  block: ContentBlock,
  breakpoints: boolean,
): Record<string, unknown> {
  const marked = breakpoints && (block as { cache_control?: unknown }).cache_control != null;
  return marked ? { ...part, prompt_cache_breakpoint: PROMPT_CACHE_BREAKPOINT } : part;
}

/**
 * A tool result's content as sent: its text, or — when it carries a breakpoint to mark — one part of
 * `partType` with the mark (a string has no block to carry one).
 */
export function toolOutputContent(
  block: ContentBlock & { content?: unknown },
  partType: "text" | "input_text",
  breakpoints: boolean,
): string | Record<string, unknown>[] {
  const text = toolResultText(block.content);
  const part = markedPart({ type: partType, text }, block, breakpoints);
  return part.prompt_cache_breakpoint === undefined ? text : [part];
}
