import { describe, expect, it } from "vitest";
import {
  ForkdError,
  isProtocolErrorCode,
  PROTOCOL_ERROR_CODES,
  ProtocolError,
  type ProtocolErrorJSON,
  toWireError,
} from "./errors.js";

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

describe("wire errors", () => {
  it("carry a ForkdError's code, message and retryability, and anything else as internal", () => {
    expect(toWireError(new TestError("failed"))).toEqual({
      code: "test",
      message: "failed",
      retryable: false,
    });
    expect(toWireError(new Error("plain"))).toEqual({ code: "internal", message: "plain", retryable: false });
    expect(toWireError("a string")).toEqual({ code: "internal", message: "a string", retryable: false });
    expect(toWireError(42)).toEqual({ code: "internal", message: "42", retryable: false });
  });

  it("carry a ProtocolError's path, as a copy", () => {
    const error = new ProtocolError("invalid_spec", "bad role", { path: ["prefix", "messages", 3, "role"] });
    const wire = toWireError(error);
    expect(wire).toEqual({
      code: "invalid_spec",
      message: "bad role",
      retryable: false,
      path: ["prefix", "messages", 3, "role"],
    });
    wire.path?.push("changed");
    expect(error.path).toEqual(["prefix", "messages", 3, "role"]);
    expect(new ProtocolError("invalid_json", "bad").toWire().path).toEqual([]);
  });
});

describe("ProtocolError", () => {
  it("is named, never retryable, and round-trips through its JSON form", () => {
    const error = new ProtocolError("too_deep", "nested", { path: ["a", 1] });
    expect(error.name).toBe("ProtocolError");
    expect(error.retryable).toBe(false);
    const json = JSON.parse(JSON.stringify(error)) as ProtocolErrorJSON;
    expect(json).toEqual({
      name: "ProtocolError",
      code: "too_deep",
      message: "nested",
      path: ["a", 1],
      retryable: false,
    });
    const back = ProtocolError.fromJSON(json);
    expect(back).toBeInstanceOf(ProtocolError);
    expect(back.toJSON()).toEqual(error.toJSON());
    json.path.push("changed");
    expect(back.path).toEqual(["a", 1]);
    error.toJSON().path.push("changed");
    expect(error.path).toEqual(["a", 1]);
  });

  it("knows its codes", () => {
    for (const code of PROTOCOL_ERROR_CODES) expect(isProtocolErrorCode(code)).toBe(true);
    expect(isProtocolErrorCode("internal")).toBe(false);
    expect(isProtocolErrorCode(undefined)).toBe(false);
    expect(isProtocolErrorCode(["invalid_json"])).toBe(false);
  });
});
