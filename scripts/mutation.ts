// `pnpm mutation [package…] [file…]`: StrykerJS mutates a package's source and runs the package's unit
// tests (packages/<name>/vitest.config.ts) against each mutant; prints the score per file and the mutants
// no test killed, and writes reports/mutation/<package>.json. Incremental: a rerun tests only the
// mutants whose code or tests changed. See docs/testing.md.
//
//   pnpm mutation                          core and protocol, every source file
//   pnpm mutation core src/pricing.ts      one file (globs relative to the package)
//   pnpm mutation --changed [REV]          what changed since REV (default HEAD~1), within a time budget,
//                                          checked against scripts/mutation-baseline.json (CI)
//
// Options: --concurrency N (default 1 on two cores or fewer, else cores - 1), --budget SECONDS
// (--changed only; default 360), --update-baseline (write the measured scores into the baseline),
// --tests GLOB,… (only these unit tests: a cheap lower bound of the score, reported apart).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join, relative, resolve } from "node:path";
import { Stryker } from "@stryker-mutator/core";
import {
  type Baseline,
  changedLines,
  changedTargets,
  checkScores,
  estimateSeconds,
  isAsked,
  MUTATION_SOURCES,
  mutatePatterns,
  planWithinBudget,
  type Target,
  updatedBaseline,
} from "./mutation-plan.js";

// @stryker-mutator/api holds these types; it is Stryker's dependency, not ours.
type PartialStrykerOptions = NonNullable<ConstructorParameters<typeof Stryker>[0]>;
type MutantResult = Awaited<ReturnType<Stryker["runMutationTest"]>>[number];

const root = resolve(import.meta.dirname, "..");
const reports = join(root, "reports", "mutation");
const baselineFile = join(root, "scripts", "mutation-baseline.json");

const DEFAULT_PACKAGES = ["core", "protocol"];
/** What `--changed` may spend, estimated, so that CI stays well under its 25 minutes. */
const DEFAULT_BUDGET_SECONDS = 360;

interface FileScore {
  file: string;
  /** Mutants that count in the score (killed, timed out, survived, without coverage) and errors. */
  mutants: number;
  killed: number;
  survived: number;
  noCoverage: number;
  timeout: number;
  errors: number;
  /** Killed (or timed out) over every mutant that ran or lacked coverage, in percent; null when none. */
  score: number | null;
}

interface Survivor {
  file: string;
  line: number;
  column: number;
  status: string;
  mutator: string;
  replacement: string | undefined;
}

function scoreOf(file: string, results: readonly MutantResult[]): FileScore {
  const count = (...statuses: MutantResult["status"][]) =>
    results.filter((r) => statuses.includes(r.status)).length;
  const killed = count("Killed");
  const timeout = count("Timeout");
  const survived = count("Survived");
  const noCoverage = count("NoCoverage");
  const errors = count("CompileError", "RuntimeError");
  const detected = killed + timeout;
  const valid = detected + survived + noCoverage;
  return {
    file,
    mutants: valid + errors,
    killed,
    survived,
    noCoverage,
    timeout,
    errors,
    score: valid === 0 ? null : Math.round((detected / valid) * 10_000) / 100,
  };
}

