// Grep: a regular-expression search over the workspace's files, in JavaScript (no ripgrep needed),
// with ripgrep's output shapes: matching files (newest first), counts, or lines with context.
import { basename } from "node:path";
import type { ToolOutcome } from "@forkd/core";
import {
  ABORTED,
  BINARY_SNIFF_BYTES,
  confine,
  describeError,
  fail,
  looksBinary,
  ok,
  type ToolRun,
} from "./context.js";
import { resolveSearchRoot, skipDirsFor, sortNewestFirst, stoppedNote, swappedNote } from "./glob.js";
import { globToRegExp } from "./glob-pattern.js";
import {
  compilePattern,
  type MatchOperation,
  type PatternSpec,
  withoutCarriageReturn,
} from "./line-match.js";
import { GREP_MATCH_TIME_LIMIT_MS, MatchTimeLimitError, OffThreadMatcher } from "./off-thread-matcher.js";
import { openConfinedForRead, readOpenedFile } from "./open-confined.js";
import { capOutput } from "./output.js";
import { MAX_LINE_CHARS } from "./read.js";
import { walkFiles } from "./walk.js";

/** Files larger than this are not searched (and the model is told how many were passed over). @unit bytes */
export const MAX_GREP_FILE_BYTES = 10 * 1024 * 1024;
/**
 * Characters of `content` lines Grep collects before it stops searching. Far more than a result
 * shows (`outputCapBytes`), and a bound on the daemon's memory: a model's links to one big file are
 * read as that many files. @unit UTF-16 code units
 */
export const MAX_GREP_HELD_CHARS = 8 * 1024 * 1024;
/**
 * Files are sent to the regex worker together, up to this many characters or {@link GREP_BATCH_FILES}
 * files: a message per small file made a search of a repository twice as slow. @unit UTF-16 code units
 */
const GREP_BATCH_CHARS = 1024 * 1024;
const GREP_BATCH_FILES = 256;

export interface GrepInput {
  pattern: string;
  path?: string | undefined;
  /** Only files matching this glob: against the file name when it has no `/`, else the relative path. */
  glob?: string | undefined;
  /** Only files of this type (`ts`, `py`, …; see {@link FILE_TYPES}). */
  type?: string | undefined;
  /** @default "files_with_matches" */
  output_mode?: "content" | "files_with_matches" | "count" | undefined;
  "-i"?: boolean | undefined;
  /** Line numbers in `content` mode. @default true */
  "-n"?: boolean | undefined;
  "-A"?: number | undefined;
  "-B"?: number | undefined;
  "-C"?: number | undefined;
  context?: number | undefined;
  /** Entries (lines, files or counts) shown at most, after `offset`. */
  head_limit?: number | undefined;
  /** Entries skipped before `head_limit` applies. */
  offset?: number | undefined;
  /** Let the pattern span lines (`.` matches newlines too). */
  multiline?: boolean | undefined;
}

/** File types understood by `type`, as in ripgrep (a subset). */
export const FILE_TYPES: Readonly<Record<string, readonly string[]>> = {
  c: ["c", "h"],
  cpp: ["cpp", "cc", "cxx", "c++", "hpp", "hh", "hxx", "h", "inl"],
  cs: ["cs"],
  css: ["css", "scss", "sass", "less"],
  go: ["go"],
  html: ["html", "htm"],
  java: ["java"],
  js: ["js", "jsx", "mjs", "cjs", "vue"],
  json: ["json", "jsonc", "json5"],
  kotlin: ["kt", "kts"],
  md: ["md", "markdown", "mdx"],
  php: ["php"],
  py: ["py", "pyi"],
  rb: ["rb"],
  rust: ["rs"],
  sh: ["sh", "bash", "zsh"],
  sql: ["sql"],
  swift: ["swift"],
  toml: ["toml"],
  ts: ["ts", "tsx", "mts", "cts"],
  yaml: ["yaml", "yml"],
};

