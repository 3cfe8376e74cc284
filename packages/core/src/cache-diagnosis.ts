// Layer hashes for cache diagnostics: what part of a child's request left its parent's cached prefix.
// Unlike the cache key (cache-key.ts), which is one hash per provider cache layer with the betas inside
// the model layer, these keep the betas apart and hash only the inherited head of the messages, so the
// parent's request and a child's (which appends to it) can be compared layer by layer.
import { createHash } from "node:crypto";
import type { MessageParam } from "@forkd/protocol";
import { CACHE_KEY_VERSION, type CacheLayerHashes, canonicalCacheJson } from "./cache-key.js";

/** The layers a diagnosis compares, outermost first: a change in one invalidates every one after it. */
export const DIAGNOSIS_LAYERS = ["model", "betas", "tools", "system", "messages"] as const;

/** One layer of a diagnosis. */
export type DiagnosisLayer = (typeof DIAGNOSIS_LAYERS)[number];

/**
 * SHA-256 (lowercase hex) of each layer. `betas` may be absent: a cache key's layers
 * ({@link CacheLayerHashes}, betas inside `model`) compare too.
 */
export type DiagnosisLayerHashes = CacheLayerHashes & { betas?: string };

/** What {@link diagnosisLayersOf} hashes: the prompt-shaping fields of a Messages request. */
export interface DiagnosedRequest {
  model: string;
  tools?: unknown;
  system?: unknown;
  tool_choice?: unknown;
  thinking?: unknown;
  messages: readonly MessageParam[];
}

// A string content and one text block are the same prompt to the provider; an empty string is no block.
function blocksOf(content: MessageParam["content"]): unknown[] {
  if (typeof content !== "string") return content;
  return content === "" ? [] : [{ type: "text", text: content }];
}

/**
 * The head of `messages` that corresponds to `parent`: as many messages as the parent has, the last
 * one cut to the parent's number of blocks (a fork taken after a user turn adds its directive to that
 * turn). Without `parent`, every message.
 */
export function inheritedMessages(
  messages: readonly MessageParam[],
  parent?: readonly MessageParam[],
): { role: string; content: unknown[] }[] {
  const count = parent === undefined ? messages.length : Math.min(parent.length, messages.length);
  const head = messages.slice(0, count).map((m) => ({ role: m.role, content: blocksOf(m.content) }));
  const last = head[count - 1];
  const parentLast = parent?.[count - 1];
  if (last !== undefined && parentLast !== undefined) {
    last.content = last.content.slice(0, blocksOf(parentLast.content).length);
  }
  return head;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

// A prefix is read-only once decoded (docs/protocol.md), and a child's request holds the parent's
// tools, system and messages by reference: each is hashed once, whichever sibling asks. A 300k-token
// prefix costs about 12 ms to hash, so without this every child would pay it twice.
const valueHashes = new WeakMap<object, string>();

/** SHA-256 of `value`'s canonical JSON, remembered for an object (see above). */
function valueHash(value: unknown, normalise: (value: object) => unknown = (v) => v): string {
  if (typeof value !== "object" || value === null) return sha256(canonicalCacheJson(value));
  let hash = valueHashes.get(value);
  if (hash === undefined) {
    hash = sha256(canonicalCacheJson(normalise(value)));
    valueHashes.set(value, hash);
  }
  return hash;
}

const normaliseMessage = (m: object) => ({
  role: (m as MessageParam).role,
  content: blocksOf((m as MessageParam).content),
});

/** One hash per message of the inherited head (see {@link inheritedMessages}). */
function inheritedMessageHashes(
  messages: readonly MessageParam[],
  parent?: readonly MessageParam[],
): string[] {
  const count = parent === undefined ? messages.length : Math.min(parent.length, messages.length);
  const hashes = messages.slice(0, count).map((m) => valueHash(m, normaliseMessage));
  const last = messages[count - 1];
  const parentLast = parent?.[count - 1];
  if (last !== undefined && parentLast !== undefined) {
    const kept = blocksOf(parentLast.content).length;
    // A last message that gained blocks (a fork after a user turn) is hashed as cut, and not remembered.
    if (blocksOf(last.content).length > kept)
      hashes[count - 1] = valueHash(inheritedMessages([last], [parentLast])[0]);
  }
  return hashes;
}

function layerHash(layer: DiagnosisLayer, parts: readonly string[]): string {
  return sha256(`${CACHE_KEY_VERSION}/diagnosis\n${layer}\n${parts.join("\n")}`);
}

/**
 * The layer hashes of `request` sent with `betas`: each a SHA-256 over the layer's name and the
 * SHA-256 of its canonical JSON (the messages: of `tool_choice` and `thinking`, then of each message).
 * With `parentMessages`, the `messages` layer covers only the inherited head (see
 * {@link inheritedMessages}), so a child's hashes equal its parent's when it appended to the parent's
 * conversation and changed nothing before. `tool_choice` and `thinking` belong to `messages`, as in
 * the cache key; `cache_control` markers are ignored.
 */
export function diagnosisLayersOf(
  request: DiagnosedRequest,
  betas: readonly string[] = [],
  parentMessages?: readonly MessageParam[],
): Required<DiagnosisLayerHashes> {
  return {
    model: layerHash("model", [valueHash(request.model)]),
    betas: layerHash("betas", [valueHash(betas)]),
    tools: layerHash("tools", [valueHash(request.tools ?? null)]),
    system: layerHash("system", [valueHash(request.system ?? null)]),
    messages: layerHash("messages", [
      valueHash({ tool_choice: request.tool_choice ?? null, thinking: request.thinking ?? null }),
      ...inheritedMessageHashes(request.messages, parentMessages),
    ]),
  };
}

/**
 * The outermost layer whose hash differs between `parent` and `child`, or `"none"`. The outermost
 * change is the cause: it invalidates every layer after it. A layer absent on both sides matches.
 */
export function firstDifferingLayer(
  parent: DiagnosisLayerHashes,
  child: DiagnosisLayerHashes,
): DiagnosisLayer | "none" {
  for (const layer of DIAGNOSIS_LAYERS) {
    if (parent[layer] !== child[layer]) return layer;
  }
  return "none";
}
