import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { OpenAiLlmClient } from "./openai-client.js";

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
