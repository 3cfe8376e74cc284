// What `pnpm mutation --changed` mutates, how long that is expected to take, and whether the scores it
// measured pass: pure functions over paths, the committed baseline (scripts/mutation-baseline.json) and
// Stryker's per-file scores, so that unit tests can pin them (scripts/mutation-plan.test.ts).
import { matchesGlob } from "node:path";

/**
 * The files of each package that mutation testing covers, as globs relative to the package (a leading
 * `!` excludes). core and protocol: every source file. daemon and client: only their pure modules, the
 * ones their unit tests reach without NATS; the rest is covered by integration tests.
 */
export const MUTATION_SOURCES: Readonly<Record<string, readonly string[]>> = {
  // The shell corpora are the classifier's specification by example: data the tests read.
  core: ["src/**/*.ts", "!src/**/*.test.ts", "!src/test-support/**", "!src/tools/shell/*corpus.ts"],
  protocol: ["src/**/*.ts", "!src/**/*.test.ts", "!src/arbitraries.ts", "!src/test-support/**"],
  daemon: [
    "src/config-secrets.ts",
    "src/ending-order.ts",
    "src/group-spend.ts",
    "src/recent-controls.ts",
    "src/redact.ts",
    "src/tools/glob-pattern.ts",
    "src/tools/output.ts",
    "src/tools/secrets.ts",
  ],
  client: ["src/jetstream-errors.ts", "src/prefix-encoding.ts", "src/resource-options.ts"],
};

/** Whether `file` (relative to its package) is one of the package's mutation sources. */
export function isMutationSource(pkg: string, file: string): boolean {
  const globs = MUTATION_SOURCES[pkg];
  if (globs === undefined) return false;
  const included = globs.some((g) => !g.startsWith("!") && matchesGlob(file, g));
  const excluded = globs.some((g) => g.startsWith("!") && matchesGlob(file, g.slice(1)));
  return included && !excluded;
}

/** A file to mutate: its package (`core`) and its path relative to the package (`src/usage.ts`). */
export interface Target {
  pkg: string;
  file: string;
  /** Only these lines (first and last, 1-based, inclusive); the whole file when absent. */
  lines?: readonly (readonly [number, number])[];
}

/**
 * The lines each file gained or changed, from `git diff --unified=0` (repository-relative paths): the
 * `+c,d` side of every hunk. A hunk that only deletes lines adds none.
 */
export function changedLines(diff: string): Map<string, [number, number][]> {
  const lines = new Map<string, [number, number][]>();
  let current: [number, number][] | undefined;
  for (const line of diff.split("\n")) {
    const file = /^\+\+\+ b\/(.+)$/.exec(line);
    if (file !== null) {
      current = [];
      lines.set(file[1]!, current);
      continue;
    }
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (hunk !== null && current !== undefined) {
      const start = Number(hunk[1]);
      const count = hunk[2] === undefined ? 1 : Number(hunk[2]);
      if (count > 0) current.push([start, start + count - 1]);
    }
  }
  return lines;
}

/** Stryker's mutate patterns for a target: the file, or one `file:first-last` per range of lines. */
export function mutatePatterns(target: Target): string[] {
  if (target.lines === undefined) return [target.file];
  return target.lines.map(([first, last]) => `${target.file}:${first}-${last}`);
}

/** Whether a mutant at `line` of `file` is one that `patterns` (globs, with or without a line range) asked for. */
export function isAsked(patterns: readonly string[], file: string, line: number): boolean {
  if (patterns.length === 0) return true;
  return patterns.some((pattern) => {
    const range = /^(.*):(\d+)-(\d+)$/.exec(pattern);
    if (range === null) return matchesGlob(file, pattern);
    return matchesGlob(file, range[1]!) && line >= Number(range[2]) && line <= Number(range[3]);
  });
}

/**
 * The mutation sources a change touched, from the repository-relative paths `git diff --name-only`
 * lists. A changed unit test stands for the source it tests (`src/codec.hostile.test.ts` for
 * `src/codec.ts`, when that file exists): deleting an assertion can lower an untouched file's score.
 */
export function changedTargets(
  paths: readonly string[],
  exists: (path: string) => boolean,
  lines: ReadonlyMap<string, readonly (readonly [number, number])[]> = new Map(),
): Target[] {
  const targets = new Map<string, Target>();
  for (const path of paths) {
    const m = /^packages\/([^/]+)\/(.+)$/.exec(path);
    if (m === null) continue;
    const [, pkg, file] = m as unknown as [string, string, string];
    const isTest = file.endsWith(".test.ts");
    for (const candidate of isTest ? testedSources(file) : [file]) {
      if (isMutationSource(pkg, candidate) && exists(`packages/${pkg}/${candidate}`)) {
        const key = `${pkg}/${candidate}`;
        const ranges = isTest ? undefined : lines.get(path);
        // A changed test stands for its whole source; so does a source whose changed lines are unknown.
        const whole = ranges === undefined || (targets.has(key) && targets.get(key)!.lines === undefined);
        targets.set(key, whole ? { pkg, file: candidate } : { pkg, file: candidate, lines: ranges });
        break;
      }
    }
  }
  return [...targets.values()].sort((a, b) => a.pkg.localeCompare(b.pkg) || a.file.localeCompare(b.file));
}

