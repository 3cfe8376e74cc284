/**
 * The prompt as the cache sees it: one flat list of blocks in Anthropic's order
 * tools → system → messages, each with its rendered content, its token count and its
 * `cache_control`. A string `system` or message `content` is the same as one text block.
 */

import type { UnkeptValueText } from "@forkd/protocol/internal";
import {
  blockTokens,
  MESSAGE_OVERHEAD_TOKENS,
  REQUEST_OVERHEAD_TOKENS,
  renderBlock,
  renderTool,
} from "./tokenizer.js";
import type { CacheControl, ContentBlock, MessagesRequest, OtherBlock } from "./types.js";
import { validateRequest } from "./validate.js";
import { verbatimIdentities } from "./verbatim.js";

/** Where a block sits. */
export type Segment = "tools" | "system" | "messages";

/** One cacheable unit of the prompt. */
export interface PromptBlock {
  segment: Segment;
  /** Position in its segment: tool index, system block index, or message index. */
  index: number;
  /** Block index inside the message (0 for tools and system). */
  blockIndex: number;
  /** Block type, `"tool"` for a tool definition. */
  type: string;
  /**
   * Identity that is not in `content` (role, ids, flags): hashed with it. For an element whose text a
   * JavaScript reading would not write back as sent, it also holds the identity of that text
   * (verbatim.ts), as `content` is rendered from the JavaScript value.
   */
  header: string;
  /** Rendered content: hashed, and counted for tokens. */
  content: string;
  /** Tokens, overheads included. @unit tokens */
  tokens: number;
  /** The block's own `cache_control`, if any. */
  cacheControl: CacheControl | undefined;
}

/** A request laid out for counting and caching. */
export interface PromptLayout {
  model: string;
  blocks: PromptBlock[];
  /** Index of the first message block (blocks.length when there is none). */
  firstMessageBlock: number;
  /** Tokens outside every block (never cached). @unit tokens */
  overheadTokens: number;
  /** Whole prompt. @unit tokens */
  totalTokens: number;
  /**
   * The request parameters that, when changed, invalidate message-level caches but not tools or
   * system: `tool_choice` and `thinking`, canonicalised (absent = auto / disabled).
   */
  messagesContext: string;
}

function cc(v: unknown): CacheControl | undefined {
  return v === null || v === undefined ? undefined : (v as CacheControl);
}

function canonicalToolChoice(req: MessagesRequest): string {
  const c = req.tool_choice;
  if (c === undefined) return "auto";
  const name = c.type === "tool" ? `:${c.name}` : "";
  const parallel = "disable_parallel_tool_use" in c && c.disable_parallel_tool_use === true ? ":serial" : "";
  return `${c.type}${name}${parallel}`;
}

function canonicalThinking(req: MessagesRequest): string {
  const t = req.thinking;
  if (t === undefined || t.type === "disabled") return "disabled";
  return t.type === "enabled" ? `enabled:${t.budget_tokens}` : t.type;
}

function messageBlockHeader(role: string, first: boolean, b: ContentBlock | OtherBlock): string {
  const head = `${role}${first ? "^" : ""}|${b.type}`;
  switch (b.type) {
    case "tool_use":
      return `${head}|${(b as { id: string }).id}`;
    case "tool_result": {
      const r = b as { tool_use_id: string; is_error?: boolean };
      return `${head}|${r.tool_use_id}|${r.is_error === true ? "error" : ""}`;
    }
    case "thinking":
      return `${head}|${(b as { signature: string }).signature}`;
    default:
      return head;
  }
}

/** `header`, with the identity of the element's text when it is verbatim. */
function withIdentity(header: string, identity: string | undefined): string {
  return identity === undefined ? header : `${header}\u0005${identity}`;
}

/**
 * Lays a validated request out as blocks. `verbatim`: where the request body holds values a
 * JavaScript reading would not write back as sent (`valuesJsonCannotKeep` of its text, verbatim.ts);
 * the block of each element holding one is told apart by their text, as the provider renders it as
 * sent. A message's own holders mark its first block.
 */
