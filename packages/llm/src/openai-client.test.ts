import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { OpenAiLlmClient, usageFromOpenAi } from "./openai-client.js";

describe("OpenAiLlmClient before its first request (the SDK is not loaded yet)", () => {
  it("names the base URL the SDK would use: the given one, else the SDK's own default", () => {
    const saved = process.env.OPENAI_BASE_URL;
    delete process.env.OPENAI_BASE_URL;
    try {
      expect(new OpenAiLlmClient({ api: "chat", apiKey: "k" }).baseURL).toBe(
        new OpenAI({ apiKey: "k" }).baseURL,
      );
      expect(
        new OpenAiLlmClient({ api: "chat", apiKey: "k", baseURL: "http://127.0.0.1:9/v1" }).baseURL,
      ).toBe("http://127.0.0.1:9/v1");
    } finally {
      if (saved !== undefined) process.env.OPENAI_BASE_URL = saved;
    }
  });
});

describe("usageFromOpenAi", () => {
  it("splits the prompt into uncached, read and written tokens, on both APIs", () => {
    expect(
      usageFromOpenAi({
        prompt_tokens: 5000,
        completion_tokens: 7,
        prompt_tokens_details: { cached_tokens: 3072, cache_write_tokens: 1200 },
      }),
    ).toEqual({
      input_tokens: 728,
      output_tokens: 7,
      cache_creation_input_tokens: 1200,
      cache_read_input_tokens: 3072,
    });
    expect(
      usageFromOpenAi({
        input_tokens: 5000,
        output_tokens: 9,
        input_tokens_details: { cached_tokens: 0, cache_write_tokens: 4990 },
      }),
    ).toEqual({
      input_tokens: 10,
      output_tokens: 9,
      cache_creation_input_tokens: 4990,
      cache_read_input_tokens: 0,
    });
    // Before the GPT-5.6 family: no writes reported, none counted.
    expect(usageFromOpenAi({ prompt_tokens: 100, prompt_tokens_details: { cached_tokens: null } })).toEqual({
      input_tokens: 100,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
  });
});
