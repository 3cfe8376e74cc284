import { describe, expect, it } from "vitest";
import { withSdkWarningsRouted } from "./sdk-warnings.js";

describe("withSdkWarningsRouted", () => {
  it("routes the SDK's console warnings to the logger, each distinct text once, and restores console.warn", () => {
    const logged: string[] = [];
    const logger = {
      debug() {},
      info() {},
      warn: (_obj: object, msg?: string) => logged.push(msg ?? ""),
      error() {},
    };
    const original = console.warn;
    const warnTwice = () => {
      console.warn("model x is deprecated");
      console.warn("model x is deprecated");
      console.warn("thinking mode", "is deprecated");
      return 42;
    };
    expect(withSdkWarningsRouted(logger, warnTwice)).toBe(42);
    expect(withSdkWarningsRouted(logger, warnTwice)).toBe(42);
    expect(logged).toEqual(["model x is deprecated", "thinking mode is deprecated"]);
    expect(console.warn).toBe(original);
  });

  it("restores console.warn when the call throws", () => {
    const original = console.warn;
    const logger = { debug() {}, info() {}, warn() {}, error() {} };
    expect(() =>
      withSdkWarningsRouted(logger, () => {
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(console.warn).toBe(original);
  });
});
