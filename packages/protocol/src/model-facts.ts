/**
 * What forkd knows of each model, in one table for every package: list prices, the minimum
 * cacheable prompt length and the context window. `@forkd/core` prices usage and detects cache
 * breaks with it, the simulator caches and refuses over-long prompts with it, and the CLI shows it
 * (`forkd models`), so none of them can disagree.
 */

/** Beta that opens a 1M-token context window on models whose standard window is 200k. */
export const CONTEXT_1M_BETA = "context-1m-2025-08-07";

/** Everything forkd knows of one model family. */
export interface ModelFacts {
  /** Family name, e.g. `"claude-sonnet-4-6"`. */
  family: string;
  /** Model id prefixes of the family; `["claude-sonnet-4-5"]` matches `claude-sonnet-4-5-20250929`. */
  prefixes: readonly string[];
  /**
   * The row names whole model ids, not prefixes: it matches a prefix exactly or as a dated snapshot
   * of it (`gpt-5-2025-08-07`), never a longer id (`gpt-5.5` is not `gpt-5`). OpenAI names each model
   * and each family by its own id, so an id no row names is unknown, and unpriced.
   */
  wholeIds?: true;
  /** Base input price. @unit USD per million tokens */
  inputUsdPerMTok: number;
  /** Output price. @unit USD per million tokens */
  outputUsdPerMTok: number;
  /** A shorter prompt is not cached, and no error is raised. @unit tokens */
  minCacheableTokens: number;
  /** The longest prompt the model accepts without a beta. @unit tokens */
  contextWindowTokens: number;
  /** A longer window that a beta opens, when the model has one. */
  extendedContext?: { beta: string; tokens: number };
  /**
   * Price of a cached input token as a share of the input price, when not Anthropic's 0.1 (OpenAI:
   * 0.1 for GPT-5, 0.25 for GPT-4.1, 0.5 for GPT-4o).
   */
  cacheReadMultiplier?: number;
  /**
   * Price of a token written to the cache as a share of the input price, when not Anthropic's 1.25
   * (Gemini: 1, the creation billed as input, plus the storage of forkd's explicit cache for its TTL).
   */
  cacheWriteMultiplier?: number;
  /**
   * OpenAI, the GPT-5.6 family on: the prompt cache is written at breakpoints, implicit and explicit
   * (`prompt_cache_breakpoint` on a content block, `prompt_cache_options`), which older models do not
   * take.
   */
  explicitCacheBreakpoints?: true;
  /** Gemini: the storage price of an explicit cache. @unit USD per million tokens per hour */
  cacheStorageUsdPerMTokHour?: number;
  /**
   * Anthropic: the largest `max_tokens` the model takes; a larger one is refused with a 400
   * (`max_tokens: N > M, which is the maximum allowed number of output tokens for <model>`).
   * Absent: not known, nothing is checked. @unit tokens
   */
  maxOutputTokens?: number;
  /** Anthropic: the `thinking` types the model takes. Absent: not known, nothing is checked. */
  thinking?: ThinkingSupport;
  /**
   * Anthropic: the model refuses a request whose last message is an `assistant` turn (a prefill)
   * with a 400 (Claude 4.6 and every later model). Absent: prefill is accepted.
   */
  noPrefill?: true;
  /**
   * Anthropic: what the model takes of the sampling parameters. `exclusive`: `temperature` or
   * `top_p`, not both; `removed`: no `temperature` but its default, no `top_p`, no `top_k`. Absent:
   * not known, nothing is checked.
   */
  sampling?: "exclusive" | "removed";
  /**
   * OpenAI: a reasoning model (the GPT-5 families). Its Responses output starts with a reasoning
   * item, which a request that stores nothing gets back only encrypted, when it asks for it
   * (`include: ["reasoning.encrypted_content"]`), to send on with the next turn.
   */
  reasons?: true;
}

/**
 * Which `thinking: {type}` an Anthropic model takes. `budget`: `enabled` with `budget_tokens`, not
 * `adaptive` (Claude 3.7 to 4.5); `budget-or-adaptive`: both (Claude 4.6, where `enabled` is
 * deprecated); `adaptive`: only `adaptive`, `enabled` is refused (Opus 4.7 and every later model).
 */
