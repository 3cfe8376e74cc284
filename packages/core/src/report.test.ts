import { describe, expect, it } from "vitest";
import { parseForkReport } from "./report.js";

describe("parseForkReport", () => {
  it("reads the plain format", () => {
    const text = [
      "Scope: audit the codec",
      "Result: two bugs fixed",
      "in the decoder.",
      "Key files: packages/protocol/src/codec.ts, packages/protocol/src/limits.ts",
      "Files changed: packages/protocol/src/codec.ts",
      "Issues: none",
    ].join("\n");
    expect(parseForkReport(text)).toEqual({
      scope: "audit the codec",
      result: "two bugs fixed\nin the decoder.",
      key_files: ["packages/protocol/src/codec.ts", "packages/protocol/src/limits.ts"],
      files_changed: ["packages/protocol/src/codec.ts"],
      issues: "none",
    });
  });

  it("tolerates case, bold, headings, bullets and missing sections", () => {
    const text = [
      "Here is my report.",
      "",
      "**SCOPE:** the turn loop",
      "- **Result**: works",
      "## Key Files",
      "- `src/turn-loop.ts`",
      "* src/resume.ts",
      "__files changed__: none",
    ].join("\n");
    expect(parseForkReport(text)).toEqual({
      scope: "the turn loop",
      result: "works",
      key_files: ["src/turn-loop.ts", "src/resume.ts"],
      files_changed: [],
    });
  });

  it("ignores prose that merely starts with a label, and text without a report", () => {
    expect(parseForkReport("Results are in: all good.\nScope creep was avoided")).toBeUndefined();
    expect(parseForkReport("")).toBeUndefined();
    expect(parseForkReport("Result of the check was fine\nIssues: one")).toEqual({ issues: "one" });
  });

  it("reads a model's final text in time linear in its lines' length (the daemon parses it)", () => {
    // Adjacent `\s*` in the heading pattern backtracked cubically over a long run of blanks: a
    // final answer with a line of 40,000 spaces held the daemon's event loop for seconds.
    // 128k blanks took about 100 s before the fix; a bound of 3 s tells the two apart on any machine.
    for (const line of [" ".repeat(128_000), `# ${"\t".repeat(128_000)}`, `**${" ".repeat(128_000)}x`]) {
      const started = performance.now();
      expect(parseForkReport(`${line}\nResult: done`)).toEqual({ result: "done" });
      expect(performance.now() - started).toBeLessThan(3_000);
    }
    // A heading's own line may be as long as it likes after its label.
    expect(parseForkReport(`Result: ${"x ".repeat(20_000)}`)?.result).toHaveLength(40_000 - 1);
  });

  it("tells a heading from prose by its colon or its markdown heading with nothing after the label", () => {
    expect(parseForkReport("## Result\ndone")).toEqual({ result: "done" });
    expect(parseForkReport("## Result   \ndone")).toEqual({ result: "done" });
    // Blanks past the part of the line the pattern reads are still nothing after the label.
    expect(parseForkReport(`## Result${" ".repeat(300)}\ndone`)).toEqual({ result: "done" });
    // A markdown heading that goes on after its label is a sentence, and so is a bare label.
    expect(parseForkReport("## Result of the audit\ndone")).toBeUndefined();
    expect(parseForkReport("Result\ndone")).toBeUndefined();
    expect(parseForkReport("### Open issues\nflaky test")).toEqual({ issues: "flaky test" });
    // The first section of a kind wins; a later heading of that kind is text of the current section.
    expect(parseForkReport("Scope: a\nScope: b")).toEqual({ scope: "a\nScope: b" });
  });

  it("lists files from numbered and bulleted lines and comma lists, without their marks", () => {
    const text = [
      "Key files:",
      "1. `a.ts`",
      "2)  b.ts",
      "-   **c.ts**",
      "+ _d.ts_",
      "• e.ts,",
      "f.ts, g.ts,h.ts",
      "- none",
      "Files changed: None.",
    ].join("\n");
    expect(parseForkReport(text)).toEqual({
      key_files: ["a.ts", "b.ts", "c.ts", "d.ts", "e.ts", "f.ts", "g.ts,h.ts"],
      files_changed: [],
    });
    // Marks are taken off an item's ends only, and a number is a list mark only before its dot.
    expect(parseForkReport("Files changed: 10.5ts, x*y.ts, 2024-plan.md")?.files_changed).toEqual([
      "10.5ts",
      "x*y.ts",
      "2024-plan.md",
    ]);
    expect(
      parseForkReport("Files changed: a.ts, - b.ts, 10. c.ts, notes - draft.md, ** d.ts **, e.ts,"),
    ).toEqual({
      files_changed: ["a.ts", "b.ts", "c.ts", "notes - draft.md", "d.ts", "e.ts"],
    });
    expect(parseForkReport("Files changed: n/a")?.files_changed).toEqual([]);
    expect(parseForkReport("Files changed:")?.files_changed).toEqual([]);
  });
});
