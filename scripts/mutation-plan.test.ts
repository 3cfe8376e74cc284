import { describe, expect, it } from "vitest";
import {
  type Baseline,
  changedLines,
  changedTargets,
  checkScores,
  estimateSeconds,
  isAsked,
  isMutationSource,
  MUTANTS_PER_LINE,
  minimumScore,
  mutatePatterns,
  planWithinBudget,
  updatedBaseline,
} from "./mutation-plan.js";

const baseline: Baseline = {
  packages: {
    core: { startupSeconds: 20, secondsPerMutant: 1 },
    protocol: { startupSeconds: 30, secondsPerMutant: 2 },
  },
  files: {
    "packages/core/src/usage.ts": { score: 100, mutants: 73 },
    "packages/core/src/turn-loop.ts": { score: 78.19, mutants: 463 },
    "packages/protocol/src/codec.ts": { score: 81, mutants: 284, secondsPerMutant: 2.5 },
  },
};

describe("isMutationSource", () => {
  it("takes a package's sources, not its tests, test support, corpora or arbitraries", () => {
    expect(isMutationSource("core", "src/usage.ts")).toBe(true);
    expect(isMutationSource("core", "src/tools/shell/commands/sed.ts")).toBe(true);
    expect(isMutationSource("core", "src/usage.test.ts")).toBe(false);
    expect(isMutationSource("core", "src/test-support/fake.ts")).toBe(false);
    expect(isMutationSource("protocol", "src/test-support/native-json.ts")).toBe(false);
    expect(isMutationSource("core", "src/tools/shell/hostile-corpus.ts")).toBe(false);
    expect(isMutationSource("protocol", "src/arbitraries.ts")).toBe(false);
    expect(isMutationSource("protocol", "src/codec.ts")).toBe(true);
    expect(isMutationSource("core", "vitest.config.ts")).toBe(false);
  });

  it("takes only the listed pure modules of daemon and client", () => {
    expect(isMutationSource("daemon", "src/tools/secrets.ts")).toBe(true);
    expect(isMutationSource("daemon", "src/tools/secrets.test.ts")).toBe(false);
    expect(isMutationSource("daemon", "src/run-executor.ts")).toBe(false);
    expect(isMutationSource("client", "src/resource-options.ts")).toBe(true);
    expect(isMutationSource("client", "src/prefix-encoding.ts")).toBe(true);
    expect(isMutationSource("client", "src/prefix-store.ts")).toBe(false);
    expect(isMutationSource("client", "src/resources.ts")).toBe(false);
  });

  it("takes nothing from a package that is not mutation-tested", () => {
    expect(isMutationSource("sim", "src/server.ts")).toBe(false);
  });
});

describe("changedTargets", () => {
  const all = () => true;

  it("keeps the mutation sources among the changed paths, sorted, once each", () => {
    const paths = [
      "packages/protocol/src/codec.ts",
      "docs/testing.md",
      "packages/core/src/usage.ts",
      "packages/core/src/usage.ts",
      "packages/sim/src/server.ts",
      "scripts/mutation.ts",
      "packages/core/package.json",
    ];
    expect(changedTargets(paths, all)).toEqual([
      { pkg: "core", file: "src/usage.ts" },
      { pkg: "protocol", file: "src/codec.ts" },
    ]);
  });

  it("maps a changed unit test to the source it tests, the longest name that exists", () => {
    const exists = (p: string) => ["packages/protocol/src/codec.ts", "packages/core/src/a.b.ts"].includes(p);
    expect(
      changedTargets(
        ["packages/protocol/src/codec.hostile.test.ts", "packages/core/src/a.b.test.ts"],
        exists,
      ),
    ).toEqual([
      { pkg: "core", file: "src/a.b.ts" },
      { pkg: "protocol", file: "src/codec.ts" },
    ]);
  });

  it("drops paths that no longer exist and tests with no source beside them", () => {
    const exists = (p: string) => p === "packages/core/src/kept.ts";
    expect(
      changedTargets(
        ["packages/core/src/deleted.ts", "packages/core/src/kept.ts", "packages/core/src/orphan.test.ts"],
        exists,
      ),
    ).toEqual([{ pkg: "core", file: "src/kept.ts" }]);
  });

  it("keeps a changed source's changed lines, unless its test changed too", () => {
    const lines = new Map([
      ["packages/core/src/a.ts", [[3, 4] as const]],
      ["packages/core/src/b.ts", [[1, 2] as const]],
    ]);
    const exists = (p: string) => p === "packages/core/src/a.ts" || p === "packages/core/src/b.ts";
    expect(
      changedTargets(
        ["packages/core/src/a.ts", "packages/core/src/b.ts", "packages/core/src/b.test.ts"],
        exists,
        lines,
      ),
    ).toEqual([
      { pkg: "core", file: "src/a.ts", lines: [[3, 4]] },
      { pkg: "core", file: "src/b.ts" },
    ]);
    expect(changedTargets(["packages/core/src/b.test.ts", "packages/core/src/b.ts"], exists, lines)).toEqual([
      { pkg: "core", file: "src/b.ts" },
    ]);
  });

  it("finds nothing in a change that touched no mutation source", () => {
    expect(changedTargets(["README.md", "packages/core/src/test-support/x.ts"], all)).toEqual([]);
  });
});

