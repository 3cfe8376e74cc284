// Folds a run's events into what the CLI shows of it (status, daemon, turn, tokens, cache-read share,
// cost, elapsed), and describes one event in one line. Shared by fork, watch and demo.
import { UsageAccumulator } from "@forkd/core";
import type { ForkEvent, ForkEventOf, UsageTotals } from "@forkd/protocol";
import {
  formatClock,
  formatCompact,
  formatElapsed,
  formatInteger,
  formatPercent,
  formatUsd,
  oneLine,
} from "./format.js";

/** Where a run is, as the CLI shows it. `timeout` is a `failed` event with code `timeout`. */
export type RunDisplayStatus = "queued" | "running" | "completed" | "failed" | "timeout" | "aborted";

/** What the CLI knows of one run. */
export interface RunRow {
  readonly runId: string;
  label: string | undefined;
  status: RunDisplayStatus;
  /** What it does now: `waiting for the model`, `streaming`, `tool Read`… */
  activity: string;
  daemonId: string | undefined;
  attempt: number;
  turn: number;
  model: string | undefined;
  /** Usage summed over `llm.message` events; replaced by the terminal event's totals. */
  usage: UsageTotals;
  /** First event's time. @unit ms since epoch */
  firstEventAt: number | undefined;
  /** Terminal event's time. @unit ms since epoch */
  endedAt: number | undefined;
  lastSeq: number;
  /** The error or abort reason of a run that did not complete. */
  problem: string | undefined;
  /** The completed run's final text. */
  finalText: string | undefined;
  /** Characters streamed in the current turn (the usage arrives only with the turn's message). */
  streamedChars: number;
  /** Set by a `cache.break`: the run read less from the cache than its prefix allows. */
  cacheMiss: CacheMissSummary | undefined;
}

/** What a `cache.break` says, as the live views show it. */
export interface CacheMissSummary {
  /** `tools`, `system`, `model`, `betas`, `messages`, `expired_or_evicted`, `unknown`, or the layer of an older writer. */
  cause: string;
  /** Tokens the turn could have read and did not; absent from an older writer. */
  missedTokens: number | undefined;
  /** What they cost above the read price; absent for an unpriced model or an older writer. @unit USD */
  costUsd: number | undefined;
  /** The provider's own `cache_miss_reason` type, when it gave one. */
  providerReason: string | undefined;
}

/** The summary of a `cache.break` event. */
export function cacheMissOf(event: ForkEventOf<"cache.break">): CacheMissSummary {
  return {
    cause: event.cause ?? event.layer,
    missedTokens: event.missed_tokens,
    costUsd: event.miss_cost_usd,
    providerReason: event.provider_reason?.type,
  };
}

/** A cache miss in a few words: `miss tools, $0.0123 (provider: tools_changed)`. */
export function formatCacheMiss(miss: CacheMissSummary): string {
  const cause = miss.cause === "expired_or_evicted" ? "expired or evicted" : miss.cause;
  const cost = miss.costUsd === undefined ? "" : `, ${formatUsd(miss.costUsd)}`;
  const provider =
    miss.providerReason === undefined || miss.providerReason === `${miss.cause}_changed`
      ? ""
      : ` (provider: ${miss.providerReason})`;
  return `miss ${cause}${cost}${provider}`;
}

const TERMINAL: readonly RunDisplayStatus[] = ["completed", "failed", "timeout", "aborted"];

/** True for a status after which a run changes no more. */
export function isFinalStatus(status: RunDisplayStatus): boolean {
  return TERMINAL.includes(status);
}

/** Every input token of `usage`: uncached, written and read. */
export function promptTokens(usage: UsageTotals): number {
  return (
    usage.input_tokens + usage.cache_write_5m_tokens + usage.cache_write_1h_tokens + usage.cache_read_tokens
  );
}

/** The share of the input tokens read from the cache (0 when there were none). */
export function cacheReadShare(usage: UsageTotals): number {
  const prompt = promptTokens(usage);
  return prompt === 0 ? 0 : usage.cache_read_tokens / prompt;
}

/** Runs by id, updated event by event. */
export class RunTracker {
  readonly #rows = new Map<string, RunRow>();
  readonly #accumulators = new Map<string, UsageAccumulator>();

  /** The row of `runId`, created (queued) when unknown. */
  row(runId: string, label?: string): RunRow {
    let row = this.#rows.get(runId);
    if (row === undefined) {
      row = {
        runId,
        label,
        status: "queued",
        activity: "queued",
        daemonId: undefined,
        attempt: 0,
        turn: 0,
        model: undefined,
        usage: new UsageAccumulator().totals,
        firstEventAt: undefined,
        endedAt: undefined,
        lastSeq: 0,
        problem: undefined,
        finalText: undefined,
        streamedChars: 0,
        cacheMiss: undefined,
      };
      this.#rows.set(runId, row);
    } else if (label !== undefined) {
      row.label = label;
    }
    return row;
  }