export type ThinkingSupport = "budget" | "budget-or-adaptive" | "adaptive";

const K200 = 200_000;
const M1 = 1_000_000;
const EXTENDED_1M = { beta: CONTEXT_1M_BETA, tokens: M1 } as const;
const K128 = 128_000;
const ADAPTIVE_128K: OutputLimits = { maxOutputTokens: K128, thinking: "adaptive", noPrefill: true };
const BUDGET_64K: OutputLimits = { maxOutputTokens: 64_000, thinking: "budget" };
const BUDGET_OR_ADAPTIVE_128K: OutputLimits = {
  maxOutputTokens: K128,
  thinking: "budget-or-adaptive",
  noPrefill: true,
};

/** What an Anthropic model takes of a request's output settings (see {@link MODEL_FACTS}). */
interface OutputLimits {
  maxOutputTokens?: number;
  thinking?: ThinkingSupport;
  noPrefill?: true;
  sampling?: ModelFacts["sampling"];
}

function row(
  family: string,
  inputUsdPerMTok: number,
  minCacheableTokens: number,
  contextWindowTokens: number,
  output: OutputLimits,
  extendedContext?: ModelFacts["extendedContext"],
): ModelFacts {
  // Output is five times input for every Anthropic model.
  const facts: ModelFacts = {
    family,
    prefixes: [family],
    inputUsdPerMTok,
    outputUsdPerMTok: inputUsdPerMTok * 5,
    minCacheableTokens,
    contextWindowTokens,
  };
  if (extendedContext !== undefined) facts.extendedContext = extendedContext;
  if (output.maxOutputTokens !== undefined) facts.maxOutputTokens = output.maxOutputTokens;
  if (output.thinking !== undefined) facts.thinking = output.thinking;
  if (output.noPrefill !== undefined) facts.noPrefill = output.noPrefill;
  if (output.sampling !== undefined) facts.sampling = output.sampling;
  return facts;
}

/**
 * OpenAI models forkd prices and whose prompt caching the simulator models, each by its own id (a
 * dated snapshot of an id is that id; see {@link ModelFacts.wholeIds}): input, cached-input and
 * output prices from OpenAI's pricing page (as listed on 2026-11-05; the gpt-5.4, gpt-5.5 and
 * GPT-5.6 rows as third-party copies of that page and of OpenAI's GPT-5.6 help-center note report
 * them, see docs/llm.md), 1,024-token caching minimum from its prompt-caching guide. Cache writes
 * are free before the GPT-5.6 family and cost 1.25× input from it on (the guide).
 */
function openAiModelFacts(): ModelFacts[] {
  const openai = (
    family: string,
    input: number,
    output: number,
    read: number,
    window: number,
  ): ModelFacts => ({
    family,
    prefixes: [family],
    wholeIds: true,
    inputUsdPerMTok: input,
    outputUsdPerMTok: output,
    minCacheableTokens: 1024,
    contextWindowTokens: window,
    cacheReadMultiplier: read,
    ...(family.startsWith("gpt-5") ? { reasons: true as const } : {}),
  });
  // The GPT-5.6 family: explicit cache breakpoints, and writes billed at 1.25× input.
  const gpt56 = (family: string, input: number, output: number): ModelFacts => ({
    ...openai(family, input, output, 0.1, 400_000),
    cacheWriteMultiplier: 1.25,
    explicitCacheBreakpoints: true,
  });
  return [
    gpt56("gpt-5.6-sol", 5, 30),
    gpt56("gpt-5.6-terra", 2.5, 15),
    gpt56("gpt-5.6-luna", 1, 6),
    openai("gpt-5.5", 5, 30, 0.1, 400_000),
    openai("gpt-5.4", 2.5, 15, 0.1, 400_000),
    openai("gpt-5.4-mini", 0.75, 4.5, 0.1, 400_000),
    openai("gpt-5.4-nano", 0.2, 1.25, 0.1, 400_000),
    openai("gpt-5-codex", 1.25, 10, 0.1, 400_000),
    openai("gpt-5-mini", 0.25, 2, 0.1, 400_000),
    openai("gpt-5-nano", 0.05, 0.4, 0.1, 400_000),
    openai("gpt-5", 1.25, 10, 0.1, 400_000),
    openai("gpt-4.1-mini", 0.4, 1.6, 0.25, 1_047_576),
    openai("gpt-4.1", 2, 8, 0.25, 1_047_576),
    openai("gpt-4o-mini", 0.15, 0.6, 0.5, 128_000),
    openai("gpt-4o", 2.5, 10, 0.5, 128_000),
  ];
}

