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
    expect((overridden as Error).message).toMatch(
      /: the provider refuses such a request, and the child keeps the parent's thinking settings to read its cache\. Give the child more output tokens than the thinking budget\.$/,
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
  it("caps the output budget at the child's model's own ceiling, at its exact edge", () => {
    // The fixture's model, claude-sonnet-4-6, takes at most 128,000.
    expect(prepareForkRun({ ...base, prefix: prefixOf(128_000) }).request.max_tokens).toBe(128_000);
    expect(prepareForkRun({ ...base, prefix: prefixOf(128_001) }).request.max_tokens).toBe(128_000);
    const haiku = { model: "claude-3-5-haiku-20241022" };
    const onHaiku = (input: Partial<Parameters<typeof prepareForkRun>[0]>) =>
      prepareForkRun({ ...base, prefix: prefixOf(32_000), ...input }).request.max_tokens;
    expect(onHaiku({ overrides: haiku })).toBe(8192);
    expect(onHaiku({ overrides: { ...haiku, max_tokens: 8193 } })).toBe(8192);
    expect(onHaiku({ overrides: { ...haiku, max_tokens: 8192 } })).toBe(8192);
    expect(onHaiku({ overrides: { ...haiku, max_tokens: 100 } })).toBe(100);
    expect(onHaiku({ overrides: haiku, maxTokensCeiling: 5000 })).toBe(5000);
    // A model whose ceiling is not known is not capped.
    expect(onHaiku({ overrides: { model: "claude-next-1" } })).toBe(32_000);
  });

  it("names the model's ceiling when it lowers the budget to the parent's thinking budget", () => {
    const prefix = prefixOf(32_000, { type: "enabled", budget_tokens: 8192 });
    expect(() => prepareForkRun({ ...base, prefix, overrides: { model: "claude-3-5-haiku" } })).toThrow(
      /^claude-3-5-haiku's ceiling on output tokens \(8192\) is not above the parent's thinking budget \(8192\)/,
    );
    // Both ceilings at once: the runner's is named when it is the lower.
    expect(() =>
      prepareForkRun({ ...base, prefix, overrides: { model: "claude-3-5-haiku" }, maxTokensCeiling: 8000 }),
    ).toThrow(/^the runner's ceiling on output tokens \(8000\)/);
  });

  it("refuses a model override that does not take the parent's thinking type, and only then", () => {
    const refusal = (thinking: Record<string, unknown> | undefined, model: string) => {
      try {
        prepareForkRun({ ...base, prefix: prefixOf(32_000, thinking), overrides: { model } });
      } catch (error) {
        return error;
      }
      return undefined;
    };
    const enabled = { type: "enabled", budget_tokens: 1024 };
    const adaptive = { type: "adaptive" };
    const toAdaptiveOnly = refusal(enabled, "claude-opus-4-7");
    expect(toAdaptiveOnly).toBeInstanceOf(InvalidForkParamsError);
    expect(toAdaptiveOnly).toMatchObject({ field: "model", code: "invalid_fork_params" });
    expect((toAdaptiveOnly as Error).message).toMatch(
      /^claude-opus-4-7 does not take the parent's thinking \(type "enabled"\).*thinks only adaptively/,
    );
    expect((toAdaptiveOnly as Error).message).toMatch(
      / Fork onto a model that takes the parent's thinking, or leave the model as the parent's\.$/,
    );
    // The parent's own model took its thinking (the request was answered): forkd does not second-guess it.
    const onItsOwnModel = prefixOf(32_000, enabled);
    onItsOwnModel.params.model = "claude-opus-4-7";
    expect(prepareForkRun({ ...base, prefix: onItsOwnModel }).request.model).toBe("claude-opus-4-7");
    expect((refusal(adaptive, "claude-sonnet-4-5") as Error).message).toMatch(
      /^claude-sonnet-4-5 does not take the parent's thinking \(type "adaptive"\).*only with a token budget/,
    );
    for (const [thinking, model] of [
      [enabled, "claude-haiku-4-5"],
      [enabled, "claude-opus-4-6"],
      [adaptive, "claude-opus-4-6"],
      [adaptive, "claude-opus-5"],
      [{ type: "disabled" }, "claude-opus-5"],
      [undefined, "claude-opus-5"],
      [enabled, "claude-mythos-5"],
      [adaptive, "claude-next-1"],
    ] as const) {
      expect(refusal(thinking, model), `${thinking?.type} on ${model}`).toBeUndefined();
    }
  });
});
