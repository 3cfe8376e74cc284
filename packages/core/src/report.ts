// Reads the `Scope: / Result: / Key files: / Files changed: / Issues:` report out of a fork's final
// text, tolerantly: any case, markdown bold or headings, bullets, sections missing or out of order.
import type { ForkReport } from "@forkd/protocol";

type SectionKey = keyof ForkReport;

const LABELS: readonly [RegExp, SectionKey][] = [
  [/^scope$/, "scope"],
  [/^results?$/, "result"],
  [/^key[\s_-]*files$/, "key_files"],
  [/^files[\s_-]*changed$/, "files_changed"],
  [/^(?:issues|problems|open issues)$/, "issues"],
];

const LABEL =
  "(scope|results?|key[\\s_-]*files|files[\\s_-]*changed|open issues|issues|problems)(?![A-Za-z])";
const EMPHASIS = "(?:\\*\\*|__|\\*|_)?";

// An optional bullet or number, an optional markdown heading, optional emphasis around the label,
// the label, and a colon (inside or outside the emphasis) unless the line is a heading.
const HEADING = new RegExp(
  `^\\s*(?:[-*+•]\\s+|\\d+[.)]\\s+)?(#{1,6}\\s*)?${EMPHASIS}\\s*${LABEL}\\s*(:)?\\s*${EMPHASIS}\\s*(:)?\\s*(.*)$`,
  "i",
);

/**
 * Characters of a line the heading pattern is run on; the rest of a heading's line is appended to
 * its text. The pattern's adjacent `\s*` backtrack in time cubic in a run of blanks, and the daemon
 * parses a model's final text: a line of 40,000 spaces held its event loop for seconds (a label
 * further in than this is prose anyway).
 */
const HEADING_SCAN_CHARS = 256;

const NONE = /^(?:none|n\/a|na|nothing|-|—|no changes|no files)\.?$/i;

function sectionOf(line: string): { key: SectionKey; rest: string } | null {
  const match = HEADING.exec(line.slice(0, HEADING_SCAN_CHARS));
  if (match === null) return null;
  const [, heading, label = "", colonIn, colonOut, head = ""] = match;
  const rest = head + line.slice(HEADING_SCAN_CHARS);
  const colon = colonIn !== undefined || colonOut !== undefined;
  // "Result of the check…" is prose; "## Result" and "Result: …" are headings.
  if (!colon && (heading === undefined || rest.trim() !== "")) return null;
  const normalised = label.trim().toLowerCase();
  const found = LABELS.find(([pattern]) => pattern.test(normalised));
  return found === undefined ? null : { key: found[1], rest };
}

function cleanItem(item: string): string {
  return item
    .trim()
    .replace(/^(?:[-*+•]\s+|\d+[.)]\s+)/, "")
    .replace(/^[`*_]+|[`*_]+$/g, "")
    .trim();
}

function toList(text: string): string[] {
  if (NONE.test(text.trim())) return [];
  return text
    .split(/\n|,(?=\s|$)/)
    .map(cleanItem)
    .filter((item) => item !== "" && !NONE.test(item));
}

/**
 * The report in `text`, or `undefined` when no section heading is found. Text before the first
 * heading is ignored; a section runs until the next heading. `Key files` and `Files changed` become
 * lists (split on lines and commas, bullets and backticks removed, "none" is empty).
 */
export function parseForkReport(text: string): ForkReport | undefined {
  const sections = new Map<SectionKey, string[]>();
  let current: string[] | undefined;
  for (const line of text.split(/\r?\n/)) {
    const section = sectionOf(line);
    if (section !== null && !sections.has(section.key)) {
      current = [section.rest];
      sections.set(section.key, current);
    } else if (current !== undefined) {
      current.push(line);
    }
  }
  if (sections.size === 0) return undefined;
  const report: ForkReport = {};
  for (const [key, lines] of sections) {
    const value = lines.join("\n").trim();
    if (key === "key_files" || key === "files_changed") report[key] = toList(value);
    else report[key] = value;
  }
  return report;
}