/**
 * How long forkd keeps a Gemini explicit cache (`@forkd/core`'s GEMINI_CACHE_TTL_SECONDS), which its
 * write price includes as storage. @unit seconds
 */
export const GEMINI_EXPLICIT_CACHE_TTL_SECONDS = 60;

/**
 * Gemini models forkd forks on: input, cached-input and output prices and the storage price of
 * explicit caches (per million tokens per hour) from Google's Gemini API pricing page (standard
 * tier, prompts up to 200k tokens), and the minimum token count of a cache from its context-caching
 * guide (1,024 for Flash, 4,096 for Pro). Creating a cache is billed as input; forkd's caches live
 * {@link GEMINI_EXPLICIT_CACHE_TTL_SECONDS}, so a token written costs input + its storage for that long.
 */
function geminiModelFacts(): ModelFacts[] {
  const gemini = (
    family: string,
    input: number,
    output: number,
    storage: number,
    minCache: number,
  ): ModelFacts => ({
    family,
    prefixes: [family],
    inputUsdPerMTok: input,
    outputUsdPerMTok: output,
    minCacheableTokens: minCache,
    contextWindowTokens: 1_048_576,
    cacheReadMultiplier: 0.1,
    cacheWriteMultiplier: 1 + (storage * GEMINI_EXPLICIT_CACHE_TTL_SECONDS) / 3600 / input,
    cacheStorageUsdPerMTokHour: storage,
  });
  return [
    gemini("gemini-2.5-pro", 1.25, 10, 4.5, 4096),
    gemini("gemini-2.5-flash-lite", 0.1, 0.4, 1, 1024),
    gemini("gemini-2.5-flash", 0.3, 2.5, 1, 1024),
    gemini("gemini-3-pro", 2, 12, 4.5, 4096),
    gemini("gemini-3-flash", 0.5, 3, 1, 1024),
  ];
}

/**
 * The facts of every model id the `@anthropic-ai/sdk` `Model` type names, and of older families
 * still in use. A model id takes the row with the longest matching prefix, so `claude-opus-4-5`
 * is told apart from the older `claude-opus-4*` and `claude-opus-5-5` from `claude-opus-5`.
 *
 * - Prices (standard context, no batch discount): read on 2026-11-25 from the cost the real
 *   Claude Code CLI 2.1.331 computes for its own requests (`modelUsage[m].costUSD`).
 * - Minimum cacheable length: Anthropic's prompt-caching documentation and launch notes.
 * - Context window: what Claude Code 2.1.331 reports per model (`modelUsage[m].contextWindow`);
 *   200k models that accept the `context-1m` beta open 1M with it.
 * - Output ceiling (`maxOutputTokens`): the `max_output_tokens.upper` of Claude Code 2.1.332's own
 *   model table (in its binary); Claude 3 Opus and Haiku (not in it): 4,096, as the API's refusal
 *   of `max_tokens: 8000` for `claude-3-haiku-20240307` reports it.
 * - Thinking: `adaptive` where that table lists the `adaptive_thinking` capability (Claude Code
 *   sends `{type: "adaptive"}` to those models and `{type: "enabled", budget_tokens}` to the others);
 *   `enabled` refused from Opus 4.7 on (Anthropic's extended-thinking documentation: "Returns a 400
 *   error on Claude Opus 4.7 and later"; refusals measured on Opus 4.8, Opus 5, Sonnet 5 and Fable 5,
 *   handochan/aelix-ai#258), so only the 4.6 models take both.
 * - Prefill (`noPrefill`): refused from the 4.6 models on. Anthropic's migration guide
 *   (https://platform.claude.com/docs/en/about-claude/models/migration-guide): "Prefilling assistant
 *   messages returns a 400 error on Claude 4.6 models"; the SDK's `messages` doc comment: "On models
 *   that don't support prefill, creating a message that ends with a partial `assistant` response
 *   returns a 400 error"; refusals reported on Opus 4.7 and 4.8 (ericc-ch/copilot-api#261), Sonnet 5
 *   (cortexkit/magic-context#511) and Fable 5 (vybestack/llxprt-code#3695), and for "4.6+ models"
 *   in general, so every later row refuses it too.
 * - Sampling (`sampling`): `removed` where Anthropic's `claude-api` skill (anthropics/skills,
 *   shared/error-codes.md) says "`temperature`, `top_p`, `top_k` are removed - sending any of them
 *   returns 400" (Claude Opus 5, Fable 5 and 5.1, Opus 4.8 and 4.7; "any non-default value", the
 *   Opus 4.7 notes as anomalyco/models.dev#1468 quotes them); `exclusive` where the API's refusal of
 *   both `temperature` and `top_p` is on record (Sonnet 4.5 and 4.6, Opus 4.5: langfuse/langfuse#9882,
 *   Vali-98/ChatterUI#564, JohnnyZ93/oai-compatible-copilot#81) or the migration notes say so of the
 *   4.5 and 4.6 models (the skill's model-migration.md: "on Claude 4.x keep at most one of
 *   `temperature` or `top_p`"). Other rows are not checked.
 */