type Mode = NonNullable<GrepInput["output_mode"]>;

/**
 * What Grep keeps of a matching file: its path and how many lines matched, never its lines — a file
 * is read, matched and let go before the next one (its `content` lines go to the shared entries).
 */
interface FileHit {
  path: string;
  mtimeMs: number;
  /** Matching lines; 1 in `files_with_matches` mode, which stops at the first (unless `multiline`). */
  count: number;
}

/** How {@link grepTool} searches, besides the model's input. */
export interface GrepSettings {
  /** Directory names not descended into unless the glob names them. */
  skipDirs: readonly string[];
  /** @default GREP_MATCH_TIME_LIMIT_MS @unit ms */
  timeLimitMs?: number | undefined;
}

export async function grepTool(input: GrepInput, run: ToolRun, settings: GrepSettings): Promise<ToolOutcome> {
  const { skipDirs } = settings;
  const timeLimitMs = settings.timeLimitMs ?? GREP_MATCH_TIME_LIMIT_MS;
  const spec: PatternSpec = {
    pattern: input.pattern,
    ignoreCase: input["-i"] === true,
    multiline: input.multiline === true,
  };
  // Compiled here too, only to answer a bad pattern at once, without starting a worker.
  const regex = compilePattern(spec);
  if (!regex.ok) return fail(regex.reason);
  const filter = fileFilter(input);
  if (!filter.ok) return fail(filter.reason);
  const root = await resolveSearchRoot(run, input.path);
  if (!root.ok) return root.outcome;

  const mode: Mode = input.output_mode ?? "files_with_matches";
  const hits: FileHit[] = [];
  /** `content` mode's output lines, in file order, built as each file is read. */
  const lineEntries: string[] = [];
  const held = { chars: 0 };
  let stopped = false;
  let tooBig = 0;
  /** Files that changed into a symlink (or under a swapped directory) while Grep opened them. */
  let changed = 0;
  /** Directories the walk passed over for the same reason. */
  let swappedDirectories = 0;
  /** Why the walk stopped before its end, if a limit stopped it. */
  let walkStopped: string | undefined;
  let matcher: OffThreadMatcher | undefined;
  const operation: MatchOperation = spec.multiline
    ? "multiline"
    : mode === "content"
      ? "lines"
      : mode === "count"
        ? "count"
        : "any";
  /** Files read and not matched yet: sent to the worker together. */
  let batch: { path: string; mtimeMs: number; text: string }[] = [];
  let batchChars = 0;
  /** Matches the batch; false once `content` mode holds all the lines it may. */
  const matchBatch = async (): Promise<boolean> => {
    const files = batch;
    batch = [];
    batchChars = 0;
    if (files.length === 0) return true;
    matcher ??= await OffThreadMatcher.start(spec, { signal: run.signal, timeLimitMs });
    const results = await matcher.match(files.map((file) => ({ operation, text: file.text })));
    for (const [index, file] of files.entries()) {
      const result = results[index]!;
      const count = typeof result === "number" ? result : result.length;
      if (count === 0) continue;
      hits.push({ path: file.path, mtimeMs: file.mtimeMs, count });
      if (mode !== "content" || typeof result === "number") continue;
      if (!renderLines(lineEntries, held, file.path, file.text.split("\n"), result, input, root.isDirectory))
        return false;
    }
    return true;
  };
  try {
    const candidates = root.isDirectory
      ? walkFiles(root.path, {
          signal: run.signal,
          skipDirs: skipDirsFor(input.glob ?? "", skipDirs),
          onSwapped: () => swappedDirectories++,
          onStopped: (reason) => {
            walkStopped = reason;
          },
        })
      : single(root.path);
    for await (const entry of candidates) {
      if (entry.kind === "other" || !filter.accepts(entry.relative)) continue;
      // A symlink is followed only when its target is inside the workspace.
      const path = entry.kind === "symlink" ? await confinedTarget(run, entry.path) : entry.path;
      if (path === undefined) continue;
      // The daemon's credential files are never searched (a match or none is an oracle on their
      // value), nor a file swapped for a symlink after the walk or the check saw it.
      const opened = await openConfinedForRead(run, path).catch(() => undefined);
      if (opened === undefined) continue;
      if (!opened.ok) {
        if (opened.problem === "changed") changed++;
        continue;
      }
      const { info } = opened;
      let data: Buffer | undefined;
      try {
        if (info.size > MAX_GREP_FILE_BYTES) {
          tooBig++;
          continue;
        }
        data = await readOpenedFile(opened.handle, info.size, run.signal).catch(() => undefined);
      } finally {
        await opened.handle.close();
      }
      if (data === undefined || looksBinary(data.subarray(0, BINARY_SNIFF_BYTES))) continue;
      const text = data.toString("utf8");
      batch.push({ path: entry.path, mtimeMs: info.mtimeMs, text });
      batchChars += text.length;
      if (batchChars < GREP_BATCH_CHARS && batch.length < GREP_BATCH_FILES) continue;
      if (!(await matchBatch())) {
        stopped = true;
        break;
      }
    }
    if (!stopped && !(await matchBatch())) stopped = true;
  } catch (error) {
    if (run.signal.aborted) return ABORTED;
    if (error instanceof MatchTimeLimitError) {
      return fail(
        `Grep stopped: matching took longer than ${timeLimitMs / 1000} s. The pattern is too costly for ` +
          "these files (a large counted repetition such as .{300} costs its size on every character); narrow the " +
          "search with path, glob or type, or simplify the pattern.",
      );
    }
    return fail(`Grep failed: ${describeError(error)}`);
  } finally {
    matcher?.close();
  }

  const entries = mode === "content" ? lineEntries : render(mode, hits);
  const first = input.offset ?? 0;
  const shown =
    input.head_limit === undefined ? entries.slice(first) : entries.slice(first, first + input.head_limit);
  const notes: string[] = [];
  if (first + shown.length < entries.length) {
    notes.push(
      `(showing ${shown.length} of ${entries.length} ${mode === "content" ? "lines" : "entries"} from offset ${first}; ` +
        "use offset/head_limit to see more)",
    );
  }
  if (stopped) {
    notes.push(
      `(search stopped at ${hits.at(-1)?.path}: the matching lines found so far fill ${MAX_GREP_HELD_CHARS / 1024 / 1024} Mi characters; narrow the search with path, glob or a more specific pattern)`,
    );
  }
  if (tooBig > 0) {
    notes.push(
      `(${tooBig} file${tooBig === 1 ? "" : "s"} over ${MAX_GREP_FILE_BYTES / 1024 / 1024} MiB not searched)`,
    );
  }
  if (changed > 0) {
    notes.push(
      `(${changed} file${changed === 1 ? "" : "s"} changed while being opened and ${changed === 1 ? "was" : "were"} not searched)`,
    );
  }
  if (swappedDirectories > 0) notes.push(swappedNote(swappedDirectories));
  if (walkStopped !== undefined) notes.push(stoppedNote(walkStopped, "narrow the search with path or glob"));
  const body = summarize(mode, hits, shown);
  const text = notes.length === 0 ? body : `${body}\n${notes.join("\n")}`;
  return ok(capOutput(text, run.outputCapBytes, "narrow the search with path, glob or head_limit"));
}