  /** Every row, in the order they were first seen. */
  rows(): RunRow[] {
    return [...this.#rows.values()];
  }

  /**
   * Applies one event. Returns false (and changes nothing) for an event already applied (a seq not
   * above the last one seen), so replays and redeliveries are harmless.
   */
  apply(event: ForkEvent): boolean {
    const row = this.row(event.run_id);
    if (event.seq <= row.lastSeq) return false;
    row.lastSeq = event.seq;
    row.attempt = Math.max(row.attempt, event.attempt);
    row.firstEventAt ??= event.ts;
    if (!isFinalStatus(row.status)) row.status = "running";
    switch (event.type) {
      case "accepted":
        row.daemonId = event.daemon_id;
        row.activity = event.resumed ? "resuming" : "accepted";
        break;
      case "started":
        row.model = event.model;
        row.activity = "starting";
        break;
      case "llm.request":
        row.turn = event.turn;
        row.model = event.model;
        row.streamedChars = 0;
        row.activity = "waiting for the model";
        break;
      case "llm.delta":
        row.turn = event.turn;
        row.streamedChars += event.text.length;
        // About four characters a token: a live estimate until the turn's usage arrives.
        row.activity = `streaming ~${formatCompact(Math.ceil(row.streamedChars / 4))} tokens`;
        break;
      case "llm.message": {
        row.turn = event.turn;
        row.activity = "answered";
        let accumulator = this.#accumulators.get(row.runId);
        if (accumulator === undefined) {
          accumulator = new UsageAccumulator();
          this.#accumulators.set(row.runId, accumulator);
        }
        accumulator.add(row.model ?? "unknown", event.usage);
        row.usage = accumulator.totals;
        break;
      }
      case "tool.call":
        row.activity = `tool ${event.name}`;
        break;
      case "tool.result":
      case "tool.denied":
        row.activity = `tool ${event.name} done`;
        break;
      case "permission.requested":
        row.activity = `asking to run ${event.name}`;
        break;
      case "permission.resolved":
        row.activity = `permission: ${event.decision}`;
        break;
      case "cache.break":
        row.cacheMiss = cacheMissOf(event);
        break;
      case "steered":
        row.activity = `steered: ${event.text.slice(0, 40)}`;
        break;
      case "paused":
        row.activity = `paused: ${event.reason}`;
        break;
      case "resumed":
        row.activity = "resumed";
        break;
      case "heartbeat":
        row.daemonId = event.daemon_id;
        break;
      case "completed":
        row.status = "completed";
        row.activity = "completed";
        row.usage = event.result.usage;
        row.finalText = event.result.final_text;
        row.endedAt = event.ts;
        break;
      case "failed":
        row.status = event.error.code === "timeout" ? "timeout" : "failed";
        row.activity = row.status;
        row.usage = event.usage;
        row.problem = `${event.error.code}: ${event.error.message}`;
        row.endedAt = event.ts;
        break;
      case "aborted":
        row.status = "aborted";
        row.activity = "aborted";
        row.usage = event.usage;
        row.problem = event.reason;
        row.endedAt = event.ts;
        break;
      default: {
        const unreachable: never = event;
        throw new TypeError(`unknown event ${JSON.stringify(unreachable)}`);
      }
    }
    return true;
  }
}

/** The run's elapsed time: first event to its end, or to `now` while it runs. */
export function elapsedOf(row: RunRow, now: number): number {
  if (row.firstEventAt === undefined) return 0;
  return (row.endedAt ?? now) - row.firstEventAt;
}

/**
 * The columns of a row in a live view: status, daemon, turn, tokens, cache-read share, cost,
 * elapsed, activity.
 */
export function rowCells(row: RunRow, now: number): string[] {
  const tokens = promptTokens(row.usage) + row.usage.output_tokens;
  return [
    row.status,
    row.daemonId ?? "-",
    row.turn > 0 ? `turn ${row.turn}` : "-",
    tokens > 0 ? `${formatCompact(tokens)} tok` : "-",
    cacheCell(row),
    row.usage.llm_calls > 0 || row.usage.cost_usd !== 0 ? formatUsd(row.usage.cost_usd) : "-",
    formatElapsed(elapsedOf(row, now)),
    isFinalStatus(row.status) ? (row.problem === undefined ? "" : oneLine(row.problem)) : row.activity,
  ];
}

/** The cache-read share, and the miss when the run had one: `12% cached, miss tools, $0.0123`. */
function cacheCell(row: RunRow): string {
  const share = promptTokens(row.usage) > 0 ? `${formatPercent(cacheReadShare(row.usage))} cached` : "-";
  return row.cacheMiss === undefined ? share : `${share}, ${formatCacheMiss(row.cacheMiss)}`;
}

/** The usage of one response, in one line. */
function usageLine(usage: {
  input_tokens: number;
  cache_creation_input_tokens?: number | null | undefined;
  cache_read_input_tokens?: number | null | undefined;
  output_tokens: number;
}): string {
  return [
    `in ${formatInteger(usage.input_tokens)}`,
    `cache write ${formatInteger(usage.cache_creation_input_tokens ?? 0)}`,
    `cache read ${formatInteger(usage.cache_read_input_tokens ?? 0)}`,
    `out ${formatInteger(usage.output_tokens)}`,
  ].join(", ");
}

function totalsLine(usage: UsageTotals): string {
  return [
    `in ${formatInteger(usage.input_tokens)}`,
    `cache write ${formatInteger(usage.cache_write_5m_tokens + usage.cache_write_1h_tokens)}`,
    `cache read ${formatInteger(usage.cache_read_tokens)}`,
    `out ${formatInteger(usage.output_tokens)}`,
    formatUsd(usage.cost_usd),
  ].join(", ");
}

function short(text: string, max = 100): string {
  const line = oneLine(text);
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** What an event says, in one line, without its run id, time and type. */
export function describeEvent(event: ForkEvent): string {
  switch (event.type) {
    case "accepted":
      return `by ${event.daemon_id}${event.host ? ` on ${event.host}` : ""} (attempt ${event.attempt}, delivery ${event.delivery}, queued ${formatElapsed(event.queue_wait_ms)}${event.resumed ? ", resumed" : ""})`;
    case "started":
      return `model ${event.model}, ${event.cache_shared ? "shares the parent's cache" : "no shared cache"}`;
    case "llm.request":
      return `turn ${event.turn}, ${event.model}, ${event.message_count} messages`;
    case "llm.delta":
      return `turn ${event.turn}, +${event.text.length} characters`;
    case "llm.message":
      return `turn ${event.turn}, ${usageLine(event.usage)}; stop ${event.stop_reason ?? "none"}${event.ttft_ms === undefined ? "" : `, first byte after ${formatElapsed(event.ttft_ms)}`}`;
    case "tool.call":
      return `turn ${event.turn}, ${event.name} ${short(JSON.stringify(event.input) ?? "", 80)}`;
    case "tool.result":
      return `turn ${event.turn}, ${event.name} ${event.is_error ? "failed" : "returned"} ${formatInteger(event.content.length)} characters in ${formatElapsed(event.duration_ms)}${event.interrupted ? " (interrupted)" : ""}`;
    case "tool.denied":
      return `turn ${event.turn}, ${event.name} (${event.code}): ${short(event.reason)}`;
    case "permission.requested":
      return `turn ${event.turn}, ${event.name}, answer within ${formatElapsed(event.timeout_ms)}`;
    case "permission.resolved":
      return `turn ${event.turn}, ${event.decision}${event.reason ? `: ${short(event.reason)}` : ""}`;
    case "cache.break":
      // The detail says how much was read of what (older writers too).
      return `turn ${event.turn}, ${formatCacheMiss(cacheMissOf(event))}: ${short(event.detail, 200)}`;
    case "steered":
      return `before turn ${event.turn}${event.by ? ` from ${event.by}` : ""}: ${short(event.text, 120)}`;
    case "paused":
      return `before turn ${event.turn}: ${short(event.reason, 160)}`;
    case "resumed":
      return `turn ${event.turn} after ${formatElapsed(event.paused_ms)} paused`;
    case "heartbeat":
      return `from ${event.daemon_id}, turn ${event.turn}`;
    case "completed":
      return `${event.result.stop === "stopped" ? `stopped (${short(event.result.stop_reason ?? "", 80)}), ` : ""}${event.result.turns} turn${event.result.turns === 1 ? "" : "s"}, ${event.result.tool_uses} tool use${event.result.tool_uses === 1 ? "" : "s"}, ${formatElapsed(event.result.duration_ms)}; ${totalsLine(event.result.usage)}`;
    case "failed":
      return `${event.error.code}${event.error.retryable ? " (retryable)" : ""}: ${short(event.error.message, 200)}; ${totalsLine(event.usage)}`;
    case "aborted":
      return `${short(event.reason, 200)}; ${totalsLine(event.usage)}`;
    default: {
      const unreachable: never = event;
      throw new TypeError(`unknown event ${JSON.stringify(unreachable)}`);
    }
  }
}

/** `HH:MM:SS.mmm <who> #<seq> <type> <details>`: one line per event, for logs and pipes. */
export function eventLine(event: ForkEvent, who: string): string {
  return `${formatClock(event.ts)} ${who} #${event.seq} ${event.type} ${describeEvent(event)}`;
}
