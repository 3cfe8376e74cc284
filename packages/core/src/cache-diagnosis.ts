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

function layerHash(layer: DiagnosisLayer, value: unknown): string {
  return createHash("sha256")
    .update(`${CACHE_KEY_VERSION}/diagnosis\n${layer}\n${canonicalCacheJson(value)}`)
    .digest("hex");
}

/**
 * The layer hashes of `request` sent with `betas`. With `parentMessages`, the `messages` layer covers
 * only the inherited head (see {@link inheritedMessages}), so a child's hashes equal its parent's when
 * it appended to the parent's conversation and changed nothing before. `tool_choice` and `thinking`
 * belong to `messages`, as in the cache key; `cache_control` markers are ignored.
 */
export function diagnosisLayersOf(
  request: DiagnosedRequest,
  betas: readonly string[] = [],
  parentMessages?: readonly MessageParam[],
): Required<DiagnosisLayerHashes> {
  return {
    model: layerHash("model", request.model),
    betas: layerHash("betas", betas),
    tools: layerHash("tools", request.tools ?? null),
    system: layerHash("system", request.system ?? null),
    messages: layerHash("messages", {
      tool_choice: request.tool_choice ?? null,
      thinking: request.thinking ?? null,
      messages: inheritedMessages(request.messages, parentMessages),
    }),
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
