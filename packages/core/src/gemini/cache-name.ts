// How the siblings of a fan-out find one explicit cache without talking to each other: its display
// name is a hash of exactly what it holds (model, settings, prefix contents), which every child of
// the same parent computes alike. Gemini assigns the resource name itself, so a child looks the
// display name up before it creates a cache.
import { createHash } from "node:crypto";
import type { GeminiCachedPrefix } from "./child-request.js";

/** Prefix of the display names forkd gives its caches. */
export const GEMINI_CACHE_DISPLAY_PREFIX = "forkd-";

/**
 * How long forkd's explicit caches live (a fan-out's span; left to expire rather than deleted, so a
 * late sibling still finds it), and so how many token-hours of storage one costs. @unit seconds
 */
export const GEMINI_CACHE_TTL_SECONDS = 300;

/** The display name of the cache of `prefix` on `model`: `forkd-` and 32 hex digits of its SHA-256. */
export function geminiCacheDisplayName(model: string, prefix: GeminiCachedPrefix): string {
  const hash = createHash("sha256")
    .update(JSON.stringify([model.replace(/^models\//, ""), prefix]))
    .digest("hex");
  return `${GEMINI_CACHE_DISPLAY_PREFIX}${hash.slice(0, 32)}`;
}
