// How numbers, money, durations and tables look in the CLI's human output. JSON output never goes
// through here: it carries the raw values.

/** `47251` → `47,251`. */
export function formatInteger(value: number): string {
  return Math.round(value).toLocaleString("en-US");
}

/** `47251` → `47.3k`, `1250000` → `1.25M`: for narrow live views. */
export function formatCompact(value: number): string {
  if (value < 1000) return String(Math.round(value));
  if (value < 1_000_000) return `${(value / 1000).toFixed(value < 10_000 ? 2 : 1)}k`;
  return `${(value / 1_000_000).toFixed(2)}M`;
}

/** US dollars with four decimals (`$0.0162`), or `?` when the price is unknown. */
export function formatUsd(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "?";
  const sign = value < 0 ? "-" : "";
  return `${sign}$${Math.abs(value).toFixed(4)}`;
}

/** `0.9623` → `96.2%`. */
export function formatPercent(share: number): string {
  if (!Number.isFinite(share)) return "-";
  return `${(share * 100).toFixed(1)}%`;
}

/** An elapsed time: `850ms`, `1.2s`, `2m03s`, `1h02m`. */
export function formatElapsed(ms: number): string {
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, "0")}s`;
  const minutes = Math.floor(seconds / 60);
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, "0")}m`;
}

/** A coarse age: `4s`, `12m`, `3h`, `2d`. */
export function formatAge(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

/** `HH:MM:SS.mmm` of an epoch time, local time. */
export function formatClock(epochMs: number): string {
  const date = new Date(epochMs);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}.${String(date.getMilliseconds()).padStart(3, "0")}`;
}

// CSI sequences (colours, cursor moves): they take no room on the screen.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching ANSI escapes is the point
const ANSI_PATTERN = /\x1b\[[0-9;?]*[A-Za-z]/g;

/** The width of `text` on a terminal, escape sequences excluded. */
export function visibleLength(text: string): number {
  return text.replace(ANSI_PATTERN, "").length;
}

/** Cuts `text` to `width` visible characters (ending in `…` when cut), keeping escape sequences. */
export function truncateVisible(text: string, width: number): string {
  if (visibleLength(text) <= width) return text;
  if (width <= 0) return "";
  let out = "";
  let visible = 0;
  let index = 0;
  while (index < text.length && visible < width - 1) {
    ANSI_PATTERN.lastIndex = index;
    const sequence = text[index] === "\x1b" ? ANSI_PATTERN.exec(text) : null;
    if (sequence !== null && sequence.index === index) {
      out += sequence[0];
      index += sequence[0].length;
      continue;
    }
    out += text[index];
    index += 1;
    visible += 1;
  }
  // Whatever styling was open is closed, so the ellipsis and the next line stay plain.
  return `${out}…${text.includes("\x1b[") ? "\x1b[0m" : ""}`;
}

/** One line of text: newlines and tabs become spaces, runs of spaces shrink to one. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Column alignment of {@link renderTable}. */
export type Align = "left" | "right";

/**
 * Lays out rows as aligned columns separated by two spaces. `align` defaults to left for every
 * column; trailing spaces are trimmed.
 */
export function renderTable(rows: readonly (readonly string[])[], align: readonly Align[] = []): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, column) => {
      widths[column] = Math.max(widths[column] ?? 0, visibleLength(cell));
    });
  }
  return rows.map((row) =>
    row
      .map((cell, column) => {
        const pad = " ".repeat((widths[column] ?? 0) - visibleLength(cell));
        return align[column] === "right" ? pad + cell : cell + pad;
      })
      .join("  ")
      .trimEnd(),
  );
}
