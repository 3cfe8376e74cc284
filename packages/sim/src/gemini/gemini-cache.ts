// Gemini's two caches as its context-caching guide documents them.
// - Explicit: `cachedContents` resources an API key creates with a TTL (default one hour) holding
//   contents, a system instruction and tools; a request names one and sends only what follows it.
//   A cache must hold at least the model's minimum (1,024 tokens on Flash, 4,096 on Pro); it is
//   gone at its expire time; only the key (scope) that made it sees it.
// - Implicit: automatic, no guarantee: a request whose prompt starts with a prompt served to the
//   same key and model shortly before reads that start from the cache, if it is at least the
//   model's minimum. The simulator reads whole content boundaries, and keeps a prefix 5 minutes past
//   its last use (the guide gives no figure; the simulator's choice).
import { createHash } from "node:crypto";
import { modelFacts } from "@forkd/protocol";
import type { Clock } from "../clock.js";
import { CHARS_PER_TOKEN } from "../tokenizer.js";
import { cachedContentNotFound, invalidArgument } from "./gemini-errors.js";

/** An implicit prefix is dropped this long after it was last used (the simulator's choice). @unit ms */
export const GEMINI_IMPLICIT_IDLE_MS = 5 * 60_000;
/** TTL of an explicit cache created without one. @unit ms */
export const GEMINI_DEFAULT_CACHE_TTL_MS = 60 * 60_000;

/** What the model reads before the contents: the settings a request (or a cache) carries. */
export interface GeminiSettings {
  systemInstruction?: unknown;
  tools?: unknown;
  toolConfig?: unknown;
}

/** One explicit cache. */
export interface CachedContentEntry extends GeminiSettings {
  id: string;
  scope: string;
  model: string;
  displayName?: string;
  contents: unknown[];
  createdAt: number;
  updatedAt: number;
  expiresAt: number;
  tokens: number;
}

