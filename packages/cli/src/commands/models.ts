// `forkd models [MODEL]`: the per-model facts every part of forkd uses (prices, minimum cacheable
// prompt, context window), so an operator can see what a run will be billed and cached by.
import { defaultPricingTable } from "@forkd/core";
import {
  contextWindowTokens,
  DEFAULT_CONTEXT_WINDOW_TOKENS,
  DEFAULT_MIN_CACHEABLE_TOKENS,
  MODEL_FACTS,
  minCacheableTokens,
  modelFacts,
} from "@forkd/protocol";
import type { CommandContext } from "../context.js";
import { formatInteger, renderTable } from "../format.js";
import { writeLine } from "../io.js";
import { COMMON_FLAGS, expectPositionals, parseCommandLine } from "../options.js";

const OPTIONS = {
  ...COMMON_FLAGS,
  json: { type: "boolean" },
  beta: { type: "string", multiple: true },
} as const;

/** What forkd knows of one model id, as `forkd models` shows it. */
export interface ModelReport {
  model: string;
  /** The facts row the id resolves to; `null` for a model forkd does not know. */
  family: string | null;
  /** From the price table (a `FORKD_PRICES` file first); `null` when unpriced, never 0. @unit USD per million tokens */
  inputUsdPerMTok: number | null;
  /** @unit USD per million tokens */
  outputUsdPerMTok: number | null;
  /** @unit tokens */
  minCacheableTokens: number;
  /** With the betas given. @unit tokens */
  contextWindowTokens: number;
  /** The beta that opens a longer window, if the model has one. */
  extendedContextBeta: string | null;
}

/** What forkd knows of `model`, sent with `betas`. */
export function reportModel(model: string, betas: readonly string[] = []): ModelReport {
  const price = defaultPricingTable.lookup(model);
  const facts = modelFacts(model);
  return {
    model,
    family: facts?.family ?? null,
    inputUsdPerMTok: price?.inputUsdPerMTok ?? null,
    outputUsdPerMTok: price?.outputUsdPerMTok ?? null,
    minCacheableTokens: minCacheableTokens(model),
    contextWindowTokens: contextWindowTokens(model, betas),
    extendedContextBeta: facts?.extendedContext?.beta ?? null,
  };
}

const usd = (value: number | null) => (value === null ? "unpriced" : `$${value}`);

/** Lists the model facts table, or what one model id resolves to. */
export async function run(args: string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine("models", args, OPTIONS);
  expectPositionals("models", positionals, { min: 0, max: 1, names: "[MODEL]" });
  const betas = values.beta ?? [];
  const models = positionals.length === 1 ? [positionals[0]!] : MODEL_FACTS.map((row) => row.family);
  const reports = models.map((model) => reportModel(model, betas));
  const out = context.io.stdout;
  if (values.json) {
    writeLine(out, JSON.stringify(positionals.length === 1 ? reports[0] : reports, null, 2));
    return 0;
  }
  const rows = reports.map((report) => [
    report.model,
    report.family ?? "unknown",
    usd(report.inputUsdPerMTok),
    usd(report.outputUsdPerMTok),
    formatInteger(report.minCacheableTokens),
    formatInteger(report.contextWindowTokens) +
      (report.extendedContextBeta !== null && !betas.includes(report.extendedContextBeta)
        ? ` (${formatInteger(modelFacts(report.model)?.extendedContext?.tokens ?? 0)} with ${report.extendedContextBeta})`
        : ""),
  ]);
  const header = ["MODEL", "FACTS ROW", "INPUT $/MTOK", "OUTPUT $/MTOK", "MIN CACHEABLE", "CONTEXT"];
  for (const line of renderTable([header, ...rows], ["left", "left", "right", "right", "right", "left"])) {
    writeLine(out, line);
  }
  if (reports.some((report) => report.family === null)) {
    writeLine(
      out,
      `unknown models are unpriced (add them with a FORKD_PRICES file) and get the defaults: ` +
        `minimum cacheable ${DEFAULT_MIN_CACHEABLE_TOKENS} tokens, context ${formatInteger(DEFAULT_CONTEXT_WINDOW_TOKENS)}`,
    );
  }
  return 0;
}
