import { describe, expect, it } from "vitest";
import { isToolNamed, type ProxyTurn, TurnStore } from "./turn-store.js";

function turn(
  session: string,
  calls: { id: string; name?: string; input?: unknown }[] = [],
  requestBytes = 10,
) {
  const toolCalls = calls.map((c) => ({
    id: c.id,
    name: c.name ?? "mcp__forkd__fork",
    input: c.input ?? { directive: "x" },
  }));
  return {
    session,
    api: "anthropic" as const,
    path: "/v1/messages",
    request: { messages: [] },
    betas: [],
    response: {
      role: "assistant" as const,
      content: toolCalls.map((call) => ({ type: "tool_use", ...call })),
    },
    toolCalls,
    mcpInstances: ["inst"],
    requestBytes,
  } satisfies Omit<ProxyTurn, "seq" | "at">;
}

describe("TurnStore", () => {
  it("with a toolUseId, matches only that call, not a newer one with the same input", () => {
    const store = new TurnStore();
    store.record(turn("s", [{ id: "toolu_a" }]));
    store.record(turn("s", [{ id: "toolu_b" }]));
    const query = { toolName: "fork", input: { directive: "x" } };
    expect(store.findToolCall(query)?.toolUse.id).toBe("toolu_b");
    expect(store.findToolCall({ ...query, toolUseId: "toolu_a" })?.toolUse.id).toBe("toolu_a");
    expect(store.findToolCall({ ...query, toolUseId: "toolu_c" })).toBeUndefined();
  });

  it("keeps exactly turnsPerSession turns per session", () => {
    const store = new TurnStore({ turnsPerSession: 2 });
    for (const n of [1, 2, 3]) store.record({ ...turn("s"), path: `/${n}` });
    expect(store.turnsOf("s").map((t) => t.path)).toEqual(["/2", "/3"]);
    expect(store.bytes).toBe(20);
  });

  it("drops the least recently active session beyond the session limit", () => {
    const store = new TurnStore({ sessions: 2 });
    store.record(turn("a"));
    store.record(turn("b"));
    store.record(turn("a"));
    store.record(turn("c"));
    expect(store.sessions().map((s) => s.session)).toEqual(["a", "c"]);
  });

  it("drops the oldest turns once the bytes exceed the limit, not at it", () => {
    const store = new TurnStore({ bytes: 30 });
    store.record(turn("a", [], 10));
    store.record(turn("b", [], 10));
    store.record(turn("a", [], 10));
    expect(store.bytes).toBe(30);
    expect(store.turnsOf("a")).toHaveLength(2);
    store.record(turn("b", [], 1));
    expect(store.bytes).toBe(21);
    expect(store.turnsOf("a")).toHaveLength(1);
  });

  it("forgets a session idle for idleMs, not one idle for less", () => {
    let now = 0;
    const store = new TurnStore({ idleMs: 1000 }, () => now);
    store.record(turn("a"));
    now = 999;
    expect(store.turnsOf("a")).toHaveLength(1);
    now = 1000;
    expect(store.turnsOf("a")).toHaveLength(0);
    expect(store.bytes).toBe(0);
  });

  it("finds the newest turn holding an unanswered matching call, by instance and session", () => {
    const store = new TurnStore();
    store.record(turn("a", [{ id: "t1" }]));
    store.record(turn("b", [{ id: "t2" }, { id: "t3" }]));
    const query = { toolName: "fork", input: { directive: "x" } };
    expect(store.findToolCall(query)?.toolUse.id).toBe("t2");
    expect(store.findToolCall({ ...query, exclude: ["t2"] })?.toolUse.id).toBe("t3");
    expect(store.findToolCall({ ...query, exclude: ["t2", "t3"] })?.toolUse.id).toBe("t1");
    expect(store.findToolCall({ ...query, session: "a" })?.toolUse.id).toBe("t1");
    expect(store.findToolCall({ ...query, mcpInstance: "other" })).toBeUndefined();
    expect(store.findToolCall({ ...query, input: { directive: "y" } })).toBeUndefined();
    // Fields of the query must all match; fields the call has beyond them do not matter.
    expect(store.findToolCall({ ...query, input: { directive: "x", label: "a" } })).toBeUndefined();
    expect(store.findToolCall({ ...query, input: {} })?.toolUse.id).toBe("t2");
    expect(store.findToolCall({ ...query, input: "x" })).toBeUndefined();
  });

  it("wakes a waiter when the turn holding its call is recorded, and times out otherwise", async () => {
    const store = new TurnStore();
    const waiting = store.waitForToolCall({ toolName: "fork", input: { directive: "x" } }, 60_000);
    store.record(turn("a", [{ id: "other", input: { directive: "y" } }]));
    store.record(turn("a", [{ id: "t9" }]));
    expect((await waiting)?.toolUse.id).toBe("t9");
    expect(await store.waitForToolCall({ toolName: "fork", input: 1 }, 1)).toBeUndefined();
  });
});

describe("isToolNamed", () => {
  it("matches the bare name and any MCP server's tool of that name", () => {
    expect(isToolNamed("fork", "fork")).toBe(true);
    expect(isToolNamed("mcp__forkd__fork", "fork")).toBe(true);
    expect(isToolNamed("mcp__forkd__fork_result", "fork")).toBe(false);
    expect(isToolNamed("notmcp__fork", "fork")).toBe(false);
  });

  it("matches the Gemini CLI's MCP names, mcp_<server>_<tool>", () => {
    expect(isToolNamed("mcp_forkd_fork", "fork")).toBe(true);
    expect(isToolNamed("mcp_forkd_fork_result", "fork")).toBe(false);
    expect(isToolNamed("mcp_forkd_fork_result", "fork_result")).toBe(true);
    expect(isToolNamed("mcp_fork", "fork")).toBe(false);
    expect(isToolNamed("mcp__fork_", "fork")).toBe(false);
    expect(isToolNamed("notmcp_forkd_fork", "fork")).toBe(false);
  });
});