async function* single(path: string) {
  yield { path, relative: basename(path), kind: "file" as const };
}

async function confinedTarget(run: ToolRun, path: string): Promise<string | undefined> {
  const target = await confine(run, path);
  return target.ok ? target.path : undefined;
}

type FileFilter = { ok: true; accepts: (relative: string) => boolean } | { ok: false; reason: string };

/** The `glob` and `type` filters as one predicate over relative paths. */
function fileFilter(input: GrepInput): FileFilter {
  const checks: ((relative: string) => boolean)[] = [];
  if (input.glob !== undefined && input.glob !== "") {
    const regex = globToRegExp(input.glob);
    const onName = !input.glob.includes("/");
    checks.push((relative) => regex.test(onName ? (relative.split("/").pop() ?? relative) : relative));
  }
  if (input.type !== undefined && input.type !== "") {
    const extensions = FILE_TYPES[input.type];
    if (extensions === undefined) {
      return {
        ok: false,
        reason: `Unknown file type ${JSON.stringify(input.type)}. Known types: ${Object.keys(FILE_TYPES).join(", ")}; or use glob.`,
      };
    }
    const set = new Set(extensions);
    checks.push((relative) => {
      const dot = relative.lastIndexOf(".");
      return dot !== -1 && set.has(relative.slice(dot + 1).toLowerCase());
    });
  }
  return { ok: true, accepts: (relative) => checks.every((check) => check(relative)) };
}

