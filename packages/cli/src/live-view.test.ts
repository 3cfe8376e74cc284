import { describe, expect, it } from "vitest";
import { LiveView } from "./live-view.js";

function terminal(columns = 30, rows = 10) {
  const writes: string[] = [];
  return { writes, stream: { isTTY: true, columns, rows, write: (text: string) => writes.push(text) } };
}

describe("LiveView", () => {
  it("redraws its block in place, each line cut to the terminal's width", () => {
    const { writes, stream } = terminal();
    const view = new LiveView(stream, { intervalMs: 0 });
    view.update(() => ["one", "two"]);
    view.update(() => ["one", "x".repeat(100)]);
    view.close();
    const draws = writes.filter((text) => text.includes("\x1b[2K"));
    expect(draws[0]).toBe("\r\x1b[2Kone\n\x1b[2Ktwo\n\x1b[J");
    // The second draw moves up over the two lines the first one wrote.
    expect(draws[1]!.startsWith("\x1b[2A\r")).toBe(true);
    expect(draws[1]).toContain(`${"x".repeat(28)}…`);
    expect(writes[0]).toBe("\x1b[?25l");
    expect(writes.at(-1)).toBe("\x1b[?25h");
  });

  it("draws at most once per interval, and the last state when closed", async () => {
    const { writes, stream } = terminal();
    const view = new LiveView(stream, { intervalMs: 50 });
    for (let i = 0; i < 20; i++) view.update(() => [`frame ${i}`]);
    view.close();
    const draws = writes.filter((text) => text.includes("\x1b[2K"));
    expect(draws).toHaveLength(2);
    expect(draws[1]).toContain("frame 19");
  });

  it("keeps within the terminal's height", () => {
    const { writes, stream } = terminal(30, 4);
    const view = new LiveView(stream, { intervalMs: 0 });
    view.update(() => Array.from({ length: 10 }, (_, i) => `line ${i}`));
    view.close();
    const draw = writes.find((text) => text.includes("\x1b[2K"))!;
    expect(draw.split("\n").filter((line) => line.includes("line"))).toHaveLength(2);
    expect(draw).toContain("… 8 more");
  });
});
