import { describe, expect, it } from "vitest";
import { newRunId } from "./run-id.js";

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("newRunId", () => {
  it("makes UUIDv7s that carry the given millisecond", () => {
    const at = Date.UTC(2026, 10, 27, 22, 0, 0, 123);
    const id = newRunId(at);
    expect(id).toMatch(UUID_V7);
    expect(Number.parseInt(id.replaceAll("-", "").slice(0, 12), 16)).toBe(at);
  });

  it("makes distinct ids within one millisecond, across refills of its random pool", () => {
    // 4096 pooled bytes make 256 ids: 1,000 ids use four pools, so a slice used twice would show.
    const ids = Array.from({ length: 1_000 }, () => newRunId(1_800_000_000_000));
    for (const id of ids) expect(id).toMatch(UUID_V7);
    expect(new Set(ids).size).toBe(ids.length);
    // The random tail, not only the sequence bits, differs between ids.
    expect(new Set(ids.map((id) => id.slice(-12))).size).toBe(ids.length);
  });

  it("sorts by creation time", () => {
    const earlier = newRunId(1_800_000_000_000);
    const later = newRunId(1_800_000_000_001);
    expect(earlier < later).toBe(true);
  });
});
