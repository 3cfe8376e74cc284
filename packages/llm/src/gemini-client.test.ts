// Gemini's usage as forkd's: the prompt count includes the cached tokens (so they are taken out of
// the uncached input), thoughts are billed as output, tool-use prompt tokens as input, and a cache
// this request created as written tokens.
import { describe, expect, it } from "vitest";
import { usageFromGemini } from "./gemini-client.js";

describe("usageFromGemini", () => {
  it("splits the prompt into uncached and cached, counts thoughts as output and the creation as written", () => {
    expect(
      usageFromGemini(
        {
          promptTokenCount: 1000,
          cachedContentTokenCount: 800,
          candidatesTokenCount: 50,
          thoughtsTokenCount: 20,
          toolUsePromptTokenCount: 5,
        },
        900,
      ),
    ).toStrictEqual({
      input_tokens: 205,
      output_tokens: 70,
      cache_creation_input_tokens: 900,
      cache_read_input_tokens: 800,
    });
  });

  it("reads a missing count as zero", () => {
    expect(usageFromGemini(undefined)).toStrictEqual({
      input_tokens: 0,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
    expect(usageFromGemini({ promptTokenCount: 10 })).toMatchObject({
      input_tokens: 10,
      cache_read_input_tokens: 0,
    });
  });
});
