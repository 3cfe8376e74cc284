/**
 * A memo of prompt-cache keys: the same digests as {@link prefixKeys}, without hashing again the
 * blocks a recent request already hashed.
 *
 * Forks of one parent send the parent's whole prompt, ~190 kB at 48k tokens, and differ only in
 * their last blocks. Hashing every request's prompt from its first byte was a fifth of the
 * simulator's CPU at 48k (a profile of 2,300 forks: SHA-256 updates 0.66 ms and hash copies and
 * digests 0.2 ms per request, of ~3.3 ms). The memo is a trie of blocks: each node holds the
 * running hash through its block and, once asked for, that position's key. A request walks the trie
 * comparing its blocks with the nodes' (string equality: a memory compare, no hashing), and hashes
 * only from the first block that differs.
 *
 * It is bounded: a request that finds it holding more than {@link PrefixKeyMemoOptions.maxChars}
 * characters of block content makes it forget everything first, so it holds at most that plus one
 * prompt. Keys are a pure function of the prompt: a reset costs time, never a wrong key.
 */
import { createHash, type Hash } from "node:crypto";
import type { PromptBlock, PromptLayout } from "./prompt.js";

/** Options of a {@link PrefixKeyMemo}. */
export interface PrefixKeyMemoOptions {
  /**
   * Block content the memo may hold before it starts again, each block counting 256 characters
   * more than its content.
   * @default 32 Mi @unit characters (UTF-16 code units)
   */
  maxChars?: number;
}

/** Default of {@link PrefixKeyMemoOptions.maxChars}: a few hundred 48k prompts. */
export const DEFAULT_MEMO_MAX_CHARS = 32 * 1024 * 1024;

/** What each block counts for besides its content (its hash state, lead and links), so that a prompt of many empty blocks is bounded too. @unit characters */
const NODE_CHARS = 256;

/** One block of one prompt prefix: the hash of everything up to and including it. */
interface KeyNode {
  /** What is hashed before the block's content: the messages context where messages begin, and the block's identity. */
  readonly lead: string;
  readonly content: string;
  /** The running hash through this block; copied, never updated in place. */
  readonly state: Hash;
  /** This position's key, once a request asked for it. */
  key: string | undefined;
  /** The child most recently walked to: forks of one parent follow one path, and this skips the map. */
  lastChild: KeyNode | undefined;
  /** Children by content; siblings with the same content differ in `lead`. */
  children: Map<string, KeyNode[]> | undefined;
}

/**
 * What a cache key hashes of block `i` before its content: the messages context where messages begin,
 * then the block's segment, identity and length. Shared by {@link prefixKeys} and the memo, whose
 * digests must be the same.
 */
export function blockLead(layout: PromptLayout, i: number, b: PromptBlock): string {
  const context = i === layout.firstMessageBlock ? `\u0004${layout.messagesContext}` : "";
  return `${context}\u0001${b.segment}|${b.header}\u0002${b.content.length}\u0003`;
}

/**
 * Cache keys of prompt layouts, memoised across requests. One per {@link PromptCache}.
 */
export class PrefixKeyMemo {
  readonly #maxChars: number;
  readonly #roots = new Map<string, KeyNode>();
  #chars = 0;
  #resets = 0;

  constructor(options: PrefixKeyMemoOptions = {}) {
    this.#maxChars = options.maxChars ?? DEFAULT_MEMO_MAX_CHARS;
  }

  /** The key of each position asked for: the same digests as {@link prefixKeys}. */
  keys(layout: PromptLayout, scope: string, positions: ReadonlySet<number>): Map<number, string> {
    const keys = new Map<number, string>();
    if (positions.size === 0) return keys;
    const last = Math.max(...positions);
    const blocks = layout.blocks;
    if (this.#chars > this.#maxChars) {
      this.#roots.clear();
      this.#chars = 0;
      this.#resets++;
    }
    let node = this.#root(`${scope}\u0000${layout.model}\u0000`);
    for (let i = 0; i <= last; i++) {
      const b = blocks[i]!;
      node = this.#child(node, blockLead(layout, i, b), b.content);
      if (positions.has(i)) {
        node.key ??= node.state.copy().digest("base64url");
        keys.set(i, node.key);
      }
    }
    return keys;
  }

  /** Times the memo has started again because it was full. */
  get resets(): number {
    return this.#resets;
  }

  /** Block content held now, with each block's 256. @unit characters */
  get heldChars(): number {
    return this.#chars;
  }

  #root(seed: string): KeyNode {
    let root = this.#roots.get(seed);
    if (root === undefined) {
      const state = createHash("sha256");
      state.update(seed);
      root = { lead: "", content: seed, state, key: undefined, lastChild: undefined, children: undefined };
      this.#roots.set(seed, root);
    }
    return root;
  }

  #child(parent: KeyNode, lead: string, content: string): KeyNode {
    const last = parent.lastChild;
    if (last !== undefined && last.content === content && last.lead === lead) return last;
    const siblings = parent.children?.get(content);
    const child = siblings?.find((n) => n.lead === lead) ?? this.#add(parent, lead, content);
    parent.lastChild = child;
    return child;
  }

  #add(parent: KeyNode, lead: string, content: string): KeyNode {
    const state = parent.state.copy();
    state.update(lead);
    state.update(content);
    const node: KeyNode = { lead, content, state, key: undefined, lastChild: undefined, children: undefined };
    parent.children ??= new Map();
    const same = parent.children.get(content);
    if (same === undefined) parent.children.set(content, [node]);
    else same.push(node);
    this.#chars += content.length + NODE_CHARS;
    return node;
  }
}
