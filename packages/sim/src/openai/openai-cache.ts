// OpenAI's prompt cache as its guide documents it (models before the GPT-5.6 family): automatic for
// prompts of 1,024 tokens or more, hits counted in 128-token steps of the longest cached prefix, no
// charge for writes. A request is routed to a machine by a hash of its prompt's first 256 tokens and
// its `prompt_cache_key`; only that machine's entries can be read, so requests that do not share a
// key miss each other's prefix. Above about 15 requests a minute for one prefix and key, requests
// spill to further machines, which start cold. Entries live 5 minutes past their last use (the guide
// says 5 to 10; the simulator takes the shorter) and at most an hour (in-memory retention), or, written
// under `prompt_cache_retention: "24h"` (extended retention), up to 24 hours whatever their use.
// Which retention a request gets is the SDK's documented rule: the one it asks for; gpt-5.5 and later
// only 24h; none asked on an older model: the default of an organisation with zero data retention,
// in-memory (one without ZDR gets 24h; the simulator takes the shorter, under which a fork that
// reads its prefix reads it under 24h too).
import { createHash } from "node:crypto";
import type { Clock } from "../clock.js";
import { CHARS_PER_TOKEN } from "../tokenizer.js";

/** Smallest prompt that is cached. @unit tokens */
export const OPENAI_MIN_CACHED_TOKENS = 1024;
/** Cached tokens are counted in steps of this many. @unit tokens */
export const OPENAI_CACHE_STEP_TOKENS = 128;
/** Tokens at the start of a prompt that its routing hash covers. @unit tokens */
export const OPENAI_ROUTING_TOKENS = 256;
/** Requests a minute one prefix and key are served by one machine. */
export const OPENAI_MACHINE_RATE_PER_MINUTE = 15;
/** An entry is dropped this long after it was last used. @unit ms */
export const OPENAI_IDLE_TTL_MS = 5 * 60_000;
/** An entry is dropped this long after it was written, whatever its use. @unit ms */
export const OPENAI_MAX_TTL_MS = 60 * 60_000;
/** An entry written under extended retention (`24h`) is dropped this long after it was written. @unit ms */
export const OPENAI_EXTENDED_TTL_MS = 24 * 60 * 60_000;

/** A prompt cache retention policy, as the OpenAI SDK's types name them (`prompt_cache_retention`). */
export type OpenAiCacheRetention = "in_memory" | "24h";

/**
 * The retention a request to `model` gets: gpt-5.5 and later support only `24h` (what the API
 * answers to `in_memory` there is not documented: the simulator keeps 24h); older models the one
 * asked for, else in-memory (see the file's head).
 */
export function openAiRetentionOf(model: string, requested: unknown): OpenAiCacheRetention {
  const version = /^gpt-(\d+)(?:\.(\d+))?/.exec(model);
  const major = Number(version?.[1] ?? 0);
  const minor = Number(version?.[2] ?? 0);
  if (major > 5 || (major === 5 && minor >= 5)) return "24h";
  return requested === "24h" ? "24h" : "in_memory";
}

const STEP_CHARS = OPENAI_CACHE_STEP_TOKENS * CHARS_PER_TOKEN;

interface Entry {
  writtenAt: number;
  usedAt: number;
  /** Written (or used) under extended retention. */
  extended: boolean;
}

/** What a request reads, and what it writes once its response begins. */
export interface OpenAiCachePlan {
  machine: string;
  promptTokens: number;
  cachedTokens: number;
  /** Hashes of every cacheable step-aligned prefix of the prompt. */
  writes: string[];
  /** The retention its writes get. */
  retention: OpenAiCacheRetention;
}

