import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { FIXTURE_NAMES, fixturePath, loadFixture } from "./index.js";

describe("fixtures", () => {
  it.each(FIXTURE_NAMES)("loads parent-turn-%s", async (name) => {
    expect(fixturePath(name)).toMatch(new RegExp(`packages/testing/fixtures/parent-turn-${name}\\.json$`));
    expect(existsSync(fixturePath(name))).toBe(true);
    const fixture = await loadFixture(name);
    expect(fixture.description).toMatch(/^parent turn/);
    expect(fixture.request.model).toBeTypeOf("string");
    expect(fixture.request.messages.length).toBeGreaterThan(0);
    expect(fixture.response.role).toBe("assistant");
    expect(fixture.response.content.length).toBeGreaterThan(0);
  });

  it("returns a fresh object on every call", async () => {
    const a = await loadFixture("4k");
    a.request.messages.length = 0;
    expect((await loadFixture("4k")).request.messages.length).toBeGreaterThan(0);
  });
});