/** `src/a.b.test.ts` → `src/a.b.ts`, then `src/a.ts`: the sources a test file may be about. */
function testedSources(testFile: string): string[] {
  const dot = testFile.lastIndexOf("/") + 1;
  const dir = testFile.slice(0, dot);
  const parts = testFile.slice(dot, -".test.ts".length).split(".");
  const out: string[] = [];
  for (let n = parts.length; n > 0; n--) out.push(`${dir}${parts.slice(0, n).join(".")}.ts`);
  return out;
}

/** The committed scores and costs (scripts/mutation-baseline.json). */
export interface Baseline {
  /** Per package: seconds before the first mutant (the unit tests' instrumented run), and per mutant. */
  packages: Record<string, { startupSeconds: number; secondsPerMutant: number }>;
  /**
   * Per repository-relative file: its score (percent) and mutant count in the last full run of that
   * file; `secondsPerMutant` where the file's tests cost more than the package's average.
   */
  files: Record<string, { score: number; mutants: number; secondsPerMutant?: number }>;
}

/** Mutants a file without a baseline is assumed to have, per line of source. */
export const MUTANTS_PER_LINE = 0.8;
/** What a package without a baseline entry is assumed to cost. */
const UNKNOWN_PACKAGE = { startupSeconds: 60, secondsPerMutant: 2 };

/**
 * Seconds a from-scratch run of `target` is expected to take, startup of its package excluded.
 * @param lines the file's length in lines.
 */
export function estimateSeconds(target: Target, baseline: Baseline, lines: number): number {
  const known = baseline.files[`packages/${target.pkg}/${target.file}`];
  const perMutant =
    known?.secondsPerMutant ??
    baseline.packages[target.pkg]?.secondsPerMutant ??
    UNKNOWN_PACKAGE.secondsPerMutant;
  const mutants = known?.mutants ?? Math.ceil(lines * MUTANTS_PER_LINE);
  if (target.lines === undefined) return mutants * perMutant;
  // Mutants are spread over the file about evenly: changed lines carry their share.
  const changed = target.lines.reduce((sum, [first, last]) => sum + last - first + 1, 0);
  return Math.ceil(mutants * Math.min(1, changed / Math.max(1, lines))) * perMutant;
}

export interface Planned {
  target: Target;
  seconds: number;
}

export interface Plan {
  run: Planned[];
  /** Targets that did not fit, each with the reason printed for it. */
  leftOut: { target: Target; seconds: number; reason: string }[];
  /** The estimate of what runs, package startups included. */
  seconds: number;
}

/**
 * Which targets fit in `budgetSeconds`: in order, each one whose estimate (plus its package's startup,
 * the first time that package appears) fits in what is left; the others are left out, with the reason.
 */
export function planWithinBudget(
  targets: readonly { target: Target; seconds: number }[],
  baseline: Baseline,
  budgetSeconds: number,
): Plan {
  const plan: Plan = { run: [], leftOut: [], seconds: 0 };
  const started = new Set<string>();
  for (const { target, seconds } of targets) {
    const startup = started.has(target.pkg)
      ? 0
      : (baseline.packages[target.pkg] ?? UNKNOWN_PACKAGE).startupSeconds;
    const cost = seconds + startup;
    const left = budgetSeconds - plan.seconds;
    if (cost <= left) {
      plan.run.push({ target, seconds });
      plan.seconds += cost;
      started.add(target.pkg);
    } else {
      plan.leftOut.push({
        target,
        seconds: cost,
        reason: `estimated ${Math.round(cost)} s, ${Math.round(left)} s of the ${budgetSeconds} s budget left`,
      });
    }
  }
  return plan;
}

/** Percentage points a file may fall below its bar before the check fails (rounding, a flaky timeout). */
export const TOLERANCE = 1;
/** The score every file is held to, unless its baseline is lower (then it may not fall further). */
export const TARGET_SCORE = 90;

/** The lowest score `path` (repository-relative) may have: min(90, its baseline) minus the tolerance. */
export function minimumScore(path: string, baseline: Baseline): number {
  const known = baseline.files[path]?.score;
  return Math.min(TARGET_SCORE, known ?? TARGET_SCORE) - TOLERANCE;
}

export interface Verdict {
  path: string;
  score: number | null;
  minimum: number;
  pass: boolean;
}

/** Each measured file against its minimum; a file without valid mutants (score null) passes. */
export function checkScores(
  scores: readonly { path: string; score: number | null }[],
  baseline: Baseline,
): Verdict[] {
  return scores.map(({ path, score }) => {
    const minimum = minimumScore(path, baseline);
    return { path, score, minimum, pass: score === null || score >= minimum };
  });
}

/** The baseline with the measured files' scores and mutant counts written in (`--update-baseline`). */
export function updatedBaseline(
  baseline: Baseline,
  scores: readonly { path: string; score: number | null; mutants: number }[],
): Baseline {
  const files = { ...baseline.files };
  for (const { path, score, mutants } of scores) {
    if (score === null) continue;
    files[path] = { ...files[path], score, mutants };
  }
  const sorted = Object.fromEntries(Object.entries(files).sort(([a], [b]) => a.localeCompare(b)));
  return { ...baseline, files: sorted };
}
