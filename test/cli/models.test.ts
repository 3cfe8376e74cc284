// `forkd models`: the facts table the CLI, core and the simulator share, with a price file's rows
// and a model forkd does not know (unpriced, never $0).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MODEL_FACTS } from "@forkd/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cleanEnv, runCli } from "./support.js";

const dir = mkdtempSync(join(tmpdir(), "forkd-models-"));
beforeAll(() => assertBuilt());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.concurrent("forkd models", () => {
  it("lists every row of the facts table", async () => {
    const result = await runCli(["models"]);
    expect(result.code).toBe(0);
    for (const row of MODEL_FACTS) expect(result.stdout).toMatch(new RegExp(`^${row.family} `, "m"));
    expect(result.stdout).toMatch(
      /^claude-sonnet-4-6 +claude-sonnet-4-6 +\$3 +\$15 +1,024 +200,000 \(1,000,000 with context-1m-2025-08-07\)$/m,
    );
  });

  it("resolves a provider-qualified id, and the 1M window with its beta", async () => {
    const result = await runCli([
      "models",
      "us.anthropic.claude-sonnet-4-6-v1:0",
      "--beta",
      "context-1m-2025-08-07",
      "--json",
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      model: "us.anthropic.claude-sonnet-4-6-v1:0",
      family: "claude-sonnet-4-6",
      inputUsdPerMTok: 3,
      outputUsdPerMTok: 15,
      minCacheableTokens: 1024,
      contextWindowTokens: 1_000_000,
      extendedContextBeta: "context-1m-2025-08-07",
    });
  });

  it("shows an unknown model unpriced, and priced once a FORKD_PRICES file names it", async () => {
    const unknown = await runCli(["models", "claude-opus-6"]);
    expect(unknown.code).toBe(0);
    expect(unknown.stdout).toMatch(/^claude-opus-6 +unknown +unpriced +unpriced /m);
    expect(unknown.stdout).toContain("unknown models are unpriced");
    const prices = join(dir, "prices.json");
    writeFileSync(prices, JSON.stringify({ "claude-opus-6": { inputUsdPerMTok: 6, outputUsdPerMTok: 30 } }));
    const priced = await runCli(["models", "claude-opus-6", "--json"], {
      env: cleanEnv({ FORKD_PRICES: prices }),
    });
    expect(JSON.parse(priced.stdout)).toMatchObject({
      family: null,
      inputUsdPerMTok: 6,
      outputUsdPerMTok: 30,
    });
  });
});
