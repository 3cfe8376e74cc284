/**
 * The request log: one entry per API request (the simulator's own `/v1/sim/*` routes are not
 * logged), kept in memory (the newest `limit` entries) and appended as JSON lines to a file when
 * one is configured. Running totals ({@link RequestTotals}) cover every request ever logged.
 */
import { createWriteStream, type WriteStream } from "node:fs";
import type { ApiErrorType } from "./errors.js";
import type { StopReason, Usage } from "./types.js";

/** One request, as logged. Times are high-resolution wall clock (ms since epoch, fractional). */
export interface RequestLogEntry {
  /** 1-based arrival order. */
  seq: number;
  /** The `request-id` response header. */
  id: string;
  /** ISO time of arrival. */
  time: string;
  /** Request headers received. @unit ms since epoch */
  receivedAt: number;
  /** Body read and checked; cache read/write decided. Null if it never got that far. */
  acceptedAt: number | null;
  /** First response byte sent (for streams: `message_start`); cache writes readable from here. */
  firstByteAt: number | null;
  /** Response finished, cut, or the client went away. */
  endedAt: number;
  method: string;
  path: string;
  /** Short hash of the API key (`key_<12 hex>`), never the key. */
  keyId: string | null;
  model: string | null;
  stream: boolean;
  /** HTTP status sent, null if the client left before any was. */
  status: number | null;
  errorType: ApiErrorType | null;
  errorMessage: string | null;
  /** Fault injected, as written in a script (`429 retry-after=1`, `cut-after=10`…). */
  fault: string | null;
  /** Scripted turn answered (0-based). */
  turn: number | null;
  stopReason: StopReason | null;
  /** What the request was charged; `output_tokens` counts tokens actually sent. Null if not charged. */
  usage: Usage | null;
  /** Output tokens delivered before the end (or the cut or the disconnect). @unit tokens */
  outputTokensSent: number;
  /** The client closed the connection before the response was complete. */
  disconnected: boolean;
  /** When the simulator saw the client go. @unit ms since epoch */
  disconnectedAt: number | null;
  /** The simulator destroyed the connection on purpose (a `cut-after` fault). */
  cut: boolean;
  /** The `anthropic-beta` names the request was sent with, in order. */
  betas: string[];
  /** The raw request body. */
  body: string;
}

/** A body as it arrived, in chunks; joined into one buffer the first time someone asks for its bytes. */
interface BodyChunks {
  chunks: readonly Buffer[];
  size: number;
  joined?: Buffer;
}

const BODY_BYTES = new WeakMap<RequestLogEntry, BodyChunks>();

function joinedBody(body: BodyChunks): Buffer {
  if (body.joined === undefined) {
    body.joined = body.chunks.length === 1 ? body.chunks[0]! : Buffer.concat(body.chunks, body.size);
    body.chunks = [body.joined];
  }
  return body.joined;
}

/**
 * The raw bytes of an entry's body, without decoding them: a listener that needs a few bytes of a
 * 190 kB prompt (a tag near its end) need not decode the whole of it, as `entry.body` does on every
 * read. `undefined` for an entry whose body was not read (refused before it) or was copied out.
 */
export function requestBodyBytes(entry: RequestLogEntry): Buffer | undefined {
  const body = BODY_BYTES.get(entry);
  return body === undefined ? undefined : joinedBody(body);
}

/**
 * Gives an entry its body as the chunks it arrived in: `entry.body` decodes them on every read, so a
 * log of large prompts holds buffers outside the JS heap rather than decoded strings, and the chunks
 * are joined into one buffer only for whoever reads them (most entries are never read).
 */
export function setBody(entry: RequestLogEntry, chunks: readonly Buffer[], size: number): void {
  const body: BodyChunks = { chunks, size };
  BODY_BYTES.set(entry, body);
  Object.defineProperty(entry, "body", {
    enumerable: true,
    configurable: true,
    get: () => joinedBody(body).toString("utf8"),
  });
}

/** A copy of an entry with an empty body (without decoding it). */
export function withoutBody(entry: RequestLogEntry): RequestLogEntry {
  const copy = {} as RequestLogEntry;
  for (const key of Object.keys(entry) as Array<keyof RequestLogEntry>) {
    if (key !== "body") (copy as unknown as Record<string, unknown>)[key] = entry[key];
  }
  copy.body = "";
  return copy;
}

