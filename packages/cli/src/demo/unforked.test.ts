import { buildForkedRequest, createForkPrefix } from "@forkd/core";
import { loadFixture } from "@forkd/fixtures";
import { describe, expect, it } from "vitest";
import { withoutCacheControl } from "./unforked.js";

describe("withoutCacheControl", () => {
  it("removes every cache marker and changes nothing else", async () => {
    const fixture = await loadFixture("4k");
    const { request } = buildForkedRequest(createForkPrefix(fixture.request, fixture.response), {
      runId: "run-1",
      directive: "Summarise the codec.",
    });
    const before = JSON.stringify(request);
    expect(before).toContain("cache_control");
    const stripped = withoutCacheControl(request);
    expect(JSON.stringify(stripped)).not.toContain("cache_control");
    expect(JSON.stringify(request)).toBe(before); // the child's own request is untouched
    const dropMarkers = (text: string) =>
      JSON.stringify(JSON.parse(text, (key, value) => (key === "cache_control" ? undefined : value)));
    expect(JSON.stringify(stripped)).toBe(dropMarkers(before));
  });
});