export const MODEL_FACTS: readonly ModelFacts[] = [
  row("claude-fable-5-2", 8, 512, M1, ADAPTIVE_128K),
  row("claude-mythos-5-2", 8, 512, M1, ADAPTIVE_128K),
  row("claude-haiku-5-5", 0.1, 1024, M1, ADAPTIVE_128K),
  row("claude-sonnet-5-5", 2, 1024, M1, ADAPTIVE_128K),
  row("claude-opus-5-5", 4, 512, M1, ADAPTIVE_128K),
  row("claude-fable-5-1", 10, 512, M1, { ...ADAPTIVE_128K, sampling: "removed" }),
  row("claude-mythos-5-1", 10, 512, M1, ADAPTIVE_128K),
  row("claude-fable-5", 10, 512, M1, { ...ADAPTIVE_128K, sampling: "removed" }),
  // Claude Code lists no thinking capability for it: its thinking is not known.
  row("claude-mythos-5", 10, 512, M1, { maxOutputTokens: K128, noPrefill: true }),
  row("claude-sonnet-5", 2, 1024, M1, ADAPTIVE_128K),
  row("claude-opus-5", 5, 512, M1, { ...ADAPTIVE_128K, sampling: "removed" }),
  row("claude-mythos-preview", 4, 1024, M1, { noPrefill: true }),
  row("claude-opus-4-8", 5, 1024, M1, { ...ADAPTIVE_128K, sampling: "removed" }),
  row("claude-opus-4-7", 5, 2048, M1, { ...ADAPTIVE_128K, sampling: "removed" }),
  row("claude-opus-4-6", 5, 4096, K200, { ...BUDGET_OR_ADAPTIVE_128K, sampling: "exclusive" }, EXTENDED_1M),
  row("claude-opus-4-5", 5, 4096, K200, { ...BUDGET_64K, sampling: "exclusive" }),
  row("claude-sonnet-4-6", 3, 1024, K200, { ...BUDGET_OR_ADAPTIVE_128K, sampling: "exclusive" }, EXTENDED_1M),
  row("claude-sonnet-4-5", 3, 1024, K200, { ...BUDGET_64K, sampling: "exclusive" }, EXTENDED_1M),
  row("claude-haiku-4-5", 1, 4096, K200, { ...BUDGET_64K, sampling: "exclusive" }),
  row("claude-opus-4", 15, 1024, K200, { maxOutputTokens: 32_000, thinking: "budget" }),
  row("claude-sonnet-4", 3, 1024, K200, BUDGET_64K, EXTENDED_1M),
  // 64k, or 128k with the `output-128k-2025-02-19` beta: its ceiling is left unchecked.
  row("claude-3-7-sonnet", 3, 1024, K200, { thinking: "budget" }),
  row("claude-3-5-sonnet", 3, 1024, K200, { maxOutputTokens: 8192 }),
  row("claude-3-5-haiku", 0.8, 2048, K200, { maxOutputTokens: 8192 }),
  row("claude-3-opus", 15, 1024, K200, { maxOutputTokens: 4096 }),
  row("claude-3-haiku", 0.25, 2048, K200, { maxOutputTokens: 4096 }),
  ...openAiModelFacts(),
  ...geminiModelFacts(),
];

