// The cache key of a request: a SHA-256 over a canonical form of exactly what the provider's prompt
// cache is keyed on, whole and per layer, stable across hosts, processes and Node versions.
import { createHash } from "node:crypto";
import type { CacheSafeParams } from "@forkd/protocol";
import { InvalidPrefixError } from "./errors.js";

/**
 * The layers of the provider's cache key, outermost first. A change in one layer invalidates it and
 * every layer after it. `tool_choice` and `thinking` belong to `messages`: the provider's rule is that
 * changing them invalidates the cached messages but not the tools or the system prompt.
 */
export const CACHE_LAYERS = ["model", "tools", "system", "messages"] as const;

/** One layer of the cache key. */
export type CacheLayer = (typeof CACHE_LAYERS)[number];

/** SHA-256 (lowercase hex) of each layer's canonical form. */
export type CacheLayerHashes = Record<CacheLayer, string>;

/** Identifies the canonical form; part of every hash, so a future change of the form changes every hash. */
export const CACHE_KEY_VERSION = "forkd-cache-key/v1";

/** The cache key of a request. */
export interface CacheKey {
  /** SHA-256 over the layer hashes, in {@link CACHE_LAYERS} order. */
  hash: string;
  /** One hash per layer, so a cache break can name the layer that changed. */
  layers: CacheLayerHashes;
}

// Values the provider renders into the prompt exactly as sent, key order included: a tool call's
// arguments and a tool's JSON schema. Everything else is envelope whose key order carries no meaning.
const ORDER_PRESERVING_KEYS = new Set(["input", "input_schema"]);
// Breakpoint markers: where the cache is written, not what it holds.
const IGNORED_KEYS = new Set(["cache_control"]);

/**
 * The canonical JSON of one layer's value: envelope objects with their keys sorted and their
 * `cache_control` dropped; `input` and `input_schema` values kept in their own key order and whole.
 * Strings and numbers are written as `JSON.stringify` writes them (specified by ECMAScript, so the
 * same in every Node version). `undefined` object members are omitted, as JSON omits them.
 *
 * @throws {@link InvalidPrefixError} for values JSON cannot carry (functions, bigints, symbols,
 * non-finite numbers, cycles).
 */
export function canonicalCacheJson(value: unknown): string {
  const parts: string[] = [];
  write(value, false, parts, [], new Set());
  return parts.join("");
}

function write(
  value: unknown,
  preserveOrder: boolean,
  out: string[],
  path: (string | number)[],
  ancestors: Set<object>,
): void {
  switch (typeof value) {
    case "string":
      out.push(JSON.stringify(value));
      return;
    case "boolean":
      out.push(value ? "true" : "false");
      return;
    case "number":
      if (!Number.isFinite(value)) {
        throw new InvalidPrefixError(`${value} is not a JSON number`, { path: [...path] });
      }
      out.push(JSON.stringify(value));
      return;
    case "object":
      break;
    default:
      throw new InvalidPrefixError(`a ${typeof value} cannot be part of a request`, { path: [...path] });
  }
  if (value === null) {
    out.push("null");
    return;
  }
  if (ancestors.has(value)) throw new InvalidPrefixError("the request contains a cycle", { path: [...path] });
  ancestors.add(value);
  if (Array.isArray(value)) {
    out.push("[");
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.push(",");
      const item: unknown = value[i];
      path.push(i);
      if (item === undefined) out.push("null");
      else write(item, preserveOrder, out, path, ancestors);
      path.pop();
    }
    out.push("]");
  } else {
    const record = value as Record<string, unknown>;
    let keys = Object.keys(record);
    if (!preserveOrder) keys = keys.filter((key) => !IGNORED_KEYS.has(key)).sort(compareCodeUnits);
    out.push("{");
    let first = true;
    for (const key of keys) {
      const member = record[key];
      if (member === undefined) continue;
      if (!first) out.push(",");
      first = false;
      out.push(JSON.stringify(key), ":");
      path.push(key);
      write(member, preserveOrder || ORDER_PRESERVING_KEYS.has(key), out, path, ancestors);
      path.pop();
    }
    out.push("}");
  }
  ancestors.delete(value);
}

// Locale-independent: UTF-16 code unit order, as Array.prototype.sort does without a comparator.
function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

function layerHash(layer: CacheLayer, value: unknown): string {
  return sha256(`${CACHE_KEY_VERSION}\n${layer}\n${canonicalCacheJson(value)}`);
}

/**
 * The cache key of `params`: model, tools in order, system, and (as the `messages` layer)
 * `tool_choice`, `thinking` and the messages. Sampling and transport parameters (`temperature`,
 * `top_p`, `top_k`, `max_tokens`, `stop_sequences`, `metadata`, `stream`, …) do not enter it, and
 * neither do `cache_control` markers (moving a breakpoint does not change the cached content).
 * See docs/fork-semantics.md, "The cache key".
 */
export function computeCacheKey(params: CacheSafeParams, betas?: readonly string[]): CacheKey {
  const layers: CacheLayerHashes = {
    // Betas change what the whole request means, so they sit with the model, outermost; with none
    // the layer is the model alone, as before betas were carried.
    model: layerHash(
      "model",
      betas === undefined || betas.length === 0 ? params.model : { model: params.model, betas },
    ),
    tools: layerHash("tools", params.tools ?? null),
    system: layerHash("system", params.system ?? null),
    messages: layerHash("messages", {
      tool_choice: params.tool_choice ?? null,
      thinking: params.thinking ?? null,
      messages: params.messages,
    }),
  };
  const hash = sha256(`${CACHE_KEY_VERSION}\n${CACHE_LAYERS.map((layer) => layers[layer]).join("\n")}`);
  return { hash, layers };
}

/**
 * The outermost layer whose hash differs between `expected` (e.g. the parent's) and `actual`, or
 * `"none"` when every layer matches. The outermost change is the cause: it invalidates all after it.
 */
export function firstChangedLayer(expected: CacheLayerHashes, actual: CacheLayerHashes): CacheLayer | "none" {
  for (const layer of CACHE_LAYERS) {
    if (expected[layer] !== actual[layer]) return layer;
  }
  return "none";
}
