import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from "@anthropic-ai/sdk";
import { LlmError, type LlmErrorCode } from "@forkd/core";
import { describe, expect, it } from "vitest";
import { errorCodeForStatus, errorCodeForType, isRetryableCode, toLlmError } from "./errors.js";

/** An SDK error as the SDK builds it from a failed HTTP response. */
function httpError(status: number, type: string, headers: Record<string, string> = {}): APIError {
  return APIError.generate(
    status,
    { type: "error", error: { type, message: `${type} happened` } },
    undefined,
    new Headers(headers),
  );
}

describe("errorCodeForStatus", () => {
  it.each<[number, LlmErrorCode, boolean]>([
    [400, "invalid_request", false],
    [401, "authentication", false],
    [403, "permission", false],
    [404, "not_found", false],
    [413, "request_too_large", false],
    [429, "rate_limited", true],
    [529, "overloaded", true],
    [500, "server_error", true],
    [502, "server_error", true],
    [503, "server_error", true],
    [504, "server_error", true],
    [408, "timeout", true],
    [418, "unknown", false],
  ])("maps %i to %s (retryable: %s)", (status, code, retryable) => {
    expect(errorCodeForStatus(status)).toBe(code);
    expect(isRetryableCode(code)).toBe(retryable);
  });
});

describe("errorCodeForType", () => {
  it.each<[string, LlmErrorCode]>([
    ["invalid_request_error", "invalid_request"],
    ["authentication_error", "authentication"],
    ["permission_error", "permission"],
    ["not_found_error", "not_found"],
    ["request_too_large", "request_too_large"],
    ["rate_limit_error", "rate_limited"],
    ["overloaded_error", "overloaded"],
    ["api_error", "server_error"],
    ["timeout_error", "timeout"],
    ["something_new", "unknown"],
  ])("maps %s to %s", (type, code) => {
    expect(errorCodeForType(type)).toBe(code);
  });
});

describe("toLlmError", () => {
  it("maps SDK status errors through the status, with retryable and status set", () => {
    const rateLimited = toLlmError(httpError(429, "rate_limit_error", { "retry-after": "1" }));
    expect(rateLimited).toBeInstanceOf(LlmError);
    expect(rateLimited).toMatchObject({ code: "rate_limited", retryable: true, status: 429 });
    expect(rateLimited.cause).toBeInstanceOf(APIError);

    expect(toLlmError(httpError(529, "overloaded_error"))).toMatchObject({
      code: "overloaded",
      retryable: true,
    });
    expect(toLlmError(httpError(400, "invalid_request_error"))).toMatchObject({
      code: "invalid_request",
      retryable: false,
      status: 400,
    });
  });

  it("maps an error event inside a stream by its error.type", () => {
    const inStream = new APIError(
      undefined,
      { type: "error", error: { type: "overloaded_error" } },
      undefined,
      new Headers(),
      "overloaded_error",
    );
    expect(toLlmError(inStream)).toMatchObject({ code: "overloaded", retryable: true, status: undefined });
  });

  it("maps connection failures and timeouts", () => {
    expect(toLlmError(new APIConnectionError({ cause: new Error("ECONNREFUSED") }))).toMatchObject({
      code: "connection",
      retryable: true,
    });
    expect(toLlmError(new APIConnectionTimeoutError())).toMatchObject({ code: "timeout", retryable: true });
    const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
    expect(toLlmError(new Error("wrapped", { cause: reset }))).toMatchObject({ code: "connection" });
    // undici's error for a body whose socket closed early.
    const terminated = new TypeError("terminated", {
      cause: Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" }),
    });
    expect(toLlmError(terminated)).toMatchObject({ code: "connection", retryable: true });
  });

  it("turns any failure into aborted when the caller aborted, keeping what streamed", () => {
    const usage = { input_tokens: 10, output_tokens: 3 };
    const error = toLlmError(new APIUserAbortError(), {
      aborted: true,
      partialUsage: usage,
      partialText: "Hel",
    });
    expect(error).toMatchObject({
      code: "aborted",
      retryable: false,
      partialUsage: usage,
      partialText: "Hel",
    });
  });

  it("reports the client's own timeout as timeout", () => {
    expect(toLlmError(new APIUserAbortError(), { timedOut: true })).toMatchObject({
      code: "timeout",
      retryable: true,
    });
  });

  it("turns a retryable failure after output began into stream_interrupted, with the partial output", () => {
    const usage = { input_tokens: 10, output_tokens: 5 };
    const cut = toLlmError(new TypeError("terminated"), {
      outputBegan: true,
      partialUsage: usage,
      partialText: "Hello",
    });
    expect(cut).toMatchObject({
      code: "stream_interrupted",
      retryable: true,
      partialUsage: usage,
      partialText: "Hello",
    });
    const overloadedMidStream = new APIError(
      undefined,
      { error: { type: "overloaded_error" } },
      undefined,
      new Headers(),
      "overloaded_error",
    );
    expect(toLlmError(overloadedMidStream, { outputBegan: true })).toMatchObject({
      code: "stream_interrupted",
    });
  });

  it("keeps a non-retryable code even after output began", () => {
    expect(toLlmError(httpError(400, "invalid_request_error"), { outputBegan: true })).toMatchObject({
      code: "invalid_request",
    });
  });

  it("reclassifies an LlmError with the call's context", () => {
    const ended = new LlmError("connection", "ended early", { retryable: true });
    expect(toLlmError(ended)).toMatchObject({ code: "connection", retryable: true });
    expect(toLlmError(ended, { outputBegan: true, partialText: "x" })).toMatchObject({
      code: "stream_interrupted",
      partialText: "x",
    });
  });

  it("falls back to unknown, not retryable", () => {
    expect(toLlmError(new Error("what"))).toMatchObject({ code: "unknown", retryable: false });
    expect(toLlmError("a string")).toMatchObject({ code: "unknown", message: "a string" });
  });
});