/** Minimum cacheable length of a model no row of {@link MODEL_FACTS} matches. @unit tokens */
export const DEFAULT_MIN_CACHEABLE_TOKENS = 1024;
/** Context window of a model no row of {@link MODEL_FACTS} matches. @unit tokens */
export const DEFAULT_CONTEXT_WINDOW_TOKENS = K200;

/**
 * A model id without its provider's qualifiers: `anthropic.claude-…-v1:0` (Bedrock, with an
 * optional region prefix such as `us.`), `claude-…@20250929` (Vertex), `anthropic/claude-…`
 * (routers) all name the Anthropic model `claude-…`.
 */
export function normaliseModelId(model: string): string {
  return model
    .trim()
    .toLowerCase()
    .replace(/^(?:[a-z]{2}\.)?anthropic[./]/, "")
    .replace(/@.*$/, "");
}

/** A dated snapshot's suffix: `-2025-08-07`. */
const SNAPSHOT_SUFFIX = /^-\d{4}-\d{2}-\d{2}$/;

/**
 * A lookup of rows by the longest id prefix, after provider qualifiers are removed. A row with
 * `wholeIds` matches only its ids and their dated snapshots (see {@link ModelFacts.wholeIds}).
 */
export function longestPrefixLookup<Row extends { prefixes: readonly string[]; wholeIds?: true }>(
  rows: readonly Row[],
): (model: string) => Row | undefined {
  const byPrefix = rows
    .flatMap((entry) => entry.prefixes.map((prefix) => ({ prefix: prefix.toLowerCase(), entry })))
    .sort((a, b) => b.prefix.length - a.prefix.length);
  return (model) => {
    const id = normaliseModelId(model);
    return byPrefix.find(
      ({ prefix, entry }) =>
        id.startsWith(prefix) &&
        (entry.wholeIds !== true || id === prefix || SNAPSHOT_SUFFIX.test(id.slice(prefix.length))),
    )?.entry;
  };
}

/** The row of {@link MODEL_FACTS} for `model`, or `undefined` when forkd does not know it. */
export const modelFacts: (model: string) => ModelFacts | undefined = longestPrefixLookup(MODEL_FACTS);

/**
 * The minimum cacheable prompt length of a model.
 * @param overrides exact model name or name prefix → tokens, checked first (longest prefix wins)
 */
export function minCacheableTokens(model: string, overrides?: Readonly<Record<string, number>>): number {
  if (overrides !== undefined) {
    let best: [string, number] | undefined;
    for (const [prefix, tokens] of Object.entries(overrides)) {
      if (model.startsWith(prefix) && (best === undefined || prefix.length > best[0].length))
        best = [prefix, tokens];
    }
    if (best !== undefined) return best[1];
  }
  return modelFacts(model)?.minCacheableTokens ?? DEFAULT_MIN_CACHEABLE_TOKENS;
}

/**
 * The longest prompt `model` accepts when sent with `betas`: its extended window when one of the
 * betas opens it, else its standard window.
 */
export function contextWindowTokens(model: string, betas: readonly string[] = []): number {
  const facts = modelFacts(model);
  if (facts === undefined) return DEFAULT_CONTEXT_WINDOW_TOKENS;
  const extended = facts.extendedContext;
  return extended !== undefined && betas.includes(extended.beta)
    ? extended.tokens
    : facts.contextWindowTokens;
}
