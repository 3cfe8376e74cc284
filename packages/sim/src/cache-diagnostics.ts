/**
 * Cache diagnostics, as Anthropic documents them ("Cache diagnostics", and the SDK's `Diagnostics`,
 * `DiagnosticsParam` and `CacheMiss*` types): a request that carries a `diagnostics` object opts in,
 * and the simulator keeps a fingerprint of it (hashes and token counts, never content) under its
 * response's `id`, in its cache scope. A later request naming that id as
 * `diagnostics.previous_message_id` is compared with it and its response carries
 * `diagnostics: { cache_miss_reason }` at the first divergence — or `diagnostics: null` when there is
 * none. The comparison is about the request's structure, whatever the cache did.
 *
 * Order of the comparison, as the prompt is laid out: model (and `speed`), tools, system, then the
 * messages; `tool_choice` or `thinking` changed with model, tools and system equal is `unavailable`,
 * as the SDK documents. Messages must only have been appended to: a change in an earlier entry is
 * `messages_changed`. `cache_missed_input_tokens` is the earlier request's input tokens from the
 * divergence on: what a matching prefix would have read.
 */
import { createHash } from "node:crypto";
import { invalidRequest } from "./errors.js";
import type { PromptLayout } from "./prompt.js";

/** What a response's `diagnostics.cache_miss_reason` says (the SDK's `CacheMissReason`). */
export type CacheMissReason =
  | {
      type: "model_changed" | "tools_changed" | "system_changed" | "messages_changed";
      cache_missed_input_tokens: number;
    }
  | { type: "previous_message_not_found" }
  | { type: "unavailable" };

/** A response's top-level `diagnostics` (the SDK's `Diagnostics | null`). */
export type ResponseDiagnostics = { cache_miss_reason: CacheMissReason | null } | null;

/** The part of a request the fingerprint keeps. */
interface Fingerprint {
  model: string;
  tools: string;
  system: string;
  messagesContext: string;
  /** One hash per message, by index. */
  messages: string[];
  /** Input tokens before the system blocks, before the messages, and before each message. */
  tokensBeforeSystem: number;
  tokensBeforeMessages: number;
  tokensBeforeMessage: number[];
  totalTokens: number;
}

/** Fingerprints kept at most; the oldest go first (the API keeps them "for a limited time"). */
export const MAX_FINGERPRINTS = 10_000;

function hash(parts: readonly string[]): string {
  const h = createHash("sha256");
  for (const part of parts) h.update(part).update("\u0000");
  return h.digest("base64url");
}

function fingerprintOf(layout: PromptLayout, speed: unknown, messageCount: number): Fingerprint {
  const tools: string[] = [];
  const system: string[] = [];
  const perMessage: string[][] = Array.from({ length: messageCount }, () => []);
  const tokensBeforeMessage: number[] = new Array<number>(messageCount).fill(-1);
  let tokensBeforeSystem = -1;
  let tokensBeforeMessages = -1;
  let tokens = layout.overheadTokens;
  for (const block of layout.blocks) {
    if (block.segment !== "tools" && tokensBeforeSystem < 0) tokensBeforeSystem = tokens;
    if (block.segment === "messages" && tokensBeforeMessages < 0) tokensBeforeMessages = tokens;
    if (block.segment === "messages" && tokensBeforeMessage[block.index]! < 0) {
      tokensBeforeMessage[block.index] = tokens;
    }
    const part = `${block.header}\u0001${block.content}`;
    if (block.segment === "tools") tools.push(part);
    else if (block.segment === "system") system.push(part);
    else perMessage[block.index]!.push(part);
    tokens += block.tokens;
  }
  if (tokensBeforeSystem < 0) tokensBeforeSystem = tokens;
  if (tokensBeforeMessages < 0) tokensBeforeMessages = tokens;
  // A message without blocks starts where the next one does.
  for (let i = messageCount - 1; i >= 0; i--) {
    if (tokensBeforeMessage[i]! < 0) tokensBeforeMessage[i] = tokensBeforeMessage[i + 1] ?? tokens;
  }
  return {
    model: `${layout.model}\u0000${speed === undefined ? "" : JSON.stringify(speed)}`,
    tools: hash(tools),
    system: hash(system),
    messagesContext: layout.messagesContext,
    messages: perMessage.map((parts, i) => hash([String(i), ...parts])),
    tokensBeforeSystem,
    tokensBeforeMessages,
    tokensBeforeMessage,
    totalTokens: layout.totalTokens,
  };
}

