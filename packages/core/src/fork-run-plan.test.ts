// One child's run, as the in-process fork and the daemon both start it.
import { describe, expect, it } from "vitest";
import { diagnosisLayersOf } from "./cache-diagnosis.js";
import { computeCacheKey } from "./cache-key.js";
import { createForkPrefix } from "./cache-safe-params.js";
import { InvalidForkParamsError } from "./errors.js";
import { prepareForkRun } from "./fork-run-plan.js";
import { buildForkedRequest, DEFAULT_MAX_TOKENS } from "./forked-request.js";
import { loadFixture } from "./test-support/fixtures.js";

function prefixOf(maxTokens?: number, thinking?: Record<string, unknown>) {
  const fixture = loadFixture("4k");
  const request = { ...fixture.request };
  if (maxTokens === undefined) delete request.max_tokens;
  else request.max_tokens = maxTokens;
  if (thinking !== undefined) request.thinking = thinking as typeof request.thinking;
  return createForkPrefix(request, fixture.response);
}

const base = { runId: "r1", directive: "Look at the tests.", cacheShared: true };

describe("prepareForkRun", () => {
  it("builds the same request buildForkedRequest does, breakpoint included", () => {
    const prefix = prefixOf(4000);
    const plan = prepareForkRun({ ...base, prefix });
    const forked = buildForkedRequest(prefix, { runId: "r1", directive: "Look at the tests." });
    expect(plan.request).toEqual(forked.request);
    expect(plan.forkBreakpoint).toEqual(forked.breakpoint);
  });

  it("takes max_tokens from the overrides, else the parent, else the default — and caps it", () => {
    expect(
      prepareForkRun({ ...base, prefix: prefixOf(4000), overrides: { max_tokens: 100 } }).request.max_tokens,
    ).toBe(100);
    expect(prepareForkRun({ ...base, prefix: prefixOf(4000) }).request.max_tokens).toBe(4000);
    expect(prepareForkRun({ ...base, prefix: prefixOf(), defaultMaxTokens: 1234 }).request.max_tokens).toBe(
      1234,
    );
    expect(prepareForkRun({ ...base, prefix: prefixOf() }).request.max_tokens).toBe(DEFAULT_MAX_TOKENS);
    const capped = { ...base, prefix: prefixOf(4000), maxTokensCeiling: 3999 };
    expect(prepareForkRun(capped).request.max_tokens).toBe(3999);
    expect(prepareForkRun({ ...capped, maxTokensCeiling: 4000 }).request.max_tokens).toBe(4000);
    expect(prepareForkRun({ ...capped, overrides: { max_tokens: 50_000 } }).request.max_tokens).toBe(3999);
  });

  it("checks the child's first turn against the parent's layer hashes, a model override's layers apart", () => {
    const prefix = prefixOf(4000);
    const parentKey = computeCacheKey(prefix.params, prefix.betas);
    const parentLayers = diagnosisLayersOf(prefix.params, prefix.betas);
    const same = prepareForkRun({ ...base, prefix });
    expect(same.prefixHash).toBe(parentKey.hash);
    expect(same.cacheCheck).toEqual({ parentLayers, prefixLayers: parentLayers });
    const other = prepareForkRun({ ...base, prefix, overrides: { model: "claude-opus-4-7" } });
    expect(other.request.model).toBe("claude-opus-4-7");
    expect(other.prefixHash).toBe(parentKey.hash);
    expect(other.cacheCheck?.prefixLayers.model).not.toBe(parentLayers.model);
    expect(other.cacheCheck?.prefixLayers.messages).toBe(parentLayers.messages);
  });

  it("claims no cache when the prefix is not the parent's", () => {
    const plan = prepareForkRun({ ...base, prefix: prefixOf(4000), cacheShared: false });
    expect(plan.prefixHash).toBeNull();
    expect(plan.cacheCheck).toBeUndefined();
  });

  it("hands the system reminder to the turn loop as well as to the request", () => {
    const plan = prepareForkRun({
      ...base,
      prefix: prefixOf(4000),
      overrides: { system_reminder: "Be brief." },
    });
    expect(plan.systemReminder).toBe("Be brief.");
    expect(JSON.stringify(plan.request.messages.at(-1))).toContain("Be brief.");
    expect(prepareForkRun({ ...base, prefix: prefixOf(4000) }).systemReminder).toBeUndefined();
  });

  it("refuses an output budget that is not above the parent's thinking budget, at its exact edge", () => {
    const thinking = { type: "enabled", budget_tokens: 4096 };
    const prefix = prefixOf(8000, thinking);
    const refusal = (input: Partial<Parameters<typeof prepareForkRun>[0]>) => {
      try {
        prepareForkRun({ ...base, prefix, ...input });
      } catch (error) {
        return error;
      }
      return undefined;
    };
    // Just above the budget: the provider accepts it.
    expect(prepareForkRun({ ...base, prefix, overrides: { max_tokens: 4097 } }).request.max_tokens).toBe(
      4097,
    );
    expect(prepareForkRun({ ...base, prefix, maxTokensCeiling: 4097 }).request.max_tokens).toBe(4097);
    // At the budget: refused, saying who lowered it.
    const overridden = refusal({ overrides: { max_tokens: 4096 } });
    expect(overridden).toBeInstanceOf(InvalidForkParamsError);
    expect(overridden).toMatchObject({ field: "max_tokens", code: "invalid_fork_params" });
    expect((overridden as Error).message).toMatch(
      /^max_tokens \(4096\) is not above the parent's thinking budget \(4096\)/,
    );
    const ceiling = refusal({ maxTokensCeiling: 4096 });
    expect((ceiling as Error).message).toMatch(/^the runner's ceiling on output tokens \(4096\)/);
    // A ceiling above the asked budget caps nothing: the message names max_tokens.
    expect((refusal({ overrides: { max_tokens: 100 }, maxTokensCeiling: 4096 }) as Error).message).toMatch(
      /^max_tokens \(100\)/,
    );
    // Thinking that is off, adaptive or without a budget sets no floor.
    for (const other of [{ type: "disabled" }, { type: "adaptive" }, { type: "enabled" }]) {
      const plan = prepareForkRun({ ...base, prefix: prefixOf(8000, other), overrides: { max_tokens: 100 } });
      expect(plan.request.max_tokens).toBe(100);
    }
  });
});