/** The smallest explicit cache of `model` (its minimum cacheable length in forkd's model facts). @unit tokens */
export function geminiMinCacheTokens(model: string): number {
  return modelFacts(model.replace(/^models\//, ""))?.minCacheableTokens ?? 4096;
}

/** The prompt as the simulator's model reads it: the settings, then one JSON text per content. */
export function geminiPromptPieces(settings: GeminiSettings, contents: readonly unknown[]): string[] {
  const head = JSON.stringify([
    settings.systemInstruction ?? null,
    settings.tools ?? null,
    settings.toolConfig ?? null,
  ]);
  return [head, ...contents.map((content) => JSON.stringify(content))];
}

/** Tokens of the first `count` pieces (4 characters a token, a newline between pieces). */
function tokensOf(pieces: readonly string[], count = pieces.length): number {
  let chars = 0;
  for (let i = 0; i < count; i++) chars += pieces[i]!.length + (i > 0 ? 1 : 0);
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** A TTL as the API writes it: seconds with up to nine decimals and an `s` (`"300s"`, `"3.5s"`). @unit ms */
export function parseTtl(ttl: unknown): number {
  if (typeof ttl !== "string" || !/^\d+(\.\d{1,9})?s$/.test(ttl))
    throw invalidArgument(
      `Invalid value at 'cached_content.ttl' (type.googleapis.com/google.protobuf.Duration), Field 'ttl', Illegal duration format; duration must end with 's'`,
    );
  return Math.round(Number(ttl.slice(0, -1)) * 1000);
}

/** What one generateContent request reads from the caches, and writes once its response begins. */
export interface GeminiCachePlan {
  promptTokens: number;
  cachedTokens: number;
  /** Implicit prefixes to record (empty for a request that names an explicit cache). */
  writes: string[];
  key: string;
}

/** The simulator's Gemini caches: every key's explicit caches and implicit prefixes. */
export class GeminiCaches {
  readonly #clock: Clock;
  readonly #explicit = new Map<string, CachedContentEntry>();
  /** scope and model → prefix hash → last use */
  readonly #implicit = new Map<string, Map<string, number>>();
  #seq = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Creates an explicit cache. @throws {@link GeminiApiError} below the model's minimum. */
  create(
    input: Omit<CachedContentEntry, "id" | "createdAt" | "updatedAt" | "tokens" | "expiresAt"> & {
      ttlMs: number | undefined;
      expiresAt: number | undefined;
    },
  ): CachedContentEntry {
    const now = this.#clock.now();
    const tokens = tokensOf(geminiPromptPieces(input, input.contents));
    const min = geminiMinCacheTokens(input.model);
    if (tokens < min)
      throw invalidArgument(
        `Cached content is too small. total_token_count=${tokens}, min_total_token_count=${min}`,
      );
    const id = createHash("sha256")
      .update(`${input.scope}\u0000${++this.#seq}\u0000${now}`)
      .digest("hex")
      .slice(0, 24);
    const { ttlMs, expiresAt, ...rest } = input;
    const entry: CachedContentEntry = {
      ...rest,
      id,
      createdAt: now,
      updatedAt: now,
      expiresAt: expiresAt ?? now + (ttlMs ?? GEMINI_DEFAULT_CACHE_TTL_MS),
      tokens,
    };
    this.#explicit.set(id, entry);
    return entry;
  }

  /** The live cache `id` of `scope`. @throws {@link GeminiApiError} 403 when there is none. */
  get(scope: string, id: string): CachedContentEntry {
    const entry = this.#explicit.get(id);
    if (entry === undefined || entry.scope !== scope) throw cachedContentNotFound();
    if (entry.expiresAt <= this.#clock.now()) {
      this.#explicit.delete(id);
      throw cachedContentNotFound();
    }
    return entry;
  }

  /** The live caches of `scope`, oldest first. */
  list(scope: string): CachedContentEntry[] {
    const now = this.#clock.now();
    const out: CachedContentEntry[] = [];
    for (const [id, entry] of this.#explicit) {
      if (entry.expiresAt <= now) this.#explicit.delete(id);
      else if (entry.scope === scope) out.push(entry);
    }
    return out;
  }

  /** Sets a cache's expiry (`ttl` from now, or an expire time). */
  update(scope: string, id: string, expiresAt: number): CachedContentEntry {
    const entry = this.get(scope, id);
    entry.expiresAt = expiresAt;
    entry.updatedAt = this.#clock.now();
    return entry;
  }

  delete(scope: string, id: string): void {
    this.get(scope, id);
    this.#explicit.delete(id);
  }

  /**
   * Plans one request: with an explicit cache, the cache's tokens are read and nothing implicit;
   * without, the longest prefix (at a content boundary, short of the whole prompt) this key and
   * model were served within {@link GEMINI_IMPLICIT_IDLE_MS}, if at least the model's minimum.
   */
  plan(
    scope: string,
    model: string,
    settings: GeminiSettings,
    contents: readonly unknown[],
    cached?: CachedContentEntry,
  ): GeminiCachePlan {
    const key = `${scope}\u0000${model}`;
    if (cached !== undefined) {
      const pieces = geminiPromptPieces(cached, [...cached.contents, ...contents]);
      return { promptTokens: tokensOf(pieces), cachedTokens: cached.tokens, writes: [], key };
    }
    const pieces = geminiPromptPieces(settings, contents);
    const hash = createHash("sha256");
    const writes = pieces.map((piece) => {
      hash.update(piece).update("\n");
      return hash.copy().digest("hex");
    });
    const now = this.#clock.now();
    const seen = this.#implicit.get(key);
    let cachedTokens = 0;
    for (let i = pieces.length - 2; i >= 0 && seen !== undefined; i--) {
      const usedAt = seen.get(writes[i]!);
      if (usedAt !== undefined && now - usedAt < GEMINI_IMPLICIT_IDLE_MS) {
        cachedTokens = tokensOf(pieces, i + 1);
        break;
      }
    }
    if (cachedTokens < geminiMinCacheTokens(model)) cachedTokens = 0;
    return { promptTokens: tokensOf(pieces), cachedTokens, writes, key };
  }

  /** The response began: the request's prefixes are readable from now on. */
  commit(plan: GeminiCachePlan): void {
    if (plan.writes.length === 0) return;
    const now = this.#clock.now();
    let seen = this.#implicit.get(plan.key);
    if (seen === undefined) {
      seen = new Map();
      this.#implicit.set(plan.key, seen);
    }
    for (const write of plan.writes) seen.set(write, now);
  }

  clear(): void {
    this.#explicit.clear();
    this.#implicit.clear();
  }
}
