import { describe, expect, it } from "vitest";
import { UsageError } from "./errors.js";
import { COMMON_FLAGS, expectPositionals, parseCommandLine, parseDuration, parseInteger } from "./options.js";

describe("parseDuration", () => {
  it.each([
    ["500ms", 500],
    ["30s", 30_000],
    ["5m", 300_000],
    ["1h", 3_600_000],
    ["2d", 172_800_000],
    ["1m30s", 90_000],
    ["1.5s", 1500],
    ["45", 45_000],
  ])("reads %s as %i ms", (text, ms) => {
    expect(parseDuration("since", text)).toBe(ms);
  });

  it.each(["", "5x", "-1s", "0", "0s", "m", "1h 2m"])(
    "refuses %j with a usage error naming the flag",
    (text) => {
      expect(() => parseDuration("since", text)).toThrow(UsageError);
      expect(() => parseDuration("since", text)).toThrow(/^--since: /);
    },
  );
});

describe("parseInteger", () => {
  it("accepts whole numbers in range", () => {
    expect(parseInteger("children", "5", { min: 1, max: 50 })).toBe(5);
  });
  it.each(["0", "51", "2.5", "x", ""])("refuses %j", (text) => {
    expect(() => parseInteger("children", text, { min: 1, max: 50 })).toThrow(
      /--children: expected a whole number from 1 to 50/,
    );
  });
});

describe("parseCommandLine", () => {
  const options = { ...COMMON_FLAGS, json: { type: "boolean" }, limit: { type: "string" } } as const;

  it("types the values and keeps positionals", () => {
    const { values, positionals } = parseCommandLine("ps", ["--json", "--limit", "3", "extra"], options);
    expect(values.json).toBe(true);
    expect(values.limit).toBe("3");
    expect(positionals).toEqual(["extra"]);
  });

  it("turns an unknown flag into a one-line usage error that points at the help", () => {
    let error: unknown;
    try {
      parseCommandLine("ps", ["--bogus"], options);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).message).not.toContain("\n");
    expect((error as UsageError).hint).toBe("see `forkd ps --help`");
    expect((error as UsageError).exitCode).toBe(2);
  });

  it("checks the number of positionals", () => {
    expect(() => expectPositionals("abort", [], { min: 1, max: 1, names: "RUN_ID" })).toThrow(
      "missing RUN_ID",
    );
    expect(() => expectPositionals("abort", ["a", "b"], { min: 1, max: 1, names: "RUN_ID" })).toThrow(
      "unexpected argument: b",
    );
  });
});