describe("changedLines", () => {
  it("reads the new side of every hunk of git diff --unified=0, file by file", () => {
    const diff = [
      "diff --git a/packages/core/src/usage.ts b/packages/core/src/usage.ts",
      "index 1..2 100644",
      "--- a/packages/core/src/usage.ts",
      "+++ b/packages/core/src/usage.ts",
      "@@ -10 +10 @@ export function x() {",
      "-  a",
      "+  b",
      "@@ -20,0 +21,3 @@",
      "+c",
      "@@ -40,2 +43,0 @@",
      "-gone",
      "diff --git a/packages/protocol/src/new.ts b/packages/protocol/src/new.ts",
      "--- /dev/null",
      "+++ b/packages/protocol/src/new.ts",
      "@@ -0,0 +1,5 @@",
    ].join("\n");
    expect(changedLines(diff)).toEqual(
      new Map([
        [
          "packages/core/src/usage.ts",
          [
            [10, 10],
            [21, 23],
          ],
        ],
        ["packages/protocol/src/new.ts", [[1, 5]]],
      ]),
    );
  });
});

describe("mutatePatterns and isAsked", () => {
  it("name a whole file, or each range of lines", () => {
    expect(mutatePatterns({ pkg: "core", file: "src/a.ts" })).toEqual(["src/a.ts"]);
    expect(
      mutatePatterns({
        pkg: "core",
        file: "src/a.ts",
        lines: [
          [3, 3],
          [7, 9],
        ],
      }),
    ).toEqual(["src/a.ts:3-3", "src/a.ts:7-9"]);
  });

  it("keep a mutant of an asked file, within an asked range when there is one, first and last line included", () => {
    const patterns = ["src/a.ts:7-9", "src/tools/**/*.ts"];
    expect([6, 7, 9, 10].map((line) => isAsked(patterns, "src/a.ts", line))).toEqual([
      false,
      true,
      true,
      false,
    ]);
    expect(isAsked(patterns, "src/tools/shell/lexer.ts", 500)).toBe(true);
    expect(isAsked(patterns, "src/b.ts", 1)).toBe(false);
    expect(isAsked([], "src/b.ts", 1)).toBe(true);
  });
});

describe("estimateSeconds", () => {
  it("uses the file's mutant count and the package's cost per mutant", () => {
    expect(estimateSeconds({ pkg: "core", file: "src/usage.ts" }, baseline, 999)).toBe(73);
  });

  it("prefers the file's own cost per mutant", () => {
    expect(estimateSeconds({ pkg: "protocol", file: "src/codec.ts" }, baseline, 999)).toBe(710);
  });

  it("charges changed lines their share of the file's mutants", () => {
    // 463 mutants over 500 lines, 50 lines changed: 47 mutants at 1 s.
    const target = {
      pkg: "core",
      file: "src/turn-loop.ts",
      lines: [
        [1, 40],
        [100, 109],
      ] as const,
    };
    expect(estimateSeconds(target, baseline, 500)).toBe(47);
    expect(estimateSeconds({ ...target, lines: [[1, 900]] as const }, baseline, 500)).toBe(463);
  });

  it("guesses a new file's mutants from its lines", () => {
    expect(estimateSeconds({ pkg: "protocol", file: "src/new.ts" }, baseline, 100)).toBe(
      Math.ceil(100 * MUTANTS_PER_LINE) * 2,
    );
  });
});

