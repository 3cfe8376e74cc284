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
//
// From the GPT-5.6 family on (models whose facts say `explicitCacheBreakpoints`), the guide and the
// SDK's types document another cache, which the simulator applies to those models instead: entries are
// written only at breakpoints — the end of a content block marked `prompt_cache_breakpoint`
// (explicit), and one OpenAI places at the latest user or tool message (implicit, unless
// `prompt_cache_options.mode` is `explicit`). A request writes its implicit breakpoint and its latest
// three explicit ones (explicit mode: its latest four), and reads the longest prefix ending at one of
// its latest 80 breakpoints that an earlier request wrote: a hit is exactly that prefix, not rounded to
// 128-token steps. Writes are billed (`cache_write_tokens`, 1.25× input): the tokens from what was read
// to the longest breakpoint written. Entries live 30 minutes from their write (`ttl: "30m"`, the only
// one; a read does not extend it). Where the docs are silent the simulator is the stricter: a
// breakpoint whose prefix is under 1,024 tokens is neither written nor read, and one at the very end
// of the prompt is not read (the model computes at least one token).
//
// Both caches key a prefix on the prompt's text, which the route renders from the JavaScript reading
// of the body. The provider renders an element the client wrote with a value JavaScript cannot keep
// (`1.0`, digits past 2^53, integer-like keys after others: openai-verbatim.ts) as sent; so the key of
// every prefix that reaches into such an element (and the routing hash, if the
// element starts within the first 256 tokens) also takes in the identity of its text
// ({@link OpenAiPromptMark}, {@link OpenAiPromptUnit.identity}): a request that differs from another
// only there shares its entries up to the element before, in the steps or breakpoints that end before
// the element begins.
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

/** Lifetime of an entry written at a breakpoint (GPT-5.6 on: `prompt_cache_options.ttl`, only `30m`). @unit ms */
export const OPENAI_BREAKPOINT_TTL_MS = 30 * 60_000;
/** Breakpoints a request writes (GPT-5.6 on), the implicit one counted among them. */
export const OPENAI_MAX_WRITTEN_BREAKPOINTS = 4;
/** Latest breakpoints of a request a read considers (GPT-5.6 on). */
export const OPENAI_MAX_MATCHED_BREAKPOINTS = 80;

/**
 * One item of a prompt as the simulator renders it (the tools, the instructions, each message or
 * input item), for the breakpoint cache: its text (breakpoint markers removed: they are not tokens),
 * whether one of its content blocks carries an explicit breakpoint, and whether it is a user or tool
 * message (where the implicit breakpoint goes).
 */
export interface OpenAiPromptUnit {
  text: string;
  breakpoint: boolean;
  userOrTool: boolean;
  /**
   * The identity of the text of the values in this unit that a JavaScript reading would write
   * differently from the client (openai-verbatim.ts); absent for all others.
   */
  identity?: string;
}

/**
 * Where an element of the prompt whose text a JavaScript reading would write differently begins (a
 * character offset in the rendered prompt), and the identity of that text: every prefix key that
 * reaches past `at` takes it in.
 */
