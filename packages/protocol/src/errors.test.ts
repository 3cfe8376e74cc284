import { describe, expect, it } from "vitest";
import { ForkdError, ProtocolError } from "./errors.js";

class TestError extends ForkdError<"test"> {
  readonly code = "test" as const;
  readonly retryable = false;
}

describe("ForkdError's cause", () => {
  it("is kept when given", () => {
    const cause = new Error("underneath");
    expect(new TestError("failed", { cause }).cause).toBe(cause);
    expect(new ProtocolError("invalid_json", "bad", { cause }).cause).toBe(cause);
  });

  it("is no property at all when undefined, however the subclass passed it on", () => {
    expect("cause" in new TestError("failed")).toBe(false);
    expect("cause" in new TestError("failed", { cause: undefined })).toBe(false);
    expect("cause" in new ProtocolError("invalid_json", "bad", { cause: undefined })).toBe(false);
  });
});
