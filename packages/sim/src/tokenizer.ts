/**
 * The simulator's deterministic tokenizer. It approximates Claude's tokenizer the way most
 * back-of-envelope estimates do: one token per 4 characters (UTF-16 code units) of rendered
 * content, rounded up per block, plus fixed framing overheads. It is a pure function of the
 * request, so counts agree across processes and runs.
 *
 * - text / thinking / redacted_thinking: the text (or data)
 * - tool_use: `name` followed by `JSON.stringify(input)`
 * - tool_result: its string content, or its inner blocks rendered and joined by "\n"
 * - tool definition: `JSON.stringify(tool)` without `cache_control`
 * - any other block (image, document…): `JSON.stringify(block)` without `cache_control`
 *
 * Each block costs {@link BLOCK_OVERHEAD_TOKENS} more, the first block of each message
 * {@link MESSAGE_OVERHEAD_TOKENS} more, and every request {@link REQUEST_OVERHEAD_TOKENS} that are
 * never cached (the start of the assistant turn).
 */
import type { ContentBlock, OtherBlock, ToolDefinition } from "./types.js";

/** Characters per token. */
export const CHARS_PER_TOKEN = 4;
/** Framing tokens of every content block, tool definition and system block. @unit tokens */
export const BLOCK_OVERHEAD_TOKENS = 3;
/** Framing tokens of every message (role header), charged on its first block. @unit tokens */
export const MESSAGE_OVERHEAD_TOKENS = 4;
/** Tokens of every request that come after all content and are never cached. @unit tokens */
export const REQUEST_OVERHEAD_TOKENS = 3;

/** Tokens of a piece of text: `ceil(length / 4)`. */
export function countTextTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

function withoutCacheControl(obj: { cache_control?: unknown }): string {
  if (!("cache_control" in obj)) return JSON.stringify(obj);
  const { cache_control: _, ...rest } = obj;
  return JSON.stringify(rest);
}

/** The rendered text of a tool definition, which its tokens are counted over. */
export function renderTool(tool: ToolDefinition): string {
  return withoutCacheControl(tool);
}

/** The rendered text of a content block, which its tokens are counted over. */
export function renderBlock(block: ContentBlock | OtherBlock): string {
  switch (block.type) {
    case "text":
      return (block as { text: string }).text;
    case "thinking":
      return (block as { thinking: string }).thinking;
    case "redacted_thinking":
      return (block as { data: string }).data;
    case "tool_use": {
      const b = block as { name: string; input: unknown };
      return b.name + JSON.stringify(b.input);
    }
    case "tool_result": {
      const c = (block as { content?: string | Array<ContentBlock | OtherBlock> }).content;
      if (c === undefined) return "";
      if (typeof c === "string") return c;
      return c.map(renderBlock).join("\n");
    }
    default:
      return withoutCacheControl(block);
  }
}

/** Tokens of a rendered block (content plus {@link BLOCK_OVERHEAD_TOKENS}). */
export function blockTokens(rendered: string): number {
  return countTextTokens(rendered) + BLOCK_OVERHEAD_TOKENS;
}
