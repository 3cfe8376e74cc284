// Runs one Grep call's matching on a worker thread. RE2 takes time linear in the text but also in
// the pattern's size: `[^!]{300}[xyz][0-9]…` costs about 8 s per MiB of text, and a model's Grep over
// a 10 MiB file held the daemon's event loop for more than a minute. Every run of the daemon stalled,
// its presence beats stopped, so the cluster handed all its runs to other daemons — where the
// interrupted Grep, safe to repeat, ran again. On a worker the event loop stays free, an abort
// terminates the thread at once, and a call that matches for longer than its limit is stopped.
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { MatchOperation, PatternSpec } from "./line-match.js";
import type { MatchReply, MatchRequest } from "./regex-worker.js";

/** The longest one Grep call may spend matching before it is stopped. @unit ms */
export const GREP_MATCH_TIME_LIMIT_MS = 30_000;

/** How many Grep calls of this process match at once; the others wait for a free worker. */
export const MAX_REGEX_WORKERS = Math.max(2, availableParallelism());

/** Thrown when a call's matching outlasts its time limit. */
export class MatchTimeLimitError extends Error {
  override readonly name = "MatchTimeLimitError";
  constructor(readonly limitMs: number) {
    super(`matching took longer than ${limitMs / 1000} s`);
  }
}

/** Options of {@link OffThreadMatcher.start}. */
export interface OffThreadMatcherOptions {
  /** Aborts waiting for a worker and any match in progress. */
  signal: AbortSignal;
  /** @default GREP_MATCH_TIME_LIMIT_MS @unit ms */
  timeLimitMs?: number;
}

/** A worker compiled with one pattern, for the files of one Grep call. Close it when done. */
export class OffThreadMatcher {
  readonly #worker: Worker;
  readonly #pending = new Map<
    number,
    { resolve: (result: number | Uint32Array) => void; reject: (error: unknown) => void }
  >();
  #nextId = 0;
  #failure: unknown;
  readonly #stop: () => void;

  private constructor(spec: PatternSpec, options: OffThreadMatcherOptions, release: () => void) {
    this.#worker = new Worker(...workerEntry(spec));
    this.#worker.unref();
    this.#worker.on("message", (reply: MatchReply) => {
      const waiting = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      waiting?.resolve(reply.result);
    });
    this.#worker.on("error", (error) => this.#fail(error));
    this.#worker.on("exit", (code) =>
      this.#fail(this.#failure ?? new Error(`the regex worker exited (${code})`)),
    );
    const limitMs = options.timeLimitMs ?? GREP_MATCH_TIME_LIMIT_MS;
    const timer = setTimeout(() => this.#fail(new MatchTimeLimitError(limitMs)), limitMs);
    const onAbort = () => this.#fail(options.signal.reason);
    options.signal.addEventListener("abort", onAbort, { once: true });
    let stopped = false;
    this.#stop = () => {
      if (stopped) return;
      stopped = true;
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      void this.#worker.terminate();
      release();
    };
  }

  /** Waits for a free worker slot (or the abort), then starts a worker compiled with `spec`. */
  static async start(spec: PatternSpec, options: OffThreadMatcherOptions): Promise<OffThreadMatcher> {
    const release = await workerSlots.acquire(options.signal);
    try {
      return new OffThreadMatcher(spec, options, release);
    } catch (error) {
      release();
      throw error;
    }
  }

  /** Matches one file's text; rejects on abort, at the time limit, or if the worker dies. */
  match(operation: MatchOperation, text: string): Promise<number | Uint32Array> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      const request: MatchRequest = { id, operation, text };
      this.#worker.postMessage(request);
    });
  }

  /** Stops the worker and frees its slot. */
  close(): void {
    this.#stop();
  }

  #fail(error: unknown): void {
    this.#failure ??= error;
    for (const waiting of this.#pending.values()) waiting.reject(this.#failure);
    this.#pending.clear();
    this.#stop();
  }
}

/**
 * The worker's script and options. Built, it is `regex-worker.js` beside this file. Run from source
 * (the tests), it is `regex-worker.ts`, which the worker loads after registering tsx's loader in
 * itself (a worker does not take `--import` from its `execArgv`).
 */
function workerEntry(spec: PatternSpec): ConstructorParameters<typeof Worker> {
  if (!import.meta.url.endsWith(".ts")) {
    return [new URL("./regex-worker.js", import.meta.url), { workerData: spec }];
  }
  // tsx's ESM entry (`require.resolve` would give its CommonJS one).
  const tsxRoot = dirname(createRequire(import.meta.url).resolve("tsx/package.json"));
  const tsx = pathToFileURL(join(tsxRoot, "dist/esm/api/index.mjs")).href;
  const script = new URL("./regex-worker.ts", import.meta.url).href;
  const code = `import(${JSON.stringify(tsx)}).then((tsx) => tsx.register()).then(() => import(${JSON.stringify(script)}));`;
  return [code, { eval: true, workerData: spec }];
}

/** A counting semaphore whose waits can be aborted. */
class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(size: number) {
    this.#free = size;
  }

  acquire(signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve, reject) => {
      const granted = () => {
        signal.removeEventListener("abort", onAbort);
        resolve(this.#releaser());
      };
      const onAbort = () => {
        this.#waiting.splice(this.#waiting.indexOf(granted), 1);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(granted);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next === undefined) this.#free++;
      else next();
    };
  }
}

const workerSlots = new Slots(MAX_REGEX_WORKERS);