/** Where `current` leaves `previous`, or `null` when it only appended to it. */
export function compareFingerprints(previous: Fingerprint, current: Fingerprint): CacheMissReason | null {
  const missedFrom = (tokensBefore: number) => Math.max(0, previous.totalTokens - tokensBefore);
  if (previous.model !== current.model) {
    return { type: "model_changed", cache_missed_input_tokens: missedFrom(0) };
  }
  if (previous.tools !== current.tools) {
    return { type: "tools_changed", cache_missed_input_tokens: missedFrom(0) };
  }
  if (previous.system !== current.system) {
    return { type: "system_changed", cache_missed_input_tokens: missedFrom(previous.tokensBeforeSystem) };
  }
  if (previous.messagesContext !== current.messagesContext) return { type: "unavailable" };
  for (let i = 0; i < previous.messages.length; i++) {
    if (previous.messages[i] !== current.messages[i]) {
      return {
        type: "messages_changed",
        cache_missed_input_tokens: missedFrom(
          previous.tokensBeforeMessage[i] ?? previous.tokensBeforeMessages,
        ),
      };
    }
  }
  return null;
}

/**
 * The `diagnostics` request object: absent (`undefined`: no opt-in), or the id to compare with
 * (`null`: opted in on a first turn).
 * @throws {SimApiError} 400 when it is not an object with an optional string-or-null `previous_message_id`
 */
export function diagnosticsParamOf(body: unknown): { previousMessageId: string | null } | undefined {
  const value = (body as { diagnostics?: unknown }).diagnostics;
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object" || Array.isArray(value)) {
    throw invalidRequest("diagnostics: Input should be an object");
  }
  const id = (value as { previous_message_id?: unknown }).previous_message_id;
  if (id !== undefined && id !== null && typeof id !== "string") {
    throw invalidRequest("diagnostics.previous_message_id: Input should be a valid string");
  }
  return { previousMessageId: id ?? null };
}

/** The fingerprints of requests that opted in, by cache scope and response id. */
export class CacheDiagnostics {
  readonly #fingerprints = new Map<string, Fingerprint>();
  readonly #limit: number;

  /** @param limit fingerprints kept. @default MAX_FINGERPRINTS */
  constructor(limit: number = MAX_FINGERPRINTS) {
    this.#limit = limit;
  }

  /**
   * Records the request answered by `messageId` and returns its response's `diagnostics`: the
   * comparison with `previousMessageId` (in the same scope), or `null` on a first turn or when the
   * request only appended to the earlier one.
   */
  diagnose(
    scope: string,
    messageId: string,
    previousMessageId: string | null,
    layout: PromptLayout,
    speed: unknown,
    messageCount: number,
  ): ResponseDiagnostics {
    const current = fingerprintOf(layout, speed, messageCount);
    this.#fingerprints.set(`${scope}\u0000${messageId}`, current);
    if (this.#fingerprints.size > this.#limit) {
      this.#fingerprints.delete(this.#fingerprints.keys().next().value as string);
    }
    if (previousMessageId === null) return null;
    const previous = this.#fingerprints.get(`${scope}\u0000${previousMessageId}`);
    if (previous === undefined) return { cache_miss_reason: { type: "previous_message_not_found" } };
    const reason = compareFingerprints(previous, current);
    return reason === null ? null : { cache_miss_reason: reason };
  }
}