describe("planWithinBudget", () => {
  const core = (file: string, seconds: number) => ({ target: { pkg: "core", file }, seconds });
  const protocol = (file: string, seconds: number) => ({ target: { pkg: "protocol", file }, seconds });

  it("runs everything that fits, counting each package's startup once", () => {
    const plan = planWithinBudget([core("a.ts", 40), core("b.ts", 40), protocol("c.ts", 10)], baseline, 140);
    expect(plan.run.map((p) => p.target.file)).toEqual(["a.ts", "b.ts", "c.ts"]);
    expect(plan.seconds).toBe(20 + 40 + 40 + 30 + 10);
    expect(plan.leftOut).toEqual([]);
  });

  it("fits exactly at the budget and leaves out one second more, saying why", () => {
    expect(planWithinBudget([core("a.ts", 80)], baseline, 100).run).toHaveLength(1);
    const plan = planWithinBudget([core("a.ts", 81)], baseline, 100);
    expect(plan.run).toEqual([]);
    expect(plan.seconds).toBe(0);
    expect(plan.leftOut).toEqual([
      {
        target: { pkg: "core", file: "a.ts" },
        seconds: 101,
        reason: "estimated 101 s, 100 s of the 100 s budget left",
      },
    ]);
  });

  it("skips what does not fit and still runs smaller files after it", () => {
    const plan = planWithinBudget(
      [core("a.ts", 50), protocol("big.ts", 100), core("b.ts", 20)],
      baseline,
      100,
    );
    expect(plan.run.map((p) => p.target.file)).toEqual(["a.ts", "b.ts"]);
    expect(plan.leftOut.map((l) => [l.target.file, l.reason])).toEqual([
      ["big.ts", "estimated 130 s, 30 s of the 100 s budget left"],
    ]);
    expect(plan.seconds).toBe(90);
  });

  it("charges a left-out package's startup to the first of its files that runs", () => {
    const plan = planWithinBudget([protocol("big.ts", 500), protocol("small.ts", 10)], baseline, 100);
    expect(plan.run.map((p) => p.target.file)).toEqual(["small.ts"]);
    expect(plan.seconds).toBe(40);
  });
});

describe("minimumScore and checkScores", () => {
  it("holds a file to 90 % less the tolerance, or to its lower baseline less the tolerance", () => {
    expect(minimumScore("packages/core/src/usage.ts", baseline)).toBe(89);
    expect(minimumScore("packages/core/src/turn-loop.ts", baseline)).toBeCloseTo(77.19);
    expect(minimumScore("packages/core/src/new.ts", baseline)).toBe(89);
  });

  it("passes at the minimum exactly and fails just below it; a file without mutants passes", () => {
    expect(
      checkScores(
        [
          { path: "packages/core/src/usage.ts", score: 89 },
          { path: "packages/core/src/new.ts", score: 88.99 },
          { path: "packages/core/src/types.ts", score: null },
        ],
        baseline,
      ).map((v) => v.pass),
    ).toEqual([true, false, true]);
  });
});

describe("updatedBaseline", () => {
  it("writes measured scores and mutant counts, keeps a file's own cost, leaves the rest, sorts", () => {
    const next = updatedBaseline(baseline, [
      { path: "packages/protocol/src/codec.ts", score: 93.5, mutants: 280 },
      { path: "packages/core/src/a.ts", score: 95, mutants: 10 },
      { path: "packages/core/src/types.ts", score: null, mutants: 0 },
    ]);
    expect(next.files["packages/protocol/src/codec.ts"]).toEqual({
      score: 93.5,
      mutants: 280,
      secondsPerMutant: 2.5,
    });
    expect(Object.keys(next.files)).toEqual([
      "packages/core/src/a.ts",
      "packages/core/src/turn-loop.ts",
      "packages/core/src/usage.ts",
      "packages/protocol/src/codec.ts",
    ]);
    expect(next.packages).toEqual(baseline.packages);
    expect(baseline.files["packages/protocol/src/codec.ts"]?.score).toBe(81);
  });
});
