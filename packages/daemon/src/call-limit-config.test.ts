// The call limits' settings: flags, environment and config file reach the daemon's configuration,
// and a lease the daemons bucket would outlive is refused with a clear error.
import { describe, expect, it } from "vitest";
import { DaemonConfigError, loadDaemonConfig } from "./config.js";

describe("call limit settings", () => {
  it("reads the limits per key, model and tenant from flags, environment and config", () => {
    const config = loadDaemonConfig({
      env: { FORKD_CALL_LIMIT_PER_MODEL: "4", FORKD_TENANT: "acme" },
      argv: ["--call-limit-per-key", "8", "--call-limit-per-tenant", "12", "--call-limit-lease", "9000"],
      overrides: { callLimitModels: { "claude-opus-4-5": 2 } },
    });
    expect(config).toMatchObject({
      callLimitPerKey: 8,
      callLimitPerModel: 4,
      callLimitPerTenant: 12,
      tenant: "acme",
      callLimitLeaseMs: 9000,
      callLimitModels: { "claude-opus-4-5": 2 },
    });
    const defaults = loadDaemonConfig({ env: {}, argv: [] });
    expect(defaults.callLimitPerModel).toBeUndefined();
    expect(defaults.tenant).toBe("default");
    expect(defaults.callLimitLeaseMs).toBe(30_000);
  });

  it("refuses a lease longer than the daemons bucket keeps an entry, and a limit of 0", () => {
    expect(() => loadDaemonConfig({ env: { FORKD_CALL_LIMIT_LEASE_MS: "30001" }, argv: [] })).toThrow(
      DaemonConfigError,
    );
    expect(() => loadDaemonConfig({ env: {}, argv: ["--call-limit-per-model", "0"] })).toThrow(
      /callLimitPerModel/,
    );
  });
});