export function layoutPrompt(req: MessagesRequest, verbatim: readonly UnkeptValueText[] = []): PromptLayout {
  const identities = verbatim.length === 0 ? undefined : verbatimIdentities(verbatim);
  const blocks: PromptBlock[] = [];
  let total = REQUEST_OVERHEAD_TOKENS;
  let overhead = REQUEST_OVERHEAD_TOKENS;
  const tools = req.tools ?? [];
  for (let i = 0; i < tools.length; i++) {
    const t = tools[i]!;
    const content = renderTool(t);
    const tokens = blockTokens(content);
    blocks.push({
      segment: "tools",
      index: i,
      blockIndex: 0,
      type: "tool",
      header: withIdentity("tool", identities?.get(`t${i}`)),
      content,
      tokens,
      cacheControl: cc(t.cache_control),
    });
    total += tokens;
  }
  const system = req.system;
  if (system !== undefined) {
    const list = typeof system === "string" ? [{ text: system, cache_control: undefined }] : system;
    for (let i = 0; i < list.length; i++) {
      const s = list[i]!;
      if (s.text.length === 0) continue;
      const tokens = blockTokens(s.text);
      blocks.push({
        segment: "system",
        index: i,
        blockIndex: 0,
        type: "text",
        header: withIdentity("system", identities?.get(`s${i}`)),
        content: s.text,
        tokens,
        cacheControl: cc(s.cache_control),
      });
      total += tokens;
    }
  }
  const firstMessageBlock = blocks.length;
  const messages = req.messages;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const content =
      typeof m.content === "string"
        ? m.content === ""
          ? []
          : [{ type: "text" as const, text: m.content }]
        : (m.content ?? []);
    if (content.length === 0) {
      total += MESSAGE_OVERHEAD_TOKENS;
      overhead += MESSAGE_OVERHEAD_TOKENS;
      continue;
    }
    for (let j = 0; j < content.length; j++) {
      const b = content[j]!;
      const rendered = renderBlock(b);
      const tokens = blockTokens(rendered) + (j === 0 ? MESSAGE_OVERHEAD_TOKENS : 0);
      let header = messageBlockHeader(m.role, j === 0, b);
      if (identities !== undefined) {
        if (j === 0) header = withIdentity(header, identities.get(`m${i}`));
        header = withIdentity(header, identities.get(`m${i}.${j}`));
      }
      blocks.push({
        segment: "messages",
        index: i,
        blockIndex: j,
        type: b.type,
        header,
        content: rendered,
        tokens,
        cacheControl: cc(b.cache_control),
      });
      total += tokens;
    }
  }
  return {
    model: req.model,
    blocks,
    firstMessageBlock,
    overheadTokens: overhead,
    totalTokens: total,
    messagesContext: `tool_choice=${canonicalToolChoice(req)};thinking=${canonicalThinking(req)}`,
  };
}

/** Tokens of one block of a {@link TokenCount}. */
export interface BlockTokenCount {
  segment: Segment;
  /** Tool index, system block index or message index. */
  index: number;
  /** Block index inside the message. */
  blockIndex: number;
  type: string;
  /** @unit tokens */
  tokens: number;
  /** Tokens of this block and every block before it. @unit tokens */
  cumulative: number;
}

/** What {@link countTokens} reports. All in tokens. */
export interface TokenCount {
  /** The whole prompt: what `count_tokens` returns and what read + creation + input add up to. */
  total: number;
  tools: number;
  system: number;
  messages: number;
  /** Tokens outside every block, never cached. */
  overhead: number;
  /** Every block in tools → system → messages order. */
  blocks: BlockTokenCount[];
}

/**
 * Counts a Messages request with the simulator's tokenizer (the same numbers the server charges).
 * @throws {SimApiError} when the request is not valid
 */
export function countTokens(request: unknown): TokenCount {
  const layout = layoutPrompt(validateRequest(request, "count_tokens"));
  const sums = { tools: 0, system: 0, messages: 0 };
  let cumulative = 0;
  const blocks = layout.blocks.map((b) => {
    cumulative += b.tokens;
    sums[b.segment] += b.tokens;
    return {
      segment: b.segment,
      index: b.index,
      blockIndex: b.blockIndex,
      type: b.type,
      tokens: b.tokens,
      cumulative,
    };
  });
  return { total: layout.totalTokens, ...sums, overhead: layout.overheadTokens, blocks };
}
