// A bounded buffer of a server's log lines that can be awaited on: readiness and log-driven waits
// are events, not polls.
import { WaitForTimeoutError } from "./errors.js";

/** Options of {@link ServerLog.waitFor} and `NatsServerHandle.waitForLog`. */
export interface WaitForLogOptions {
  /**
   * How long to wait before failing with {@link WaitForTimeoutError}.
   * @default 10_000
   * @unit milliseconds
   */
  timeoutMs?: number;
  /** Aborts the wait; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Also match lines logged before the call (those still in the buffer).
   * @default false
   */
  includePast?: boolean;
}

/** A server's log: the last `maxLines` lines, and listeners for new ones. @internal */
export class ServerLog {
  readonly #lines: string[] = [];
  readonly #listeners = new Set<(line: string) => void>();
  readonly #maxLines: number;

  constructor(maxLines = 2000) {
    this.#maxLines = maxLines;
  }

  push(line: string): void {
    this.#lines.push(line);
    if (this.#lines.length > this.#maxLines) this.#lines.splice(0, this.#lines.length - this.#maxLines);
    for (const listener of [...this.#listeners]) listener(line);
  }

  /** The buffered log, or its last `lines` lines. */
  text(lines?: number): string {
    return (lines === undefined ? this.#lines : this.#lines.slice(-lines)).join("\n");
  }

  /** Calls `listener` for every new line until the returned function is called. */
  subscribe(listener: (line: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves with the first line that matches `pattern`. */
  waitFor(pattern: string | RegExp, options: WaitForLogOptions = {}): Promise<string> {
    const { timeoutMs = 10_000, signal, includePast = false } = options;
    const matches = (line: string) =>
      typeof pattern === "string" ? line.includes(pattern) : pattern.test(line);
    if (includePast) {
      const past = this.#lines.find(matches);
      if (past !== undefined) return Promise.resolve(past);
    }
    return new Promise((resolve, reject) => {
      const done = () => {
        unsubscribe();
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const onAbort = () => {
        done();
        reject(signal?.reason);
      };
      const unsubscribe = this.subscribe((line) => {
        if (!matches(line)) return;
        done();
        resolve(line);
      });
      const timer = setTimeout(() => {
        done();
        reject(
          new WaitForTimeoutError(`no log line matched ${String(pattern)} within ${timeoutMs} ms`, {
            timeoutMs,
            attempts: 1,
          }),
        );
      }, timeoutMs);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}
