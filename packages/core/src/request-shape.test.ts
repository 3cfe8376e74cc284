import type { MessageParam } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { findRequestProblems } from "./request-shape.js";

const check = (messages: MessageParam[]) => findRequestProblems({ messages });

describe("findRequestProblems", () => {
  it("accepts a well-formed conversation", () => {
    expect(
      check([
        { role: "user", content: "go" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Read", input: {} }] },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "t1", content: "x" },
            { type: "text", text: "next" },
          ],
        },
      ]),
    ).toEqual([]);
  });

  it("names every structural problem", () => {
    expect(check([])).toEqual(["the request has no messages"]);
    expect(
      check([
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Read", input: {} }] },
        {
          role: "user",
          content: [
            { type: "text", text: "" },
            { type: "tool_result", tool_use_id: "t2", content: "x" },
          ],
        },
        { role: "user", content: [] },
        { role: "assistant", content: "done" },
      ]),
    ).toEqual([
      "the first message is not the user's",
      "messages[0] makes tool_use t1, which the next message does not answer",
      "messages[1].content[0] is an empty text block",
      "messages[1] has a tool_result after other content",
      "messages[1] answers tool_use t2, which the previous message did not make",
      "messages[2] has the same role (user) as the message before it",
      "messages[2] has empty content",
      "the last message is not the user's",
    ]);
  });

  it("refuses empty content written as a string, and text blocks with no text", () => {
    expect(
      check([
        { role: "user", content: "" },
        { role: "assistant", content: "ok" },
        {
          role: "user",
          content: [{ type: "text" }, { type: "text", text: 5 }, { type: "text", text: "x" }] as never,
        },
      ]),
    ).toEqual([
      "messages[0] has empty content",
      "messages[2].content[0] is an empty text block",
      "messages[2].content[1] is an empty text block",
    ]);
  });

  it("checks the breakpoint count and TTL order", () => {
    const marked = (ttl?: "1h") => ({
      type: "text",
      text: "x",
      cache_control: ttl ? { type: "ephemeral", ttl } : { type: "ephemeral" },
    });
    expect(
      findRequestProblems({
        messages: [{ role: "user", content: [marked(), marked("1h"), marked(), marked(), marked()] }],
      }),
    ).toEqual([
      "the request has 5 cache breakpoints; at most 4 are allowed",
      "a 1h cache breakpoint follows a 5m one",
    ]);
    // 1h ones first, then 5m ones: the order the API asks for.
    expect(
      findRequestProblems({ messages: [{ role: "user", content: [marked("1h"), marked("1h"), marked()] }] }),
    ).toEqual([]);
  });

  it("counts a top-level cache_control as a breakpoint on the last block, unless that block has one", () => {
    const marked = { type: "text", text: "x", cache_control: { type: "ephemeral" } };
    const plain = { type: "text", text: "x" };
    const automatic = (ttl?: "1h") => ({
      cache_control: ttl ? { type: "ephemeral", ttl } : { type: "ephemeral" },
    });
    const request = (blocks: unknown[], top: object) =>
      findRequestProblems({ ...top, messages: [{ role: "user", content: blocks }] } as never);
    expect(request([marked, marked, marked, plain], automatic())).toEqual([]);
    expect(request([marked, marked, marked, marked, plain], automatic())).toEqual([
      "the request has 5 cache breakpoints; at most 4 are allowed",
    ]);
    expect(request([marked, marked, marked, marked], automatic())).toEqual([]);
    expect(request([marked, plain], automatic("1h"))).toEqual(["a 1h cache breakpoint follows a 5m one"]);
    expect(request([plain, marked], automatic("1h"))).toEqual([]);
  });
});
