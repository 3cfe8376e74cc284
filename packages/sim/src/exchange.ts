// One HTTP exchange of the simulator: its state, and the helpers that read its request and write
// its response without touching the server's shared state.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { UnkeptValueText } from "@forkd/protocol/internal";
import { valuesJsonCannotKeep } from "@forkd/protocol/internal";
import type { CachePlan } from "./cache.js";
import { apiErrorBody, SimApiError } from "./errors.js";
import { type Fidelity, parseJsonBytes } from "./json-bytes.js";
import { type RequestLogEntry, setBody } from "./log.js";
import type { Usage } from "./types.js";

/** Abort reason of a finished exchange (one shared object: creating a DOMException per request shows in profiles). */
export const GONE = new Error("exchange over");

export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

export function apiKeyOf(req: IncomingMessage): string | undefined {
  const key = req.headers["x-api-key"];
  if (typeof key === "string" && key !== "") return key;
  const auth = req.headers.authorization;
  if (typeof auth === "string") {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (m !== null) return m[1];
  }
  return undefined;
}

/** State of one HTTP exchange. */
export interface Exchange {
  readonly seq: number;
  readonly id: string;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly abort: AbortController;
  readonly entry: RequestLogEntry;
  plan: CachePlan | undefined;
  /** Input usage decided at accept time, charged at first byte. */
  inputUsage: Omit<Usage, "output_tokens"> | undefined;
  outputTokens: number;
  logged: boolean;
}

/** A new exchange for `req`, with its log entry as it stands before anything is known of the request. */
export function openExchange(
  req: IncomingMessage,
  res: ServerResponse,
  at: { seq: number; id: string; path: string; receivedAt: number },
): Exchange {
  const { seq, id, path, receivedAt } = at;
  return {
    seq,
    id,
    req,
    res,
    abort: new AbortController(),
    plan: undefined,
    inputUsage: undefined,
    outputTokens: 0,
    logged: false,
    entry: {
      seq,
      id,
      time: new Date(receivedAt).toISOString(),
      receivedAt,
      acceptedAt: null,
      firstByteAt: null,
      endedAt: receivedAt,
      method: req.method ?? "GET",
      path,
      keyId: null,
      model: null,
      stream: false,
      status: null,
      errorType: null,
      errorMessage: null,
      fault: null,
      turn: null,
      stopReason: null,
      usage: null,
      outputTokensSent: 0,
      disconnected: false,
      disconnectedAt: null,
      cut: false,
      betas: [],
      body: "",
    },
  };
}

/** Answers with a JSON body, unless the response already started or its connection is gone. */
export function sendJson(
  ex: Exchange,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const { res } = ex;
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
  ex.entry.status = status;
}

/** Answers with an error in Anthropic's shape, and records it on the log entry. */
export function sendError(ex: Exchange, err: SimApiError): void {
  ex.entry.errorType = err.errorType;
  ex.entry.errorMessage = err.message;
  sendJson(ex, err.status, apiErrorBody(err.errorType, err.message, ex.id), { ...err.headers });
}

/**
 * Hands read bodies on to their checks one per turn of the event loop, in arrival order. A check
 * (parse, validation, cache plan) takes ~2 ms of one thread at a 190 kB body; run as each body ends,
 * a burst's checks ran back to back in one poll of the loop, and every request behind them had its
 * headers read — its arrival stamped — only after all of them. One per turn, the loop polls its
 * sockets between checks: arrivals are stamped as they come, as a provider's front end receives
 * requests while its back ends work, and the checks still run in the order the bodies ended.
 */
export class BodyTurns {
  readonly #ready: Array<() => void> = [];
  #scheduled = false;

  /** Runs `handOn` on a later turn of the event loop, after the bodies that ended before. */
  enqueue(handOn: () => void): void {
    this.#ready.push(handOn);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#next);
  }

  // An immediate scheduled from an immediate runs on the loop's next turn, after its poll.
  readonly #next = (): void => {
    this.#ready.shift()?.();
    if (this.#ready.length > 0) setImmediate(this.#next);
    else this.#scheduled = false;
  };
}

// One queue for the process: its turns are the event loop's, whichever server the body came to.
const bodyTurns = new BodyTurns();

/** A request body as it arrived: its chunks, in order, and their total size. */
export interface RequestBody {
  readonly chunks: readonly Buffer[];
  /** @unit bytes */
  readonly size: number;
}

