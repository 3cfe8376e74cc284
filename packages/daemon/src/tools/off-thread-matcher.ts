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

/** One file's text and what to learn of it. */
export interface FileToMatch {
  operation: MatchOperation;
  text: string;
}

/**
 * One Grep call's hold on a regex worker. Close it when done: a worker that answered everything goes
 * back to the pool; one stopped by an abort or the time limit is terminated.
 */
export class OffThreadMatcher {
  readonly #spec: PatternSpec;
  readonly #worker: Worker;
  readonly #pending = new Map<
    number,
    { resolve: (results: MatchReply["results"]) => void; reject: (error: unknown) => void }
  >();
  #nextId = 0;
  #failure: unknown;
  readonly #stop: () => void;

  private constructor(
    spec: PatternSpec,
    worker: Worker,
    options: OffThreadMatcherOptions,
    release: () => void,
  ) {
    this.#spec = spec;
    this.#worker = worker;
    const onMessage = (reply: MatchReply) => {
      const waiting = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      waiting?.resolve(reply.results);
    };
    const onError = (error: unknown) => this.#fail(error);
    const onExit = (code: number) => this.#fail(new Error(`the regex worker exited (${code})`));
    worker.on("message", onMessage).on("error", onError).on("exit", onExit);
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
      worker.off("message", onMessage).off("error", onError).off("exit", onExit);
      // A worker may be in the middle of a match only when this call failed: that one is ended.
      if (this.#failure === undefined) idleWorkers.push(worker);
      else void worker.terminate();
      release();
    };
  }

  /** Waits for a free worker slot (or the abort), then takes an idle worker or starts one. */
  static async start(spec: PatternSpec, options: OffThreadMatcherOptions): Promise<OffThreadMatcher> {
    const release = await workerSlots.acquire(options.signal);
    try {
      return new OffThreadMatcher(spec, idleWorkers.pop() ?? startWorker(), options, release);
    } catch (error) {
      release();
      throw error;
    }
  }

  /**
   * Matches files' texts, one result per file in order (see `runMatch`); rejects on abort, at the
   * time limit, or if the worker dies. Several files to a message: one round trip per file made a
   * search of a thousand small files twice as slow.
   */
  match(files: readonly FileToMatch[]): Promise<MatchReply["results"]> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      const request: MatchRequest = { id, spec: this.#spec, files: [...files] };
      this.#worker.postMessage(request);
    });
  }

  /** Gives the worker back (or ends it, after a failure) and frees the slot. */
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

/** Workers no call holds, kept so that their JIT-compiled matcher serves the next call. */
const idleWorkers: Worker[] = [];

function startWorker(): Worker {
  const worker = new Worker(...workerEntry());
  // An idle worker must not keep the daemon's process alive.
  worker.unref();
  // One that dies while idle is simply not reused.
  worker.on("exit", () => {
    const at = idleWorkers.indexOf(worker);
    if (at !== -1) idleWorkers.splice(at, 1);
  });
  worker.on("error", () => {});
  return worker;
}

/**
 * The worker's script and options. Built, it is `regex-worker.js` beside this file. Run from source
 * (the tests), it is `regex-worker.ts`, which the worker loads after registering tsx's loader in
 * itself (a worker does not take `--import` from its `execArgv`).
 */
function workerEntry(): ConstructorParameters<typeof Worker> {
  if (!import.meta.url.endsWith(".ts")) return [new URL("./regex-worker.js", import.meta.url)];
  // tsx's ESM entry (`require.resolve` would give its CommonJS one).
  const tsxRoot = dirname(createRequire(import.meta.url).resolve("tsx/package.json"));
  const tsx = pathToFileURL(join(tsxRoot, "dist/esm/api/index.mjs")).href;
  const script = new URL("./regex-worker.ts", import.meta.url).href;
  const code = `import(${JSON.stringify(tsx)}).then((tsx) => tsx.register()).then(() => import(${JSON.stringify(script)}));`;
  return [code, { eval: true }];
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
