// From a fork's inputs to what its turn loop needs: the child's request, where its breakpoint is,
// and the cache keys that tell a cache break from a cold start. The in-process fork and the daemon
// both start a run here, so a child is the same request wherever it runs.
import { type ForkCall, type ForkPrefix, modelFacts } from "@forkd/protocol";
import type { MessageBlockLocation } from "./breakpoints.js";
import type { CacheBreakCheck } from "./cache-break.js";
import { type DiagnosisLayerHashes, diagnosisLayersOf } from "./cache-diagnosis.js";
import { type CacheKey, computeCacheKey } from "./cache-key.js";
import type { WorktreeMapping } from "./directive.js";
import { InvalidForkParamsError } from "./errors.js";
import { buildForkedRequest, DEFAULT_MAX_TOKENS } from "./forked-request.js";
import type { LlmRequest } from "./llm-client.js";

/** What the parent (or its spec) asks of one child. */
export interface ForkRunInput {
  runId: string;
  /** The inherited prefix, or a default request's when the parent shared none. */
  prefix: ForkPrefix;
  /** True when {@link prefix} is the parent's own, so the child can read the parent's cache. */
  cacheShared: boolean;
  directive: string;
  forkCall?: ForkCall | undefined;
  worktree?: WorktreeMapping | undefined;
  /** The spec's overrides: another model, output budget or system reminder for this child. */
  overrides?:
    | { model?: string | undefined; max_tokens?: number | undefined; system_reminder?: string | undefined }
    | undefined;
  /**
   * Output tokens when neither the overrides nor the parent's request name them.
   * @default DEFAULT_MAX_TOKENS
   */
  defaultMaxTokens?: number | undefined;
  /** The most output tokens the runner allows, whatever was asked. @default no ceiling */
  maxTokensCeiling?: number | undefined;
  /** See `BuildForkedRequestOptions.strictAlternation`. */
  strictAlternation?: boolean | undefined;
}

/** What {@link prepareForkRun} derives: the turn loop's request and cache options. */
export interface ForkRunPlan {
  request: LlmRequest;
  /** Where the fork's breakpoint went; the turn loop moves it as the conversation grows. */
  forkBreakpoint: MessageBlockLocation | null;
  /** Set when the child shares the parent's cache: what its first turn must read. */
  cacheCheck?: CacheBreakCheck;
  /** The parent prefix's cache key, recorded on `started`; null when nothing is shared. */
  prefixHash: string | null;
  systemReminder?: string;
}

/**
 * The provider refuses a request whose `max_tokens` is not above its `thinking.budget_tokens`. A child
 * keeps the parent's `thinking` (changing it would lose the parent's cached messages), so an output
 * budget lowered to or below it (by the spec's override or the runner's ceiling) fails here, with the
 * reason, rather than as the provider's 400 after a round trip.
 * @param cappedBy what lowered the asked budget to `maxTokens`, when something did
 * @throws {@link InvalidForkParamsError} (field `max_tokens`)
 */
function checkThinkingBudget(prefix: ForkPrefix, maxTokens: number, cappedBy: string | undefined): void {
  const thinking = prefix.params.thinking as { type?: unknown; budget_tokens?: unknown } | undefined;
  if (thinking?.type !== "enabled" || typeof thinking.budget_tokens !== "number") return;
  if (maxTokens > thinking.budget_tokens) return;
  const why = cappedBy ?? "max_tokens";
  throw new InvalidForkParamsError(
    "max_tokens",
    `${why} (${maxTokens}) is not above the parent's thinking budget (${thinking.budget_tokens}): ` +
      "the provider refuses such a request, and the child keeps the parent's thinking settings to read its cache. " +
      "Give the child more output tokens than the thinking budget.",
  );
}

/**
 * A child keeps its parent's `thinking`, and a model override may name a model that refuses it:
 * `enabled` on a model that thinks only adaptively (Opus 4.7 on), `adaptive` on one that cannot
 * (before 4.6). Refused here, naming both, rather than as the provider's 400 after a round trip.
 * A model whose thinking forkd does not know is let through.
 * @throws {@link InvalidForkParamsError} (field `model`)
 */
function checkThinkingType(prefix: ForkPrefix, model: string): void {
  const type = (prefix.params.thinking as { type?: unknown } | undefined)?.type;
  const support = modelFacts(model)?.thinking;
  const refused =
    (type === "enabled" && support === "adaptive") || (type === "adaptive" && support === "budget");
  if (!refused) return;
  throw new InvalidForkParamsError(
    "model",
    `${model} does not take the parent's thinking (type "${type}"), which a child keeps to read the parent's messages: ` +
      `${model} thinks ${support === "adaptive" ? "only adaptively" : "only with a token budget"}. ` +
      "Fork onto a model that takes the parent's thinking, or leave the model as the parent's.",
  );
}