export interface OpenAiPromptMark {
  at: number;
  identity: string;
}

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
  /** Written at a breakpoint: lives {@link OPENAI_BREAKPOINT_TTL_MS} from its write. */
  breakpoint?: true;
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
  /** Tokens written to the cache, billed as writes (GPT-5.6 on; 0 before). */
  writtenTokens: number;
  /** Its writes are breakpoint entries. */
  breakpoints?: true;
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
   * @param marks the elements of the prompt rendered otherwise than from the JavaScript reading, in
   *   the order they begin: each step that ends past one's start is keyed on its identity too.
   */
  plan(
    scope: string,
    prompt: string,
    promptCacheKey: string | undefined,
    retention: OpenAiCacheRetention = "in_memory",
    marks: readonly OpenAiPromptMark[] = [],
  ): OpenAiCachePlan {
    const now = this.#clock.now();
    const machine = this.#machineOf(scope, prompt, promptCacheKey, now, marks);
    const promptTokens = Math.ceil(prompt.length / CHARS_PER_TOKEN);
    const writes: string[] = [];
    if (promptTokens >= OPENAI_MIN_CACHED_TOKENS) {
      const hash = createHash("sha256");
      let mark = 0;
      // The last token is never served from the cache: the model must compute at least one.
      for (let end = STEP_CHARS; end <= prompt.length - CHARS_PER_TOKEN; end += STEP_CHARS) {
        hash.update(prompt.slice(end - STEP_CHARS, end));
        // An element that begins in this step: this prefix and every longer one hold its text.
        for (; mark < marks.length && marks[mark]!.at < end; mark++)
          hash.update(`\u0005${marks[mark]!.identity}`);
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
      writtenTokens: 0,
    };
  }

  /**
   * Plans one request to a model with explicit breakpoints (the GPT-5.6 family on; see the file's
   * head): the machine as {@link plan} routes, the longest prefix ending at one of its breakpoints
   * that is cached there, and the breakpoints it writes, with the tokens that writing costs.
   * @param units the prompt's items in order, rendered by the route.
   * @param mode `prompt_cache_options.mode`: `explicit` places no implicit breakpoint.
   */
  planBreakpoints(
    scope: string,
    units: readonly OpenAiPromptUnit[],
    promptCacheKey: string | undefined,
    mode: "implicit" | "explicit" = "implicit",
  ): OpenAiCachePlan {
    const now = this.#clock.now();
    const prompt = units.map((unit) => unit.text).join("\n");
    // Where each item ends in the prompt, in characters; the identities of the texts of the items up
    // to each one that a JavaScript reading would write otherwise, and where those items begin.
    const ends: number[] = [];
    const identities: string[] = [];
    const marks: OpenAiPromptMark[] = [];
    let length = -1;
    let identity = "";
    for (const unit of units) {
      if (unit.identity !== undefined) {
        identity += `\u0005${unit.identity}`;
        marks.push({ at: length + 1, identity: unit.identity });
      }
      length += unit.text.length + 1;
      ends.push(length);
      identities.push(identity);
    }
    const machine = this.#machineOf(scope, prompt, promptCacheKey, now, marks);
    const promptTokens = Math.ceil(prompt.length / CHARS_PER_TOKEN);
    const explicit = units.flatMap((unit, i) => (unit.breakpoint ? [i] : []));
    let implicit: number | undefined;
    if (mode === "implicit")
      for (let i = units.length - 1; i >= 0 && implicit === undefined; i--)
        if (units[i]!.userOrTool) implicit = i;
    const all = [...new Set([...explicit, ...(implicit === undefined ? [] : [implicit])])].sort(
      (a, b) => a - b,
    );
    const explicitWritten = explicit.slice(
      -(OPENAI_MAX_WRITTEN_BREAKPOINTS - (implicit === undefined ? 0 : 1)),
    );
    const written = [...new Set([...explicitWritten, ...(implicit === undefined ? [] : [implicit])])];
    const tokensAt = (i: number) => Math.ceil(ends[i]! / CHARS_PER_TOKEN);
    const keyAt = (i: number) => `bp:${sha(prompt.slice(0, ends[i]!) + identities[i]!)}`;
    const cacheable = (i: number) => tokensAt(i) >= OPENAI_MIN_CACHED_TOKENS;
    const entries = this.#machines.get(machine);
    let cachedTokens = 0;
    for (const i of all.slice(-OPENAI_MAX_MATCHED_BREAKPOINTS).reverse()) {
      // A prefix that is the whole prompt leaves the model nothing to compute: not read.
      if (!cacheable(i) || ends[i]! >= prompt.length) continue;
      const entry = entries?.get(keyAt(i));
      if (entry !== undefined && this.#alive(entry, now)) {
        cachedTokens = tokensAt(i);
        break;
      }
    }
    const writes = written.filter(cacheable).filter((i) => {
      const entry = entries?.get(keyAt(i));
      return entry === undefined || !this.#alive(entry, now);
    });
    const longestWrite = Math.max(0, ...writes.map(tokensAt));
    this.#reads++;
    if (cachedTokens > 0) this.#hits++;
    return {
      machine,
      promptTokens,
      cachedTokens,
      writes: writes.map(keyAt),
      retention: "in_memory",
      writtenTokens: Math.max(0, longestWrite - cachedTokens),
      breakpoints: true,
    };
  }

  /**
   * The machine a request goes to: by scope, the prompt's first 256 tokens (with the identities of
   * the marked elements that begin within them) and the key; the first 15 of a minute to the prefix's
   * machine, each further 15 spilled to another.
   */
  #machineOf(
    scope: string,
    prompt: string,
    promptCacheKey: string | undefined,
    now: number,
    marks: readonly OpenAiPromptMark[],
  ): string {
    const startChars = OPENAI_ROUTING_TOKENS * CHARS_PER_TOKEN;
    let start = prompt.slice(0, startChars);
    for (const mark of marks) if (mark.at < startChars) start += `\u0005${mark.identity}`;
    const route = sha(`${scope}\u0000${promptCacheKey ?? ""}\u0000${start}`);
    const recent = (this.#arrivals.get(route) ?? []).filter((t) => now - t < 60_000);
    recent.push(now);
    this.#arrivals.set(route, recent);
    const spill = Math.floor((recent.length - 1) / OPENAI_MACHINE_RATE_PER_MINUTE);
    return spill === 0 ? route : `${route}#${spill}`;
  }

  /** The response began: the request's prefixes are readable on its machine from now on. */
  commit(plan: OpenAiCachePlan): void {
    const now = this.#clock.now();
    let entries = this.#machines.get(plan.machine);
    if (entries === undefined) {
      entries = new Map();
      this.#machines.set(plan.machine, entries);
    }
    if (plan.breakpoints) {
      // Only breakpoints not cached were planned as writes: each is written afresh for 30 minutes.
      for (const key of plan.writes)
        entries.set(key, { writtenAt: now, usedAt: now, extended: false, breakpoint: true });
      return;
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
    if (entry.breakpoint) return now - entry.writtenAt < OPENAI_BREAKPOINT_TTL_MS;
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
