// `pnpm chaos [--minutes N] [--seed S] [--daemons D] [--out FILE]`: a bounded chaos run over a real
// three-node NATS cluster and daemon processes (test/chaos/run-chaos.ts), then the checker over every
// event log and the tool ledger. Prints the results table, writes it as JSON (default
// bench/results/chaos.json), and exits 1 when the checker found anything or a run did not end.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import { type ChaosReport, runChaos } from "../test/chaos/run-chaos.js";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "2" },
    seed: { type: "string", default: "1" },
    daemons: { type: "string", default: "3" },
    out: { type: "string", default: "bench/results/chaos.json" },
  },
});
const minutes = Number(values.minutes);
const seed = Number(values.seed);
const daemons = Number(values.daemons);
if (!(minutes > 0 && minutes <= 120) || !Number.isInteger(seed) || !(daemons >= 2 && daemons <= 16)) {
  console.error("usage: pnpm chaos [--minutes 0<N<=120] [--seed INTEGER] [--daemons 2..16] [--out FILE]");
  process.exit(2);
}

function table(report: ChaosReport): string {
  const rows: [string, string][] = [
    ["seed", String(report.seed)],
    ["faults injected for", `${(report.durationMs / 60_000).toFixed(1)} min`],
    ...Object.entries(report.faults).map(([fault, count]): [string, string] => [
      `fault: ${fault}`,
      String(count),
    ]),
    ["provider calls (faulted on purpose)", `${report.provider.requests} (${report.provider.faulted})`],
    ["specs accepted", String(report.forks.accepted)],
    ...Object.entries(report.forks.refused).map(([code, count]): [string, string] => [
      `forks refused: ${code}`,
      String(count),
    ]),
    ...Object.entries(report.outcomes).map(([outcome, count]): [string, string] => [
      `runs ${outcome}`,
      String(count),
    ]),
    ["attempts resumed on another daemon", String(report.resumedAttempts)],
    ["events checked", String(report.events)],
    ["all runs ended within, after the last fault", `${(report.settledInMs / 1000).toFixed(1)} s`],
    ["checker violations", String(report.violations.length)],
  ];
  return [
    "| figure | value |",
    "| --- | --- |",
    ...rows.map(([name, value]) => `| ${name} | ${value} |`),
  ].join("\n");
}

const started = Date.now();
const report = await runChaos({
  durationMs: minutes * 60_000,
  seed,
  daemons,
  log: (line) => console.error(`[${((Date.now() - started) / 1000).toFixed(1)} s] ${line}`),
});
console.log(table(report));
for (const violation of report.violations) console.log(`VIOLATION ${JSON.stringify(violation)}`);
const out = resolve(values.out);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify({ measuredAt: new Date().toISOString(), ...report }, null, 2)}\n`);
console.error(`wrote ${out}`);
process.exitCode = report.violations.length === 0 && report.outcomes.not_ended === undefined ? 0 : 1;
