// The shape every benchmark returns and what the runner hands it.

/** A value measured in this run (JSON: numbers, strings, arrays, plain objects), its unit in its key's name. */
export type Figure = unknown;

/** What one benchmark reports. */
export interface BenchResult {
  /** The number of the figure, 1..8. */
  id: number;
  name: string;
  /** The measured figures of forkd. */
  figures: Record<string, Figure>;
  /** The same measurement of the baseline, taken in the same run. */
  baseline: Record<string, Figure>;
  /** The target, as a sentence. */
  target: string;
  /** The one-line verdict shown in the table, e.g. "p50 4.1 ms, p99 9.8 ms". */
  headline: string;
  /** The baseline's one-line figure for the table. */
  baselineHeadline: string;
  pass: boolean;
  /** Parameters of the run (iterations, latencies, fixture). */
  params: Record<string, Figure>;
  /** How the figure was measured, what bounds it, and by how much a missed target was missed. */
  notes: string[];
  /** Wall-clock duration of the benchmark. @unit ms */
  durationMs: number;
}

/** What the runner gives a benchmark. */
export interface BenchContext {
  quick: boolean;
  /** Batch sizes from `--sizes 1000,8000` (benchmarks that grow with a size read it; #11). */
  sizes?: number[] | undefined;
  /** Progress lines (stderr), never part of the results. */
  log(message: string): void;
}

/** One benchmark module. */
export interface Benchmark {
  id: number;
  name: string;
  /** Its own deadline, when the runner's (90 s quick, 400 s full) is too short. @unit ms */
  timeoutMs?: { quick: number; full: number };
  run(context: BenchContext): Promise<Omit<BenchResult, "id" | "name" | "durationMs">>;
}