/**
 * Builds one child's run: its request (the parent's prefix, the reply, the directive), the output
 * budget (`overrides.max_tokens`, else the parent's, else the default, capped by the runner's ceiling
 * and by the child's model's own, when known: `max_tokens` is not in the cache key, and a parent's
 * 128k on Opus would otherwise fail a child on a 64k model) and the cache keys of the parent's prefix
 * and of the child's (a model override changes the latter).
 * @throws {@link InvalidForkParamsError} when the output budget is not above the parent's thinking
 * budget, when a model override does not take the parent's thinking, or for an invalid run id or an
 * empty directive.
 */
export function prepareForkRun(input: ForkRunInput): ForkRunPlan {
  const { prefix, overrides = {} } = input;
  const model = overrides.model ?? prefix.params.model;
  if (model !== prefix.params.model) checkThinkingType(prefix, model);
  const asked =
    overrides.max_tokens ?? prefix.params.max_tokens ?? input.defaultMaxTokens ?? DEFAULT_MAX_TOKENS;
  const runnerCeiling = input.maxTokensCeiling ?? Number.POSITIVE_INFINITY;
  const modelCeiling = modelFacts(model)?.maxOutputTokens ?? Number.POSITIVE_INFINITY;
  const maxTokens = Math.min(asked, runnerCeiling, modelCeiling);
  const cappedBy =
    asked <= maxTokens
      ? undefined
      : maxTokens === runnerCeiling
        ? "the runner's ceiling on output tokens"
        : `${model}'s ceiling on output tokens`;
  checkThinkingBudget(prefix, maxTokens, cappedBy);
  const forked = buildForkedRequest(prefix, {
    runId: input.runId,
    directive: input.directive,
    maxTokens,
    forkCall: input.forkCall,
    worktree: input.worktree,
    model: overrides.model,
    systemReminder: overrides.system_reminder,
    strictAlternation: input.strictAlternation,
  });
  const plan: ForkRunPlan = { request: forked.request, forkBreakpoint: forked.breakpoint, prefixHash: null };
  if (overrides.system_reminder !== undefined) plan.systemReminder = overrides.system_reminder;
  if (input.cacheShared) {
    plan.prefixHash = cacheKeyOf(prefix).hash;
    // Hashed only when a first turn misses (the check reads them then): never before the request,
    // and never for a child that read its prefix.
    let layers: { parent: DiagnosisLayerHashes; child: DiagnosisLayerHashes } | undefined;
    const hashed = () =>
      (layers ??= {
        parent: diagnosisLayersOf(prefix.params, prefix.betas),
        // The child's request as built: the parent's head, the reply, the directive. Only the head counts.
        child: diagnosisLayersOf(forked.request, forked.request.betas, prefix.params.messages),
      });
    plan.cacheCheck = {
      get parentLayers() {
        return hashed().parent;
      },
      get prefixLayers() {
        return hashed().child;
      },
    };
    const parentCached = cachedTokensOf(prefix.reply);
    if (parentCached !== undefined) plan.cacheCheck.parentCachedTokens = parentCached;
  }
  return plan;
}

/**
 * The input tokens the parent's request had up to its last breakpoint, from the usage of its reply
 * when the prefix carries the provider's whole response (as the proxy and the recorded turns do):
 * `undefined` when it does not, or when nothing was cached.
 */
export function cachedTokensOf(reply: ForkPrefix["reply"]): number | undefined {
  const usage = (reply as { usage?: unknown } | undefined)?.usage;
  if (typeof usage !== "object" || usage === null) return undefined;
  const { cache_read_input_tokens: read, cache_creation_input_tokens: written } = usage as Record<
    string,
    unknown
  >;
  const cached = (typeof read === "number" ? read : 0) + (typeof written === "number" ? written : 0);
  return Number.isSafeInteger(cached) && cached > 0 ? cached : undefined;
}

// Siblings share one prefix object (a fan-out passes the same one; the daemon's prefix cache hands
// out the same one), so the cache key of a 48k-token parent is computed once, not once per child.
const cacheKeys = new WeakMap<ForkPrefix, CacheKey>();
function cacheKeyOf(prefix: ForkPrefix): CacheKey {
  let key = cacheKeys.get(prefix);
  if (key === undefined) {
    key = computeCacheKey(prefix.params, prefix.betas);
    cacheKeys.set(prefix, key);
  }
  return key;
}
