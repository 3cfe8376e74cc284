// `callAheadOfClaim`: on unless an operator turns it off, from the environment, a flag or the config
// file; anything but a boolean (or "true"/"false" from the environment and flags) is refused.
import { describe, expect, it } from "vitest";
import { DaemonConfigError, loadDaemonConfig } from "./config.js";

describe("callAheadOfClaim", () => {
  it("is on by default", () => {
    expect(loadDaemonConfig({ env: {}, argv: [] }).callAheadOfClaim).toBe(true);
  });

  it("is turned off from the environment, a flag or the config file, the flag winning", () => {
    expect(loadDaemonConfig({ env: { FORKD_CALL_AHEAD_OF_CLAIM: "false" }, argv: [] }).callAheadOfClaim).toBe(
      false,
    );
    expect(loadDaemonConfig({ env: {}, argv: ["--call-ahead-of-claim", "false"] }).callAheadOfClaim).toBe(
      false,
    );
    expect(
      loadDaemonConfig({ env: {}, argv: [], overrides: { callAheadOfClaim: false } }).callAheadOfClaim,
    ).toBe(false);
    expect(
      loadDaemonConfig({
        env: { FORKD_CALL_AHEAD_OF_CLAIM: "false" },
        argv: ["--call-ahead-of-claim", "true"],
      }).callAheadOfClaim,
    ).toBe(true);
  });

  it("refuses a value that is not a boolean, naming the setting", () => {
    for (const value of ["no", "0", "FALSE"]) {
      expect(() => loadDaemonConfig({ env: { FORKD_CALL_AHEAD_OF_CLAIM: value }, argv: [] })).toThrow(
        DaemonConfigError,
      );
    }
    expect(() => loadDaemonConfig({ env: {}, argv: ["--call-ahead-of-claim", "yes"] })).toThrow(
      /callAheadOfClaim/,
    );
  });
});
