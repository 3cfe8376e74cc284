// The built-in tools' input checks: what a model (sloppy or hostile) may send, and what it reads back.
import { describe, expect, it } from "vitest";
import { EditInputSchema, GrepInputSchema, parseToolInput, ReadInputSchema } from "./inputs.js";

describe("parseToolInput", () => {
  it("refuses input that is not an object, saying what it got, without throwing", () => {
    for (const [input, got] of [
      [null, "null"],
      [["a.txt"], "array"],
      ["a.txt", "string"],
    ] as const) {
      expect(parseToolInput("Read", ReadInputSchema, input)).toEqual({
        ok: false,
        message: `Invalid input for Read: input: Invalid input: expected object, received ${got}. Fix the input and call Read again.`,
      });
    }
  });

  it("takes flags as booleans or as the strings true and false, and null as absent", () => {
    expect(
      parseToolInput("Grep", GrepInputSchema, { pattern: "x", "-i": "true", "-n": "false", multiline: null }),
    ).toEqual({ ok: true, value: { pattern: "x", "-i": true, "-n": false } });
    expect(
      parseToolInput("Edit", EditInputSchema, {
        file_path: "a",
        old_string: "x",
        new_string: "y",
        replace_all: "yes",
      }),
    ).toEqual({
      ok: false,
      message: "Invalid input for Edit: replace_all: Invalid input. Fix the input and call Edit again.",
    });
  });

  it("takes whole numbers given as strings, and names every field that is wrong", () => {
    expect(parseToolInput("Read", ReadInputSchema, { file_path: "a", offset: " 3 ", limit: "1" })).toEqual({
      ok: true,
      value: { file_path: "a", offset: 3, limit: 1 },
    });
    expect(parseToolInput("Read", ReadInputSchema, { file_path: "", offset: "-1", limit: 0 })).toEqual({
      ok: false,
      message:
        "Invalid input for Read: file_path: Too small: expected string to have >=1 characters; " +
        "offset: Invalid input; limit: Too small: expected number to be >0. Fix the input and call Read again.",
    });
  });
});
