// Read: a text file as numbered lines (`cat -n` style), a window of it at a time, read in chunks so a
// huge file or a huge line costs no more memory than the window shown.
import type { FileHandle } from "node:fs/promises";
import { StringDecoder } from "node:string_decoder";
import type { ToolOutcome } from "@forkd/core";
import {
  ABORTED,
  BINARY_SNIFF_BYTES,
  confine,
  describeError,
  errnoCode,
  fail,
  looksBinary,
  ok,
  type ToolRun,
} from "./context.js";
import { type OpenedFile, openConfinedForRead, openProblemText } from "./open-confined.js";

/** Lines shown when the model gives no `limit`. */
export const DEFAULT_READ_LIMIT = 2000;
/** Characters of one line shown; the rest of the line is cut. */
export const MAX_LINE_CHARS = 2000;
const CHUNK_BYTES = 64 * 1024;
/**
 * Bytes of a file one Read call reads at most, however far its lines or the `offset` lie: a sparse
 * file of a terabyte with no newline after its first text (`truncate -s 1T`) was one line, read to
 * its end — an hour of the daemon's main thread per call. @unit bytes
 */
export const MAX_READ_SCAN_BYTES = 64 * 1024 * 1024;

export interface ReadInput {
  file_path: string;
  /** First line shown, counted from 1. */
  offset?: number | undefined;
  /** Lines shown. */
  limit?: number | undefined;
}

/** Formats one line the way `cat -n` does: the number right-aligned in six columns, a tab, the text. */
export function numberedLine(lineNumber: number, text: string): string {
  return `${String(lineNumber).padStart(6)}\t${text}`;
}

export async function readTool(input: ReadInput, run: ToolRun): Promise<ToolOutcome> {
  const target = await confine(run, input.file_path);
  if (!target.ok) return target.outcome;
  const path = target.path;
  const first = Math.max(1, input.offset ?? 1);
  const limit = input.limit ?? DEFAULT_READ_LIMIT;
  let handle: FileHandle | undefined;
  try {
    let opened: OpenedFile;
    try {
      opened = await openConfinedForRead(run, path);
    } catch (error) {
      if (errnoCode(error) === "ENOENT") {
        return fail(`File does not exist: ${path}. Check the path, or use Glob to find the file.`);
      }
      throw error;
    }
    if (!opened.ok) {
      return opened.problem === "directory"
        ? fail(`${path} is a directory, not a file. Use Glob to list its files.`)
        : fail(openProblemText(path, opened.problem));
    }
    handle = opened.handle;
    // What the file held when opened: one that another run's command keeps appending to is not
    // read for as long as it grows.
    const size = opened.info.size;
    if (size === 0) return ok(`(${path} is empty)`);
    const sniff = Buffer.alloc(Math.min(BINARY_SNIFF_BYTES, size));
    const { bytesRead } = await handle.read(sniff, 0, sniff.length, 0);
    if (looksBinary(sniff.subarray(0, bytesRead))) {
      return fail(`${path} is a binary file (${size} bytes); Read shows text files only.`);
    }
    return ok(await renderWindow(handle, { path, size, first, limit, run }));
  } catch (error) {
    if (run.signal.aborted) return ABORTED;
    if (error instanceof PastEndError) return fail(error.message);
    return fail(`Cannot read ${path}: ${describeError(error)}`);
  } finally {
    await handle?.close();
  }
}

class PastEndError extends Error {}

interface Window {
  path: string;
  size: number;
  first: number;
  limit: number;
  run: ToolRun;
}

async function renderWindow(handle: FileHandle, w: Window): Promise<string> {
  const out: string[] = [];
  let outBytes = 0;
  let lineNumber = 0;
  let consumed = 0; // bytes of the file up to the end of the last line shown
  let capped = false;
  let windowFull = false;
  const scanned = Math.min(w.size, MAX_READ_SCAN_BYTES);
  for await (const line of readLines(handle, scanned, w.run.signal)) {
    lineNumber++;
    if (lineNumber < w.first) {
      consumed += line.bytes;
      continue;
    }
    if (lineNumber >= w.first + w.limit) {
      windowFull = true;
      break;
    }
    const text = numberedLine(lineNumber, line.truncated ? `${line.text}… [line cut]` : line.text);
    const bytes = Buffer.byteLength(text) + 1;
    if (outBytes + bytes > w.run.outputCapBytes && out.length > 0) {
      capped = true;
      break;
    }
    out.push(text);
    outBytes += bytes;
    consumed += line.bytes;
  }
  const scanStopped = !capped && !windowFull && scanned < w.size;
  const scanAdvice = `Read reads at most the first ${MAX_READ_SCAN_BYTES / 1024 / 1024} MiB of a file (this one has ${w.size.toLocaleString("en-US")} bytes); use Grep, or Bash where allowed, for the rest.`;
  if (out.length === 0 && scanStopped) {
    throw new PastEndError(
      `offset ${w.first} lies past the first ${lineNumber} lines of ${w.path}. ${scanAdvice}`,
    );
  }
  if (out.length === 0) {
    throw new PastEndError(
      `offset ${w.first} is past the end of ${w.path}, which has ${lineNumber} line${lineNumber === 1 ? "" : "s"}.`,
    );
  }
  const last = w.first + out.length - 1;
  const remaining = w.size - consumed;
  if (capped) {
    out.push(
      `[output truncated: ${remaining.toLocaleString("en-US")} of ${w.size.toLocaleString("en-US")} bytes of the file not shown; pass offset=${last + 1} to read on]`,
    );
  } else if (scanStopped) {
    out.push(`(lines ${w.first}–${last} shown, the last one perhaps cut. ${scanAdvice})`);
  } else if (remaining > 0) {
    out.push(`(lines ${w.first}–${last} shown; the file goes on: pass offset=${last + 1} to read more)`);
  }
  return out.join("\n");
}

interface Line {
  text: string;
  /** Bytes of the file this line took, its newline included. */
  bytes: number;
  /** The text was cut at {@link MAX_LINE_CHARS}. */
  truncated: boolean;
}

/**
 * The lines of the file's first `size` bytes, in order, each cut at {@link MAX_LINE_CHARS}; checks
 * the signal between chunks.
 */
async function* readLines(handle: FileHandle, size: number, signal: AbortSignal): AsyncGenerator<Line> {
  const decoder = new StringDecoder("utf8");
  const buffer = Buffer.alloc(CHUNK_BYTES);
  let position = 0;
  let text = "";
  let bytes = 0;
  let truncated = false;
  const take = (piece: string) => {
    bytes += Buffer.byteLength(piece);
    if (truncated) return;
    text += piece;
    if (text.length > MAX_LINE_CHARS) {
      text = text.slice(0, MAX_LINE_CHARS);
      truncated = true;
    }
  };
  const finish = (): Line => {
    const line = { text: text.endsWith("\r") ? text.slice(0, -1) : text, bytes, truncated };
    text = "";
    bytes = 0;
    truncated = false;
    return line;
  };
  for (;;) {
    signal.throwIfAborted();
    const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, size - position), position);
    if (bytesRead === 0) break;
    position += bytesRead;
    const chunk = decoder.write(buffer.subarray(0, bytesRead));
    let start = 0;
    for (let nl = chunk.indexOf("\n"); nl !== -1; nl = chunk.indexOf("\n", start)) {
      take(chunk.slice(start, nl));
      bytes += 1;
      yield finish();
      start = nl + 1;
    }
    take(chunk.slice(start));
  }
  take(decoder.end());
  if (bytes > 0) yield finish();
}
