import { describe, expect, it } from "vitest";
import {
  formatAge,
  formatCompact,
  formatElapsed,
  formatInteger,
  formatUsd,
  renderTable,
  truncateVisible,
  visibleLength,
} from "./format.js";

describe("number formats", () => {
  it("groups integers and shortens large ones", () => {
    expect(formatInteger(47251)).toBe("47,251");
    expect(formatCompact(950)).toBe("950");
    expect(formatCompact(4725)).toBe("4.72k");
    expect(formatCompact(47251)).toBe("47.3k");
    expect(formatCompact(1_250_000)).toBe("1.25M");
  });

  it("shows dollars with four decimals and an unknown price as ?", () => {
    expect(formatUsd(0.016238)).toBe("$0.0162");
    expect(formatUsd(-0.5)).toBe("-$0.5000");
    expect(formatUsd(null)).toBe("?");
  });

  it("shows elapsed times and ages at a readable precision", () => {
    expect(formatElapsed(850)).toBe("850ms");
    expect(formatElapsed(1234)).toBe("1.2s");
    expect(formatElapsed(123_000)).toBe("2m03s");
    expect(formatElapsed(3_720_000)).toBe("1h02m");
    expect(formatAge(4_000)).toBe("4s");
    expect(formatAge(12 * 60_000)).toBe("12m");
    expect(formatAge(50 * 3_600_000)).toBe("2d");
  });
});

describe("terminal text", () => {
  const green = (text: string) => `\x1b[32m${text}\x1b[39m`;

  it("measures and cuts text without counting escape sequences", () => {
    const text = `${green("completed")} and more`;
    expect(visibleLength(text)).toBe("completed and more".length);
    const cut = truncateVisible(text, 6);
    expect(visibleLength(cut)).toBe(6);
    expect(cut.startsWith("\x1b[32mcompl…")).toBe(true);
    expect(truncateVisible("short", 10)).toBe("short");
  });

  it("aligns table columns by their visible width", () => {
    const lines = renderTable(
      [
        ["name", "cost"],
        [green("a"), "$1.0000"],
        ["longer", "$10.0000"],
      ],
      ["left", "right"],
    );
    expect(lines.map(visibleLength)).toEqual([16, 16, 16]);
    expect(lines[2]).toBe("longer  $10.0000");
    expect(lines[1]).toBe(`${green("a")}        $1.0000`);
  });
});
