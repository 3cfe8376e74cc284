// How the siblings of a fan-out find one explicit cache without talking to each other: its display
// name is a hash of exactly what it holds (model, settings, prefix contents), which every child of
// the same parent computes alike. Gemini assigns the resource name itself, so a child looks the
// display name up before it creates a cache.
import { createHash } from "node:crypto";
import { GEMINI_EXPLICIT_CACHE_TTL_SECONDS } from "@forkd/protocol";
import type { GeminiCachedPrefix } from "./child-request.js";

/** Prefix of the display names forkd gives its caches. */
export const GEMINI_CACHE_DISPLAY_PREFIX = "forkd-";

/**
 * How long forkd's explicit caches live past their creation or last renewal (the model facts price
 * a written token with this much storage: one constant for both). Storage is billed by
 * the hour, so the cache lives little longer than its fan-out: a child renews it while it runs
 * (see {@link GEMINI_CACHE_RENEW_BELOW_SECONDS}), and it is left to expire when the group ends
 * (no daemon knows which sibling is the last). @unit seconds
 */
export const GEMINI_CACHE_TTL_SECONDS: number = GEMINI_EXPLICIT_CACHE_TTL_SECONDS;

/** A child about to name a cache with less than this left renews it for another TTL first. @unit seconds */
export const GEMINI_CACHE_RENEW_BELOW_SECONDS = 30;

/** The display name of the cache of `prefix` on `model`: `forkd-` and 32 hex digits of its SHA-256. */
export function geminiCacheDisplayName(model: string, prefix: GeminiCachedPrefix): string {
  const hash = createHash("sha256")
    .update(JSON.stringify([model.replace(/^models\//, ""), prefix]))
    .digest("hex");
  return `${GEMINI_CACHE_DISPLAY_PREFIX}${hash.slice(0, 32)}`;
}
