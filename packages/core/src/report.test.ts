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
});