/**
 * Reads the body; the log keeps its chunks (off the JS heap) and joins and decodes them only when
 * read. The promise settles on a later turn of the event loop ({@link BodyTurns}).
 */
export function readBody(ex: Exchange, maxBody: number): Promise<RequestBody | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooBig = false;
    ex.req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > maxBody) tooBig = true;
      else chunks.push(c);
    });
    ex.req.on("end", () =>
      bodyTurns.enqueue(() => {
        if (tooBig) {
          reject(
            new SimApiError("request_too_large", `Request exceeds the maximum size of ${maxBody} bytes.`),
          );
          return;
        }
        setBody(ex.entry, chunks, size);
        resolve({ chunks, size });
      }),
    );
    ex.req.on("error", () => resolve(undefined));
    ex.req.on("aborted", () => resolve(undefined));
  });
}

/**
 * Bodies up to this size are joined, for parsing, into one buffer that every request reuses; a larger
 * one gets a buffer of its own. @unit bytes
 */
export const PARSE_BUFFER_BYTES = 4 * 1024 * 1024;

// Joining a 190 kB body into a new buffer for every request cost the simulator ~0.1 ms of copying into
// fresh memory and more garbage collection; the parse needs the joined bytes only while it runs
// (synchronously: every value it returns is a new string or a copy), so one buffer serves them all.
let parseBuffer = Buffer.alloc(0);

/** The body's bytes in one buffer, valid until the next call: a single chunk as it is, more chunks joined. */
function parseBytes(body: RequestBody): Buffer {
  if (body.chunks.length === 1) return body.chunks[0]!;
  if (body.size > PARSE_BUFFER_BYTES) return Buffer.concat(body.chunks, body.size);
  if (parseBuffer.length < body.size) {
    parseBuffer = Buffer.allocUnsafeSlow(
      Math.min(PARSE_BUFFER_BYTES, Math.max(body.size, 2 * parseBuffer.length)),
    );
  }
  let at = 0;
  for (const chunk of body.chunks) at += chunk.copy(parseBuffer, at);
  return parseBuffer.subarray(0, body.size);
}

/**
 * The request body as JSON, or the API's 400 for a body that is not. Parsed from the bytes: a large
 * body is never decoded into one string ({@link parseJsonBytes}).
 */
export function parseJson(body: RequestBody): unknown {
  return parseBodyBytes(parseBytes(body));
}

function parseBodyBytes(bytes: Buffer, fidelity?: Fidelity): unknown {
  try {
    return parseJsonBytes(bytes, undefined, fidelity);
  } catch (e) {
    throw new SimApiError(
      "invalid_request_error",
      `There was an issue with the request body: invalid JSON (${(e as Error).message})`,
    );
  }
}

/** A request body read: its JSON value, and where it holds values JavaScript cannot keep. */
export interface BodyWithUnkept {
  value: unknown;
  /**
   * The innermost objects and arrays under the top-level keys asked for that hold a value a
   * JavaScript reading would write differently, each with its exact text (`valuesJsonCannotKeep`);
   * empty for every body JavaScript wrote.
   */
  unkept: UnkeptValueText[];
}

/**
 * A request body as JSON ({@link parseJson}), with the values under a top-level key `inScope` accepts
 * that the provider renders otherwise than JavaScript writes them (the Messages route's `tools`,
 * `system` and `messages`; the OpenAI routes' `tools`, `messages`, `input`). The walk that finds them
 * (~1.3 ms at 190 kB, and a string of the whole body) runs only for a body that fails the test the
 * parse makes on the way (json-bytes.ts, `Fidelity`): never for one a JavaScript client sent.
 */
export function parseJsonWithUnkept(body: RequestBody, inScope: (topKey: string) => boolean): BodyWithUnkept {
  const bytes = parseBytes(body);
  const fidelity: Fidelity = { kept: true };
  const value = parseBodyBytes(bytes, fidelity);
  // `bytes` may be the shared parse buffer: read it again before anything else parses.
  return { value, unkept: fidelity.kept ? [] : valuesJsonCannotKeep(bytes.toString("utf8"), inScope) };
}

/** The `anthropic-beta` list of the request (the header may repeat and holds comma-separated names); logged with it. */
export function betasOf(ex: Exchange): string[] {
  const header = ex.req.headers["anthropic-beta"];
  const betas = (Array.isArray(header) ? header : header === undefined ? [] : [header])
    .flatMap((value) => value.split(","))
    .map((name) => name.trim())
    .filter((name) => name !== "");
  ex.entry.betas = betas;
  return betas;
}
