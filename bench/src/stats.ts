// Order statistics and the clock every benchmark shares with the simulator's event timestamps.
import { performance } from "node:perf_hooks";

/**
 * High-resolution wall clock, the one the simulator stamps its events with
 * (`performance.timeOrigin + performance.now()`), so a time taken here and an `at` from the sim
 * compare directly when both run in this process. @unit ms since epoch
 */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

/** The `p`-th percentile (0..100) of `values`, nearest-rank on the sorted sample. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** Count, min, p50, p90, p99, max and mean of a sample, rounded to `digits`. */
export interface Summary {
  n: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export function summarize(values: readonly number[], digits = 2): Summary {
  const mean = values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);
  return {
    n: values.length,
    min: round(Math.min(...values), digits),
    p50: round(percentile(values, 50), digits),
    p90: round(percentile(values, 90), digits),
    p99: round(percentile(values, 99), digits),
    max: round(Math.max(...values), digits),
    mean: round(mean, digits),
  };
}

/** Rounds to `digits` decimals. */
export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** "by 23 %" style: how far `actual` is above `limit`, as a percentage of the limit. */
export function overBy(actual: number, limit: number): string {
  return `${round(((actual - limit) / limit) * 100, 1)} %`;
}
