import { describe, expect, it } from "vitest";
import { createForkPrefix, snapshotCacheSafeParams } from "./cache-safe-params.js";
import { InvalidPrefixError } from "./errors.js";
import { loadFixture } from "./test-support/fixtures.js";

describe("snapshotCacheSafeParams", () => {
  it("copies the request byte for byte, without stream", () => {
    const { request } = loadFixture("48k");
    const params = snapshotCacheSafeParams(request);
    const { stream: _stream, ...rest } = request;
    expect(JSON.stringify(params)).toBe(JSON.stringify(rest));
    expect("stream" in params).toBe(false);
  });

  it("is isolated from later changes to the parent's objects", () => {
    const { request } = loadFixture("4k");
    const params = snapshotCacheSafeParams(request);
    const before = JSON.stringify(params);
    (request.messages as { content: unknown }[])[0]!.content = "changed";
    (request.tools as Record<string, unknown>[])[0]!.name = "Changed";
    request.model = "other";
    expect(JSON.stringify(params)).toBe(before);
  });

  it("keeps key order, unknown fields and incomplete tool calls", () => {
    const request = {
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      service_tier: "auto",
      messages: [
        { role: "user", content: "go" },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "toolu_cut", name: "Bash", input: { z: 1, a: { y: 2, b: 3 } } }],
        },
        { role: "user", content: [{ type: "text", text: "interrupted" }] },
      ],
    };
    const params = snapshotCacheSafeParams(request);
    expect(JSON.stringify(params)).toBe(JSON.stringify(request));
    expect(Object.keys((params.messages[1]!.content as unknown as { input: object }[])[0]!.input)).toEqual([
      "z",
      "a",
    ]);
  });

  it("refuses what is not a Messages API request", () => {
    expect(() => snapshotCacheSafeParams({ messages: [] })).toThrow(InvalidPrefixError);
    expect(() => snapshotCacheSafeParams({ model: "m", messages: [{ role: "tool", content: "x" }] })).toThrow(
      /messages\.0\.role/,
    );
    expect(() => snapshotCacheSafeParams({ model: "m", messages: [], extra: () => 1 })).toThrow(
      /cannot be copied/,
    );
  });
});

describe("createForkPrefix", () => {
  it("holds the request and a copy of the reply", () => {
    const { request, response } = loadFixture("4k");
    const prefix = createForkPrefix(request, response);
    expect(prefix.reply).toEqual(response);
    expect(prefix.reply).not.toBe(response);
  });

  it("has no reply when none is given, and refuses a reply that is not the assistant's", () => {
    const { request } = loadFixture("4k");
    expect(createForkPrefix(request).reply).toBeUndefined();
    expect(() => createForkPrefix(request, { role: "user", content: [] })).toThrow(InvalidPrefixError);
  });

  it("keeps no beta list when the parent was sent with none, and its own copy of one it was", () => {
    const { request } = loadFixture("4k");
    expect("betas" in createForkPrefix(request, undefined, { betas: [] })).toBe(false);
    const betas = ["context-management-2025-06-27"];
    const prefix = createForkPrefix(request, undefined, { betas });
    betas.push("later");
    expect(prefix.betas).toEqual(["context-management-2025-06-27"]);
  });
});

describe("InvalidPrefixError", () => {
  const thrown = (fn: () => unknown): InvalidPrefixError => {
    try {
      fn();
    } catch (error) {
      if (error instanceof InvalidPrefixError) return error;
      throw error;
    }
    throw new Error("nothing was thrown");
  };

  it("names what is invalid and where, numbers kept as indexes", () => {
    const request = thrown(() =>
      snapshotCacheSafeParams({ model: "m", messages: [{ role: "user", content: "x" }, { content: "y" }] }),
    );
    expect(request.path).toEqual(["messages", 1, "role"]);
    expect(request.message).toMatch(/^the request is not valid at messages\.1\.role: ./);
    const reply = thrown(() => createForkPrefix(loadFixture("4k").request, { role: "user", content: [] }));
    expect(reply.path).toEqual(["role"]);
    expect(reply.message).toMatch(/^the reply is not valid at role: ./);
  });

  it("says nothing of a place when the whole value is wrong", () => {
    const error = thrown(() => snapshotCacheSafeParams("not a request"));
    expect(error.path).toEqual([]);
    expect(error.message).toMatch(/^the request is not valid: ./);
  });

  it("keeps the reason a value cannot be copied", () => {
    const error = thrown(() => snapshotCacheSafeParams({ model: "m", messages: [], extra: () => 1 }));
    expect(error.message).toMatch(/^the request cannot be copied: ./);
    expect(error.cause).toBeInstanceOf(Error);
  });
});
