import { describe, expect, it } from "vitest";
import { createForkPrefix } from "./cache-safe-params.js";
import { prepareForkRun } from "./fork-run-plan.js";
import { isSealedValue, sealSharedPrefix } from "./shared-prefix.js";
import { loadFixture } from "./test-support/fixtures.js";

function prefix() {
  const fixture = loadFixture("4k");
  return createForkPrefix(fixture.request, fixture.response);
}

describe("sealSharedPrefix", () => {
  it("freezes the prefix all the way down: a write into it throws instead of changing bytes already reused", () => {
    const sealed = sealSharedPrefix(prefix());
    const message = sealed.params.messages[0]!;
    expect(isSealedValue(sealed)).toBe(true);
    expect(isSealedValue(message)).toBe(true);
    expect(isSealedValue(sealed.params.tools)).toBe(true);
    expect(() => {
      (message as { role: string }).role = "assistant";
    }).toThrow(TypeError);
    const block = (message.content as unknown as Record<string, unknown>[])[0]!;
    expect(() => {
      block.cache_control = { type: "ephemeral" };
    }).toThrow(TypeError);
    expect(() => sealed.params.messages.push(message)).toThrow(TypeError);
  });

  it("marks nothing it was not given", () => {
    sealSharedPrefix(prefix());
    const other = prefix();
    expect(isSealedValue(other.params.messages[0])).toBe(false);
    expect(isSealedValue(null)).toBe(false);
    expect(isSealedValue("text")).toBe(false);
  });

  it("builds children from a sealed prefix as from any other, leaving the parent's objects in place", () => {
    const sealed = sealSharedPrefix(prefix());
    const plain = prefix();
    for (const strictAlternation of [false, true]) {
      const input = { runId: "child-1", cacheShared: true, directive: "Look at x.", strictAlternation };
      const fromSealed = prepareForkRun({ ...input, prefix: sealed });
      const fromPlain = prepareForkRun({ ...input, prefix: plain });
      expect(JSON.stringify(fromSealed.request)).toBe(JSON.stringify(fromPlain.request));
      expect(fromSealed.request.messages[0]).toBe(sealed.params.messages[0]);
    }
  });
});