/** The simulator's OpenAI prompt cache, all machines of it. */
export class OpenAiPromptCache {
  readonly #clock: Clock;
  /** machine → prefix hash → entry */
  readonly #machines = new Map<string, Map<string, Entry>>();
  /** routing key → arrival times in the last minute */
  readonly #arrivals = new Map<string, number[]>();
  #reads = 0;
  #hits = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * Plans one request: its machine (by scope, the first 256 tokens and the key, and the minute's
   * load), the longest cached step-aligned prefix there, and the prefixes it will write.
   * @param prompt the prompt as the model sees it, rendered by the route.
   */
  plan(
    scope: string,
    prompt: string,
    promptCacheKey: string | undefined,
    retention: OpenAiCacheRetention = "in_memory",
  ): OpenAiCachePlan {
    const now = this.#clock.now();
    const start = prompt.slice(0, OPENAI_ROUTING_TOKENS * CHARS_PER_TOKEN);
    const route = sha(`${scope}\u0000${promptCacheKey ?? ""}\u0000${start}`);
    const recent = (this.#arrivals.get(route) ?? []).filter((t) => now - t < 60_000);
    recent.push(now);
    this.#arrivals.set(route, recent);
    // The first 15 of the minute go to the prefix's machine; each further 15 spill to another.
    const spill = Math.floor((recent.length - 1) / OPENAI_MACHINE_RATE_PER_MINUTE);
    const machine = spill === 0 ? route : `${route}#${spill}`;
    const promptTokens = Math.ceil(prompt.length / CHARS_PER_TOKEN);
    const writes: string[] = [];
    if (promptTokens >= OPENAI_MIN_CACHED_TOKENS) {
      const hash = createHash("sha256");
      // The last token is never served from the cache: the model must compute at least one.
      for (let end = STEP_CHARS; end <= prompt.length - CHARS_PER_TOKEN; end += STEP_CHARS) {
        hash.update(prompt.slice(end - STEP_CHARS, end));
        writes.push(hash.copy().digest("hex"));
      }
    }
    const entries = this.#machines.get(machine);
    let cachedSteps = 0;
    if (entries !== undefined) {
      for (let i = writes.length - 1; i >= 0; i--) {
        const entry = entries.get(writes[i]!);
        if (entry !== undefined && this.#alive(entry, now)) {
          cachedSteps = i + 1;
          break;
        }
      }
    }
    let cachedTokens = cachedSteps * OPENAI_CACHE_STEP_TOKENS;
    if (cachedTokens < OPENAI_MIN_CACHED_TOKENS) cachedTokens = 0;
    this.#reads++;
    if (cachedTokens > 0) this.#hits++;
    return {
      machine,
      promptTokens,
      cachedTokens,
      writes: promptTokens >= OPENAI_MIN_CACHED_TOKENS ? writes : [],
      retention,
    };
  }

  /** The response began: the request's prefixes are readable on its machine from now on. */
  commit(plan: OpenAiCachePlan): void {
    const now = this.#clock.now();
    let entries = this.#machines.get(plan.machine);
    if (entries === undefined) {
      entries = new Map();
      this.#machines.set(plan.machine, entries);
    }
    const extended = plan.retention === "24h";
    for (const key of plan.writes) {
      const entry = entries.get(key);
      if (entry !== undefined && this.#alive(entry, now)) {
        entry.usedAt = now;
        // Kept the longer of the two: a 24h request keeps what it used for 24 hours from then.
        if (extended && !entry.extended) {
          entry.extended = true;
          entry.writtenAt = now;
        }
      } else entries.set(key, { writtenAt: now, usedAt: now, extended });
    }
  }

  #alive(entry: Entry, now: number): boolean {
    if (entry.extended) return now - entry.writtenAt < OPENAI_EXTENDED_TTL_MS;
    return now - entry.usedAt < OPENAI_IDLE_TTL_MS && now - entry.writtenAt < OPENAI_MAX_TTL_MS;
  }

  stats(): { reads: number; hits: number; machines: number } {
    return { reads: this.#reads, hits: this.#hits, machines: this.#machines.size };
  }

  clear(): void {
    this.#machines.clear();
    this.#arrivals.clear();
    this.#reads = 0;
    this.#hits = 0;
  }
}

function sha(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