function table(rows: readonly FileScore[]): string {
  const head = ["file", "score %", "killed", "timeout", "survived", "no cov", "errors"];
  const body = rows.map((r) => [
    r.file,
    r.score === null ? "n/a" : r.score.toFixed(2),
    ...[r.killed, r.timeout, r.survived, r.noCoverage, r.errors].map(String),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n");
}

const formatSurvivor = (s: Survivor) =>
  `  ${s.file}:${s.line}:${s.column}  ${s.status}  ${s.mutator}  → ${JSON.stringify(s.replacement)}`;

/** The config `--tests` writes beside a package's own, for one run (git-ignored). */
const TESTS_ONLY_CONFIG = "vitest.tests-only.config.ts";

async function mutatePackage(
  name: string,
  files: readonly string[],
  concurrency: number,
  tests: readonly string[] = [],
): Promise<{ scores: FileScore[]; survivors: Survivor[] }> {
  const dir = join(root, "packages", name);
  const sources = MUTATION_SOURCES[name];
  if (sources === undefined || !existsSync(join(dir, "vitest.config.ts"))) {
    throw new Error(`@forkd/${name} has no unit-tests vitest.config.ts or no entry in MUTATION_SOURCES`);
  }
  // Against some tests only, a run is cheap and its score a lower bound; it keeps its own incremental
  // file and report, so that the package's full results are not mixed with it.
  const only = tests.length > 0;
  const suffix = only ? ".tests-only" : "";
  if (only) {
    writeFileSync(
      join(dir, TESTS_ONLY_CONFIG),
      "// Written by scripts/mutation.ts for --tests, removed after the run.\n" +
        'import { unitTestsConfig } from "../../scripts/unit-vitest-config.js";\n\n' +
        `export default unitTestsConfig(import.meta.dirname, ${JSON.stringify(tests)});\n`,
    );
  }
  try {
    return await runStryker(
      name,
      dir,
      sources,
      files,
      concurrency,
      only ? TESTS_ONLY_CONFIG : "vitest.config.ts",
      suffix,
    );
  } finally {
    if (only) rmSync(join(dir, TESTS_ONLY_CONFIG), { force: true });
  }
}

async function runStryker(
  name: string,
  dir: string,
  sources: readonly string[],
  files: readonly string[],
  concurrency: number,
  config: string,
  suffix: string,
): Promise<{ scores: FileScore[]; survivors: Survivor[] }> {
  const options: PartialStrykerOptions = {
    testRunner: "vitest",
    // Under pnpm, Stryker cannot discover its plugins next to itself: name the runner.
    plugins: ["@stryker-mutator/vitest-runner"],
    vitest: { configFile: `packages/${name}/${config}` },
    coverageAnalysis: "perTest",
    concurrency,
    // Paths from the repository root: the sandbox is a copy of it, so tests that read another package's
    // fixtures find them.
    // Named files keep the package's exclusions: `src/tools/**/*.ts` mutates no test.
    mutate: (files.length > 0 ? [...files, ...sources.filter((g) => g.startsWith("!"))] : sources).map(
      (glob) => (glob.startsWith("!") ? `!packages/${name}/${glob.slice(1)}` : `packages/${name}/${glob}`),
    ),
    // docs/ stays out but for what protocol's json-schema.test.ts compares the code with: without
    // them that file fails at collection, which Stryker's vitest runner passes over in silence.
    ignorePatterns: [
      "dist",
      "reports",
      "bench",
      "deploy",
      "docs/*",
      "!docs/schema",
      "!docs/protocol.md",
      "test",
    ],
    incremental: true,
    incrementalFile: join(reports, `${name}${suffix}.incremental.json`),
    reporters: ["progress"],
    timeoutMS: 10_000,
    // A mutant in code that runs at import (zod schemas, tables) is "static": every test would run
    // for it, which made @forkd/protocol an hour's run. Such mutants are reported as ignored.
    ignoreStatic: true,
    // Changed lines with no mutant in them (an export list) make a run with no related test; without
    // this Stryker fails it with "No tests were executed". A file that has mutants but no test still
    // fails: its mutants count as not covered.
    allowEmpty: true,
    cleanTempDir: "always",
  };
  // Incremental mode also reports the files (and lines) of earlier runs: keep the ones asked for.
  const results = (await new Stryker(options).runMutationTest()).filter((r) =>
    isAsked(files, relative(dir, resolve(root, r.fileName)), r.location.start.line),
  );
  const byFile = new Map<string, MutantResult[]>();
  for (const r of results) {
    const file = relative(dir, resolve(root, r.fileName));
    byFile.set(file, [...(byFile.get(file) ?? []), r]);
  }
  const scores = [...byFile]
    .map(([file, rs]) => scoreOf(file, rs))
    .sort((a, b) => a.file.localeCompare(b.file));
  const survivors: Survivor[] = results
    .filter((r) => r.status === "Survived" || r.status === "NoCoverage")
    .map((r) => ({
      file: relative(dir, resolve(root, r.fileName)),
      line: r.location.start.line,
      column: r.location.start.column,
      status: r.status,
      mutator: r.mutatorName,
      replacement: r.replacement,
    }))
    .sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
  console.log(`\n@forkd/${name}: mutants no test killed`);
  for (const s of survivors) console.log(formatSurvivor(s));
  writeFileSync(
    join(reports, `${name}${suffix}.json`),
    `${JSON.stringify({ package: name, scores, survivors }, null, 2)}\n`,
  );
  return { scores, survivors };
}

interface Options {
  packages: string[];
  files: string[];
  /** `--changed [REV]`: the revision to diff against. */
  changed: string | undefined;
  budgetSeconds: number;
  concurrency: number;
  updateBaseline: boolean;
  /** `--tests GLOB,…`: run only these of the package's unit tests (a quick lower bound). */
  tests: string[];
}

function parseArgs(argv: readonly string[]): Options {
  const args = argv.filter((a) => a !== "--");
  const cores = availableParallelism();
  const options: Options = {
    packages: [],
    files: [],
    changed: undefined,
    budgetSeconds: DEFAULT_BUDGET_SECONDS,
    // Two cores are shared with whoever else works here: one mutant at a time unless told otherwise.
    concurrency: cores <= 2 ? 1 : cores - 1,
    updateBaseline: false,
    tests: [],
  };
  const number = (flag: string, value: string | undefined) => {
    const n = Number(value);
    if (!(n > 0)) throw new Error(`${flag} takes a positive number, not ${JSON.stringify(value)}`);
    return n;
  };
  const isFile = (a: string) => a.includes("/") || a.includes("*") || a.endsWith(".ts");
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--changed") {
      const next = args[i + 1];
      options.changed = next !== undefined && !next.startsWith("--") ? args[++i]! : "HEAD~1";
    } else if (a === "--budget") options.budgetSeconds = number(a, args[++i]);
    else if (a === "--concurrency") options.concurrency = number(a, args[++i]);
    else if (a === "--update-baseline") options.updateBaseline = true;
    else if (a === "--tests") options.tests.push(...(args[++i] ?? "").split(",").filter(Boolean));
    else if (a.startsWith("--")) throw new Error(`unknown option ${a}`);
    else if (isFile(a)) options.files.push(a);
    else options.packages.push(a.replace(/^@forkd\//, ""));
  }
  if (!Number.isInteger(options.concurrency) || options.concurrency < 1) {
    throw new Error(`concurrency must be a positive integer, not ${options.concurrency}`);
  }
  if (options.tests.length > 0 && (options.changed !== undefined || options.updateBaseline)) {
    throw new Error("--tests measures a lower bound: not for --changed or --update-baseline");
  }
  if (options.changed !== undefined && (options.packages.length > 0 || options.files.length > 0)) {
    throw new Error("--changed chooses the files itself: name no package or file with it");
  }
  return options;
}

const readBaseline = (): Baseline => JSON.parse(readFileSync(baselineFile, "utf8")) as Baseline;
const seconds = (since: number) => Math.round((Date.now() - since) / 1000);
const shown = (t: Target) =>
  `@forkd/${t.pkg} ${t.file}${t.lines === undefined ? "" : ` lines ${t.lines.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(", ")}`}`;

/** Every package's mutate patterns (files, or files with line ranges): one Stryker run per package. */
function groupByPackage(targets: readonly Target[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const t of targets) groups.set(t.pkg, [...(groups.get(t.pkg) ?? []), ...mutatePatterns(t)]);
  return groups;
}

/** `--changed`: mutate what changed since `rev`, within the budget; exit 1 when a file is below its bar. */
async function runChanged(options: Options, rev: string): Promise<number> {
  const git = (...a: string[]) =>
    execFileSync("git", a, { cwd: root, encoding: "utf8" }).split("\n").filter(Boolean);
  try {
    git("rev-parse", "--verify", "--quiet", `${rev}^{commit}`);
  } catch {
    console.error(
      `mutation: ${rev} is not a commit in this clone (a shallow clone?): nothing to diff against`,
    );
    return 1;
  }
  const paths = [...git("diff", "--name-only", rev), ...git("ls-files", "--others", "--exclude-standard")];
  // Only the changed lines of a changed source are mutated (a whole run of turn-loop.ts or codec.ts
  // alone would not fit the budget); a changed test brings its whole source.
  const diff = execFileSync(
    "git",
    ["diff", "--unified=0", "--no-color", "--no-ext-diff", rev, "--", "packages"],
    {
      cwd: root,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const targets = changedTargets(paths, (p) => existsSync(join(root, p)), changedLines(diff));
  if (targets.length === 0) {
    console.log(`mutation: no mutation-tested source file changed since ${rev}; nothing to mutate.`);
    return 0;
  }
  const baseline = readBaseline();
  const estimated = targets.map((target) => {
    const lines = readFileSync(join(root, "packages", target.pkg, target.file), "utf8").split("\n").length;
    return { target, seconds: estimateSeconds(target, baseline, lines) };
  });
  const plan = planWithinBudget(estimated, baseline, options.budgetSeconds);
  console.log(`mutation: source files changed since ${rev}, budget ${options.budgetSeconds} s`);
  for (const p of plan.run) console.log(`  mutate   ${shown(p.target)} (~${Math.round(p.seconds)} s)`);
  for (const l of plan.leftOut) console.log(`  LEFT OUT ${shown(l.target)}: ${l.reason}`);
  if (plan.run.length === 0) console.log("mutation: nothing fits in the budget; nothing mutated.");
  const started = Date.now();
  const measured: { path: string; score: number | null; mutants: number }[] = [];
  const survivors = new Map<string, Survivor[]>();
  for (const [pkg, files] of groupByPackage(plan.run.map((p) => p.target))) {
    if (seconds(started) >= options.budgetSeconds) {
      for (const f of files) {
        console.log(`  LEFT OUT @forkd/${pkg} ${f}: the budget was spent after ${seconds(started)} s`);
      }
      continue;
    }
    const result = await mutatePackage(pkg, files, options.concurrency);
    console.log(`\n@forkd/${pkg}\n${table(result.scores)}`);
    for (const s of result.scores) measured.push({ ...s, path: `packages/${pkg}/${s.file}` });
    for (const s of result.survivors) {
      const path = `packages/${pkg}/${s.file}`;
      survivors.set(path, [...(survivors.get(path) ?? []), s]);
    }
  }
  const verdicts = checkScores(measured, baseline);
  console.log(`\nmutation: ${seconds(started)} s; each file must score at least min(90, its baseline) − 1`);
  for (const v of verdicts) {
    const score = v.score === null ? "n/a" : v.score.toFixed(2);
    console.log(`  ${v.pass ? "ok  " : "FAIL"} ${v.path}: ${score} % (minimum ${v.minimum.toFixed(2)} %)`);
    if (!v.pass) for (const s of survivors.get(v.path) ?? []) console.log(`    ${formatSurvivor(s).trim()}`);
  }
  if (options.updateBaseline) writeBaseline(updatedBaseline(baseline, measured));
  const failed = verdicts.filter((v) => !v.pass);
  if (failed.length > 0) {
    console.log(
      `\n${failed.length} file(s) below their minimum: kill the survivors above with tests, or name them` +
        " as equivalent in docs/testing.md and lower the file's score in scripts/mutation-baseline.json.",
    );
    return 1;
  }
  return 0;
}

function writeBaseline(baseline: Baseline): void {
  writeFileSync(baselineFile, `${JSON.stringify(baseline, null, 2)}\n`);
  console.log(`baseline written: ${relative(root, baselineFile)}`);
}

process.chdir(root);
const options = parseArgs(process.argv.slice(2));
mkdirSync(reports, { recursive: true });
if (options.changed !== undefined) {
  process.exitCode = await runChanged(options, options.changed);
} else {
  const started = Date.now();
  const summary: string[] = [];
  const measured: { path: string; score: number | null; mutants: number }[] = [];
  for (const name of options.packages.length > 0 ? options.packages : DEFAULT_PACKAGES) {
    const { scores } = await mutatePackage(name, options.files, options.concurrency, options.tests);
    summary.push(`\n@forkd/${name}\n${table(scores)}`);
    for (const s of scores) measured.push({ ...s, path: `packages/${name}/${s.file}` });
  }
  console.log(summary.join("\n"));
  console.log(`\nmutation run: ${seconds(started)} s; reports in ${relative(root, reports)}/`);
  if (options.tests.length > 0) {
    console.log(`against ${options.tests.join(", ")} only: each score is a lower bound of the package's`);
  }
  if (options.updateBaseline) writeBaseline(updatedBaseline(readBaseline(), measured));
}
