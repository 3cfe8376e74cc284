import { DEFAULT_SUBJECT_PREFIX } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { resolveResourceOptions } from "./resource-options.js";

const WEEK_MS = 7 * 24 * 60 * 60 * 1000;
const standalone = { info: undefined };
const clustered = { info: { cluster: "forkd" } };

describe("resolveResourceOptions", () => {
  it("fills every default as documented", () => {
    expect(resolveResourceOptions(standalone)).toEqual({
      prefix: DEFAULT_SUBJECT_PREFIX,
      replicas: 1,
      ackWaitMs: 30_000,
      maxDeliver: 5,
      eventsMaxAgeMs: 24 * 60 * 60 * 1000,
      duplicateWindowMs: 120_000,
      daemonTtlMs: 30_000,
      specsMaxAgeMs: WEEK_MS,
      specsMaxBytes: 256 * 1024 ** 2,
      eventsMaxBytes: 4 * 1024 ** 3,
      runsTtlMs: WEEK_MS,
      retentionMs: 6 * 60 * 60 * 1000,
      prefixRetentionMs: 60 * 60 * 1000,
      runsMaxBytes: 128 * 1024 ** 2,
      prefixesTtlMs: WEEK_MS,
      prefixesMaxBytes: 2 * 1024 ** 3,
    });
  });

  it("replicates three times in a cluster and once on a lone server, unless told", () => {
    expect(resolveResourceOptions(clustered).replicas).toBe(3);
    expect(resolveResourceOptions(clustered, { replicas: "auto" }).replicas).toBe(3);
    expect(resolveResourceOptions(standalone, { replicas: "auto" }).replicas).toBe(1);
    expect(resolveResourceOptions({ info: { cluster: "" } }).replicas).toBe(1);
    expect(resolveResourceOptions(clustered, { replicas: 1 }).replicas).toBe(1);
    expect(resolveResourceOptions(standalone, { replicas: 5 }).replicas).toBe(5);
  });

  it("keeps every option given", () => {
    const given = {
      prefix: "tenant-a",
      ackWaitMs: 1,
      maxDeliver: 2,
      eventsMaxAgeMs: 3,
      duplicateWindowMs: 4,
      daemonTtlMs: 5,
      specsMaxAgeMs: 6,
      specsMaxBytes: 7,
      eventsMaxBytes: 8,
      runsTtlMs: 9,
      runsMaxBytes: 10,
      prefixesTtlMs: 11,
      prefixesMaxBytes: 12,
      retentionMs: 13,
      prefixRetentionMs: 14,
    };
    expect(resolveResourceOptions(standalone, given)).toEqual({ ...given, replicas: 1 });
  });
});
