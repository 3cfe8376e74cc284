// `pnpm mutation [package…] [file…]`: StrykerJS mutates a package's source and runs the package's unit
// tests (packages/<name>/vitest.config.ts) against each mutant; prints the score per file and the mutants
// no test killed, and writes reports/mutation/<package>.json. Incremental: a rerun tests only the
// mutants whose code or tests changed. See docs/testing.md.
//
//   pnpm mutation                          core and protocol, every source file
//   pnpm mutation core src/pricing.ts      one file (globs relative to the package)
import { mkdirSync, writeFileSync } from "node:fs";
import { join, matchesGlob, relative, resolve } from "node:path";
import { Stryker } from "@stryker-mutator/core";

// @stryker-mutator/api holds these types; it is Stryker's dependency, not ours.
type PartialStrykerOptions = NonNullable<ConstructorParameters<typeof Stryker>[0]>;
type MutantResult = Awaited<ReturnType<Stryker["runMutationTest"]>>[number];

const root = resolve(import.meta.dirname, "..");
const reports = join(root, "reports", "mutation");

/** What a package's mutants are made from when no file is named: its source, not its tests or test helpers. */
const SOURCE = ["src/**/*.ts", "!src/**/*.test.ts", "!src/test-support/**", "!src/arbitraries.ts"];
const DEFAULT_PACKAGES = ["core", "protocol"];

interface FileScore {
  file: string;
  mutants: number;
  killed: number;
  survived: number;
  noCoverage: number;
  timeout: number;
  errors: number;
  /** Killed (or timed out) over every mutant that ran or lacked coverage, in percent; null when none. */
  score: number | null;
}

function scoreOf(file: string, results: readonly MutantResult[]): FileScore {
  const count = (...statuses: MutantResult["status"][]) =>
    results.filter((r) => statuses.includes(r.status)).length;
  const killed = count("Killed");
  const timeout = count("Timeout");
  const survived = count("Survived");
  const noCoverage = count("NoCoverage");
  const detected = killed + timeout;
  const valid = detected + survived + noCoverage;
  return {
    file,
    mutants: results.length,
    killed,
    survived,
    noCoverage,
    timeout,
    errors: count("CompileError", "RuntimeError"),
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

async function mutatePackage(name: string, files: readonly string[]): Promise<FileScore[]> {
  const dir = join(root, "packages", name);
  const options: PartialStrykerOptions = {
    testRunner: "vitest",
    // Under pnpm, Stryker cannot discover its plugins next to itself: name the runner.
    plugins: ["@stryker-mutator/vitest-runner"],
    vitest: { configFile: `packages/${name}/vitest.config.ts` },
    coverageAnalysis: "perTest",
    // Paths from the repository root: the sandbox is a copy of it, so tests that read another package's
    // fixtures find them.
    mutate: (files.length > 0 ? files : SOURCE).map((glob) =>
      glob.startsWith("!") ? `!packages/${name}/${glob.slice(1)}` : `packages/${name}/${glob}`,
    ),
    ignorePatterns: ["dist", "reports", "bench", "deploy", "docs", "test"],
    incremental: true,
    incrementalFile: join(reports, `${name}.incremental.json`),
    reporters: ["progress"],
    timeoutMS: 10_000,
    // A mutant in code that runs at import (zod schemas, tables) is "static": every test would run
    // for it, which made @forkd/protocol an hour's run. Such mutants are reported as ignored.
    ignoreStatic: true,
    cleanTempDir: "always",
  };
  // Incremental mode also reports the files of earlier runs: keep the ones asked for.
  const asked = (file: string) => files.length === 0 || files.some((glob) => matchesGlob(file, glob));
  const results = (await new Stryker(options).runMutationTest()).filter((r) =>
    asked(relative(dir, resolve(root, r.fileName))),
  );
  const byFile = new Map<string, MutantResult[]>();
  for (const r of results) {
    const file = relative(dir, resolve(root, r.fileName));
    byFile.set(file, [...(byFile.get(file) ?? []), r]);
  }
  const scores = [...byFile]
    .map(([file, rs]) => scoreOf(file, rs))
    .sort((a, b) => a.file.localeCompare(b.file));
  const survivors = results
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
  for (const s of survivors) {
    console.log(
      `  ${s.file}:${s.line}:${s.column}  ${s.status}  ${s.mutator}  → ${JSON.stringify(s.replacement)}`,
    );
  }
  writeFileSync(
    join(reports, `${name}.json`),
    `${JSON.stringify({ package: name, scores, survivors }, null, 2)}\n`,
  );
  return scores;
}

process.chdir(root);
const args = process.argv.slice(2).filter((a) => a !== "--");
const isFile = (a: string) => a.includes("/") || a.includes("*") || a.endsWith(".ts");
const packages = args.filter((a) => !isFile(a)).map((a) => a.replace(/^@forkd\//, ""));
const files = args.filter(isFile);
mkdirSync(reports, { recursive: true });
const started = Date.now();
const summary: string[] = [];
for (const name of packages.length > 0 ? packages : DEFAULT_PACKAGES) {
  const scores = await mutatePackage(name, files);
  summary.push(`\n@forkd/${name}\n${table(scores)}`);
}
console.log(summary.join("\n"));
console.log(
  `\nmutation run: ${((Date.now() - started) / 1000).toFixed(0)} s; reports in ${relative(root, reports)}/`,
);