/** The output entries of `files_with_matches` and `count` modes, before offset/head_limit. */
function render(mode: "files_with_matches" | "count", hits: FileHit[]): string[] {
  if (mode === "files_with_matches") {
    const files = hits.map((h) => ({ path: h.path, mtimeMs: h.mtimeMs }));
    sortNewestFirst(files);
    return files.map((f) => f.path);
  }
  return hits.map((h) => `${h.path}:${h.count}`);
}

/**
 * Appends one file's `content` entries (matching lines and their context) to `out`. Returns false,
 * having stopped, once `out` holds more than {@link MAX_GREP_HELD_CHARS}.
 */
function renderLines(
  out: string[],
  held: { chars: number },
  path: string,
  lines: readonly string[],
  matches: Uint32Array,
  input: GrepInput,
  withPath: boolean,
): boolean {
  const context = input.context ?? input["-C"] ?? 0;
  const before = input["-B"] ?? context;
  const after = input["-A"] ?? context;
  const numbers = input["-n"] ?? true;
  // Lines are visited in increasing order, so whether one matched is read off the sorted matches
  // with a cursor: a Set of them is hundreds of MB for a file of millions of matching lines.
  let cursor = 0;
  const isMatch = (line: number) => {
    while (cursor < matches.length && matches[cursor]! < line) cursor++;
    return matches[cursor] === line;
  };
  let lastShown = -2;
  const lineCount = lines.at(-1) === "" ? lines.length - 1 : lines.length;
  for (const m of matches) {
    const from = Math.max(0, m - before, lastShown + 1);
    const to = Math.min(lineCount - 1, m + after);
    if (from > lastShown + 1 && out.length > 0 && (before > 0 || after > 0)) out.push("--");
    for (let i = from; i <= to; i++) {
      const sepChar = isMatch(i) ? ":" : "-";
      const prefix = `${withPath ? `${path}${sepChar}` : ""}${numbers ? `${i + 1}${sepChar}` : ""}`;
      const entry = prefix + displayLine(lines[i]!);
      out.push(entry);
      held.chars += entry.length;
      if (held.chars > MAX_GREP_HELD_CHARS) return false;
    }
    lastShown = Math.max(lastShown, to);
  }
  return true;
}

function displayLine(line: string): string {
  const text = withoutCarriageReturn(line);
  return text.length > MAX_LINE_CHARS ? `${text.slice(0, MAX_LINE_CHARS)}… [line cut]` : text;
}

function summarize(mode: Mode, hits: FileHit[], shown: string[]): string {
  if (mode === "files_with_matches") {
    if (hits.length === 0) return "No files found";
    return `Found ${hits.length} file${hits.length === 1 ? "" : "s"}\n${shown.join("\n")}`;
  }
  if (hits.length === 0) return "No matches found";
  if (mode === "count") {
    const total = hits.reduce((sum, h) => sum + h.count, 0);
    return `${shown.join("\n")}\n\nFound ${total} matching line${total === 1 ? "" : "s"} across ${hits.length} file${hits.length === 1 ? "" : "s"}.`;
  }
  return shown.join("\n");
}