/** Totals over every request served. */
export interface RequestTotals {
  /** API requests (messages and count_tokens). */
  requests: number;
  messages: number;
  countTokens: number;
  streaming: number;
  /** Requests by HTTP status sent ("none" when the client left first). */
  byStatus: Record<string, number>;
  errors: number;
  faults: number;
  disconnects: number;
  cuts: number;
  /** Token totals by kind, over what was charged. @unit tokens */
  tokens: {
    /** input + cacheCreation + cacheRead. */
    prompt: number;
    input: number;
    cacheCreation: number;
    cacheCreation5m: number;
    cacheCreation1h: number;
    cacheRead: number;
    output: number;
  };
}

function emptyStats(): RequestTotals {
  return {
    requests: 0,
    messages: 0,
    countTokens: 0,
    streaming: 0,
    byStatus: {},
    errors: 0,
    faults: 0,
    disconnects: 0,
    cuts: 0,
    tokens: {
      prompt: 0,
      input: 0,
      cacheCreation: 0,
      cacheCreation5m: 0,
      cacheCreation1h: 0,
      cacheRead: 0,
      output: 0,
    },
  };
}

/** Options of a {@link RequestLog}. */
export interface RequestLogOptions {
  /** Append JSON lines here. */
  file?: string | undefined;
  /** Entries kept in memory (oldest dropped first). @default 500 */
  limit?: number | undefined;
}

/** In-memory and on-disk request log with running totals. */
export class RequestLog {
  #entries: RequestLogEntry[] = [];
  #stats = emptyStats();
  readonly #limit: number;
  readonly #file: WriteStream | undefined;
  #fileError: Error | undefined;

  constructor(options: RequestLogOptions = {}) {
    this.#limit = options.limit ?? 500;
    if (options.file !== undefined) {
      this.#file = createWriteStream(options.file, { flags: "a" });
      this.#file.on("error", (e) => {
        this.#fileError = e;
      });
    }
  }

  /** Opens the file (if any); rejects if it cannot be written. */
  async ready(): Promise<void> {
    const f = this.#file;
    if (f === undefined || f.pending === false) return;
    await new Promise<void>((resolve, reject) => {
      const onReady = (): void => {
        f.off("error", onError);
        resolve();
      };
      const onError = (e: Error): void => {
        f.off("ready", onReady);
        reject(e);
      };
      f.once("ready", onReady);
      f.once("error", onError);
    });
  }

  add(entry: RequestLogEntry): void {
    if (this.#limit > 0) {
      this.#entries.push(entry);
      const slack = Math.max(16, this.#limit >> 3);
      if (this.#entries.length > this.#limit + slack)
        this.#entries.splice(0, this.#entries.length - this.#limit);
    }
    if (this.#file !== undefined && this.#fileError === undefined)
      this.#file.write(`${JSON.stringify(entry)}\n`);
    const s = this.#stats;
    s.requests++;
    if (entry.path === "/v1/messages") s.messages++;
    else s.countTokens++;
    if (entry.stream) s.streaming++;
    const status = entry.status === null ? "none" : String(entry.status);
    s.byStatus[status] = (s.byStatus[status] ?? 0) + 1;
    if (entry.status !== null && entry.status >= 400) s.errors++;
    if (entry.fault !== null) s.faults++;
    if (entry.disconnected) s.disconnects++;
    if (entry.cut) s.cuts++;
    const u = entry.usage;
    if (u !== null) {
      const t = s.tokens;
      t.input += u.input_tokens;
      t.cacheCreation += u.cache_creation_input_tokens;
      t.cacheCreation5m += u.cache_creation.ephemeral_5m_input_tokens;
      t.cacheCreation1h += u.cache_creation.ephemeral_1h_input_tokens;
      t.cacheRead += u.cache_read_input_tokens;
      t.prompt += u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
      t.output += u.output_tokens;
    }
  }

  /** The newest entries kept in memory, oldest first. */
  entries(): RequestLogEntry[] {
    return this.#entries.length > this.#limit ? this.#entries.slice(-this.#limit) : [...this.#entries];
  }

  stats(): RequestTotals {
    return structuredClone(this.#stats);
  }

  /** Forgets the entries in memory and the totals (the file is kept). */
  clear(): void {
    this.#entries = [];
    this.#stats = emptyStats();
  }

  /** Flushes and closes the file. */
  async close(): Promise<void> {
    const f = this.#file;
    if (f === undefined || f.closed) return;
    await new Promise<void>((resolve) => f.end(resolve));
  }
}
