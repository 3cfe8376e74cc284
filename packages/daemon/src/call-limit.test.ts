import { describe, expect, it } from "vitest";
import { fairOrder } from "./call-limit.js";
import { limitKeyToken } from "./call-limits.js";

describe("fairOrder", () => {
  it("gives free slots to the parent holding the fewest, then to the longest waiting", () => {
    const holders = [{ parent: "a" }, { parent: "a" }];
    const waiters = [
      { id: "a1", parent: "a", since: 1 },
      { id: "a2", parent: "a", since: 2 },
      { id: "b1", parent: "b", since: 5 },
      { id: "b2", parent: "b", since: 6 },
      { id: "c1", parent: "c", since: 9 },
    ];
    expect(fairOrder(holders, waiters, 1)).toEqual(["b1"]);
    expect(fairOrder(holders, waiters, 3)).toEqual(["b1", "c1", "b2"]);
    expect(fairOrder(holders, waiters, 5)).toEqual(["b1", "c1", "b2", "a1", "a2"]);
    expect(fairOrder([], waiters, 0)).toEqual([]);
  });

  it("breaks a tie in time by id, so every daemon computes the same order", () => {
    const waiters = [
      { id: "d2.x", parent: "p", since: 1 },
      { id: "d1.x", parent: "q", since: 1 },
    ];
    expect(fairOrder([], waiters, 1)).toEqual(["d1.x"]);
    expect(fairOrder([], [...waiters].reverse(), 1)).toEqual(["d1.x"]);
  });
});

describe("limitKeyToken", () => {
  it("keeps letters, digits, _ and -, and spells every other unit so that no two names meet", () => {
    expect(limitKeyToken("claude-sonnet-4-6")).toBe("claude-sonnet-4-6");
    expect(limitKeyToken("gpt-4.1")).toBe("gpt-4=002e1");
    expect(limitKeyToken("llama3:8b/q4")).toBe("llama3=003a8b=002fq4");
    expect(limitKeyToken("a=b")).toBe("a=003db");
    expect(limitKeyToken("gpt-4_1")).not.toBe(limitKeyToken("gpt-4.1"));
    expect(limitKeyToken("")).toBe("=");
    expect(limitKeyToken("é")).toBe("=00e9");
    // A spec's model name of any length still makes a key NATS takes, and two long names differ.
    const long = limitKeyToken("m".repeat(10_000));
    expect(long).toMatch(/^==[0-9a-f]{32}$/);
    expect(limitKeyToken(`${"m".repeat(9_999)}n`)).not.toBe(long);
    expect(limitKeyToken("m".repeat(128))).toBe("m".repeat(128));
  });
});
