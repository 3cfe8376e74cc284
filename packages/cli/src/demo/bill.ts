// The demo's bill, measured from the usage the provider reported: the parent's own turn, each child,
// their total, the same children sent without forking, and the saving. Priced with core's pricing
// table for the request's model.
import { defaultPricingTable, UsageAccumulator } from "@forkd/core";
import type { ProviderUsage } from "@forkd/protocol";
import {
  type Align,
  formatElapsed,
  formatInteger,
  formatPercent,
  formatUsd,
  renderTable,
} from "../format.js";
import type { Style } from "../io.js";
import { type CacheMissSummary, formatCacheMiss } from "../run-tracker.js";

/** Tokens by price class, and their cost. */
export interface TokenLine {
  input: number;
  cacheWrite: number;
  cacheRead: number;
  output: number;
  /** `null` when the model is not in the pricing table. @unit USD */
  costUsd: number | null;
}

/** One child in the bill. */
export interface ChildBill extends TokenLine {
  index: number;
  label: string;
  runId: string;
  status: string;
  daemonId: string | undefined;
  durationMs: number | undefined;
  /** What the child's `cache.break` said, when it read less than its prefix allows. */
  cacheMiss?: CacheMissSummary | undefined;
}

/** Everything the demo measured. */
export interface DemoBill {
  model: string;
  parent: TokenLine & { durationMs: number };
  children: ChildBill[];
  /** The sum of {@link children}. */
  forked: TokenLine;
  /** Each child's whole context sent as one fresh request without cache, in child order. */
  unforkedChildren: TokenLine[];
  /** The sum of {@link unforkedChildren}. */
  unforked: TokenLine;
  /** `unforked − forked`. @unit USD */
  savingUsd: number | null;
  /** `savingUsd / unforked`, 0..1. */
  savingShare: number | null;
}

/** Sums the responses of one model into a line. */
export function lineOf(model: string, usages: readonly ProviderUsage[]): TokenLine {
  const accumulator = new UsageAccumulator(defaultPricingTable);
  for (const usage of usages) accumulator.add(model, usage);
  const totals = accumulator.totals;
  return {
    input: totals.input_tokens,
    cacheWrite: totals.cache_write_5m_tokens + totals.cache_write_1h_tokens,
    cacheRead: totals.cache_read_tokens,
    output: totals.output_tokens,
    costUsd: totals.cost_usd,
  };
}

// Sums of prices rounded to the 1e-8 the accumulator uses, so a total equals the sum of its rows.
const roundUsd = (usd: number) => Math.round(usd * 1e8) / 1e8;

/** The sum of `lines`; the cost is null when any is. */
export function sumLines(lines: readonly TokenLine[]): TokenLine {
  return lines.reduce<TokenLine>(
    (sum, line) => ({
      input: sum.input + line.input,
      cacheWrite: sum.cacheWrite + line.cacheWrite,
      cacheRead: sum.cacheRead + line.cacheRead,
      output: sum.output + line.output,
      costUsd: sum.costUsd === null || line.costUsd === null ? null : roundUsd(sum.costUsd + line.costUsd),
    }),
    { input: 0, cacheWrite: 0, cacheRead: 0, output: 0, costUsd: 0 },
  );
}

/** Puts the measurements together and works out the saving. */
export function makeBill(input: {
  model: string;
  parent: TokenLine & { durationMs: number };
  children: ChildBill[];
  unforkedChildren: TokenLine[];
}): DemoBill {
  const forked = sumLines(input.children);
  const unforked = sumLines(input.unforkedChildren);
  const savingUsd =
    forked.costUsd === null || unforked.costUsd === null ? null : roundUsd(unforked.costUsd - forked.costUsd);
  const savingShare =
    savingUsd === null || unforked.costUsd === null || unforked.costUsd === 0
      ? null
      : savingUsd / unforked.costUsd;
  return { ...input, forked, unforked, savingUsd, savingShare };
}

/** The share of a line's input tokens read from the cache, 0..1 (0 without input). */
export function cacheShareOf(line: TokenLine): number {
  const prompt = line.input + line.cacheWrite + line.cacheRead;
  return prompt === 0 ? 0 : line.cacheRead / prompt;
}

function cells(line: TokenLine): string[] {
  return [
    formatInteger(line.input),
    formatInteger(line.cacheWrite),
    formatInteger(line.cacheRead),
    formatPercent(cacheShareOf(line)),
    formatInteger(line.output),
    formatUsd(line.costUsd),
  ];
}

/** The bill as an aligned table, with a line on what the comparison means. */
export function renderBill(bill: DemoBill, style: Style): string[] {
  const n = bill.children.length;
  const rows: string[][] = [
    ["", "input", "cache write", "cache read", "cached", "output", "cost", "daemon", "time", "cache miss"],
    ["parent turn (wrote the cache)", ...cells(bill.parent), "", formatElapsed(bill.parent.durationMs), ""],
    ...bill.children.map((child) => [
      `child ${child.index}  ${child.label}`,
      ...cells(child),
      child.daemonId ?? "-",
      child.status === "completed" ? formatElapsed(child.durationMs ?? 0) : child.status,
      child.cacheMiss === undefined ? "" : formatCacheMiss(child.cacheMiss),
    ]),
    [`forked total (${n} ${n === 1 ? "child" : "children"})`, ...cells(bill.forked), "", "", ""],
    [`without forking (${n} fresh ${n === 1 ? "request" : "requests"})`, ...cells(bill.unforked), "", "", ""],
  ];
  const align: Align[] = [
    "left",
    "right",
    "right",
    "right",
    "right",
    "right",
    "right",
    "left",
    "right",
    "left",
  ];
  const lines = renderTable(rows, align);
  const saving =
    bill.savingUsd === null
      ? "saving: unknown (the model is not in the pricing table)"
      : `saving: ${formatUsd(bill.savingUsd)} (${formatPercent(bill.savingShare ?? 0)}) of the children's cost`;
  return [
    style.bold(lines[0]!),
    lines[1]!,
    ...lines.slice(2, 2 + n),
    style.bold(lines[2 + n]!),
    lines[3 + n]!,
    style.bold(style.green(saving)),
    style.dim(
      `priced at ${bill.model} list prices; the parent's own turn is paid with and without forks, so it is not in the saving`,
    ),
  ];
}
