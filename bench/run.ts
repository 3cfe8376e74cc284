// The benchmark runner: `pnpm bench` runs every benchmark, `pnpm bench --quick` a short smoke run,
// `--only 2,5` some of them. Writes bench/results/<id>.json and latest.md (quick runs write to
// bench/results/quick/ so they never overwrite the committed full results) and prints the table.
// Exit status: 0 whatever the figures; 1 when a benchmark crashed (or timed out).
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { benchmarks } from "./src/benchmarks.js";
import { within } from "./src/cluster.js";
import {
  latestMarkdown,
  machineInfo,
  readResults,
  resultsTable,
  type StoredResult,
  writeResult,
} from "./src/report.js";
import { now, round } from "./src/stats.js";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    out: { type: "string" },
    sizes: { type: "string" },
  },
  allowPositionals: false,
});
const quick = values.quick === true;
const only = values.only
  ?.split(",")
  .map((id) => Number(id.trim()))
  .filter((id) => Number.isInteger(id));
const sizes = values.sizes
  ?.split(",")
  .map((size) => Number(size.trim()))
  .filter((size) => Number.isInteger(size) && size > 0);
const selected = benchmarks.filter((b) => only === undefined || only.includes(b.id));
if (selected.length === 0) {
  console.error(`no benchmark matches --only ${values.only}; ids: ${benchmarks.map((b) => b.id).join(", ")}`);
  process.exit(2);
}
const resultsDir =
  values.out ?? fileURLToPath(new URL(quick ? "./results/quick/" : "./results/", import.meta.url));
mkdirSync(resultsDir, { recursive: true });

// @anthropic-ai/sdk warns on every request for a deprecated model (the fixtures use
// claude-sonnet-4-5). Thousands of identical lines would bury the output and cost a synchronous
// write each; they are counted and reported once instead.
let sdkDeprecationWarnings = 0;
const originalWarn = console.warn;
console.warn = (...args: unknown[]) => {
  if (typeof args[0] === "string" && /^The model '.*' is deprecated/.test(args[0])) {
    sdkDeprecationWarnings += 1;
    return;
  }
  originalWarn(...args);
};

const machine = await machineInfo();
const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
log(
  `${quick ? "quick" : "full"} run of ${selected.map((b) => b.id).join(", ")} on ${machine.os}, ${machine.cpus} cpus, Node ${machine.node}, ${machine.natsServer}`,
);

// A benchmark that hangs is a crash: the suite must end, in CI too.
const defaultTimeoutMs = quick ? 90_000 : 400_000;
let crashed = 0;
for (const benchmark of selected) {
  log(`#${benchmark.id} ${benchmark.name}`);
  const started = now();
  const loadBefore = loadavg()[0]!;
  let stored: StoredResult;
  try {
    const timeoutMs = benchmark.timeoutMs?.[quick ? "quick" : "full"] ?? defaultTimeoutMs;
    const result = await within(
      benchmark.run({ quick, sizes, log: (message) => log(`  #${benchmark.id}: ${message}`) }),
      timeoutMs,
      `benchmark #${benchmark.id}`,
    );
    stored = {
      id: benchmark.id,
      name: benchmark.name,
      ...result,
      durationMs: Math.round(now() - started),
      mode: quick ? "quick" : "full",
      finishedAt: new Date().toISOString(),
      machine,
      loadAverage: { before: round(loadBefore), after: round(loadavg()[0]!) },
    };
    log(`  #${benchmark.id}: ${stored.pass ? "pass" : "MISS"} — ${stored.headline}`);
  } catch (error) {
    crashed += 1;
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    log(`  #${benchmark.id} CRASHED: ${text}`);
    stored = {
      id: benchmark.id,
      name: benchmark.name,
      figures: {},
      baseline: {},
      target: "",
      headline: "",
      baselineHeadline: "",
      pass: false,
      params: {},
      notes: [],
      durationMs: Math.round(now() - started),
      mode: quick ? "quick" : "full",
      finishedAt: new Date().toISOString(),
      machine,
      loadAverage: { before: round(loadBefore), after: round(loadavg()[0]!) },
      error: text,
    };
  }
  writeResult(resultsDir, stored);
}

const all = readResults(resultsDir);
writeFileSync(join(resultsDir, "latest.md"), latestMarkdown(all));
// A full run into the committed results also refreshes the table in bench/README.md.
if (!quick && values.out === undefined) {
  const readme = fileURLToPath(new URL("./README.md", import.meta.url));
  const text = readFileSync(readme, "utf8");
  const updated = text.replace(
    /(<!-- latest-table -->\n)[\s\S]*?(<!-- \/latest-table -->)/,
    `$1${resultsTable(all)}\n$2`,
  );
  if (updated !== text) {
    writeFileSync(readme, updated);
    // The table is written unaligned; the linter wants it formatted, or CI's lint fails on the README.
    const biome = fileURLToPath(new URL("../node_modules/.bin/biome", import.meta.url));
    const formatted = spawnSync(biome, ["format", "--write", readme], { encoding: "utf8" });
    if (formatted.status !== 0) log(`could not format ${readme}: ${formatted.stderr}`);
  }
}
if (sdkDeprecationWarnings > 0) {
  log(`suppressed ${sdkDeprecationWarnings} identical SDK deprecation warnings (claude-sonnet-4-5)`);
}
process.stdout.write(`\n${resultsTable(all.filter((r) => selected.some((b) => b.id === r.id)))}\n\n`);
log(`results in ${resultsDir}`);
// Exit explicitly: a crashed benchmark may have left sockets open; servers and daemon processes
// it started die with this process (exit handlers and the parent-death signal).
process.exit(crashed > 0 ? 1 : 0);
