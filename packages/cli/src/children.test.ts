import { loadFixture } from "@forkd/fixtures";
import { describe, expect, it } from "vitest";
import { labelFromDirective, planChildren } from "./children.js";
import { parentTurnOf } from "./parent-turn.js";

describe("planChildren", async () => {
  const turn = parentTurnOf(await loadFixture("48k"), "48k");

  it("answers the reply's i-th tool call with the i-th child, labelled by its description", () => {
    expect(turn.toolCalls).toHaveLength(3);
    const planned = planChildren(turn, ["a", "b", "c", "d: the fourth has no call"]);
    expect(planned.map((child) => child.forkCall?.tool_use_id)).toEqual([
      turn.toolCalls[0]!.forkCall.tool_use_id,
      turn.toolCalls[1]!.forkCall.tool_use_id,
      turn.toolCalls[2]!.forkCall.tool_use_id,
      undefined,
    ]);
    expect(planned.map((child) => child.label)).toEqual([
      "slice 1",
      "slice 2",
      "slice 3",
      "d: the fourth has no call",
    ]);
  });

  it("numbers an explicit label, and falls back to the given names", () => {
    expect(planChildren(turn, ["a", "b"], { label: "audit" }).map((c) => c.label)).toEqual([
      "audit 1",
      "audit 2",
    ]);
    expect(planChildren(turn, ["a"], { label: "audit" }).map((c) => c.label)).toEqual(["audit"]);
    const names = ["x", "y", "z", "four", "five"];
    expect(
      planChildren(turn, names, { fallbackLabels: names })
        .map((c) => c.label)
        .slice(3),
    ).toEqual(["four", "five"]);
  });

  it("labels a directive by its first words, without @sim lines", () => {
    expect(labelFromDirective("Write a long essay\n@sim tps 5\n@sim text 1000")).toBe("Write a long essay");
    expect(labelFromDirective("x".repeat(60))).toHaveLength(40);
  });
});
