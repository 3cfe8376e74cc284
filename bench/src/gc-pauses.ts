// The garbage collector's pauses in this process, on the benchmarks' clock: which measured windows a
// pause fell into. #2 runs the parent and the daemon in one process, and a scavenge there (4-8 ms on
// the 2-core machine, one every ~190 ms of sequential 4k forks) is as long as the p99 targets.
import { type PerformanceEntry, PerformanceObserver, performance } from "node:perf_hooks";

/** One pause, in {@link now}'s clock. @unit ms since epoch */
export interface GcPause {
  start: number;
  end: number;
}

/** Records this process's GC pauses from `start()` until `stop()`. */
export class GcPauses {
  readonly #pauses: GcPause[] = [];
  readonly #observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) this.#record(entry);
  });

  start(): void {
    this.#observer.observe({ entryTypes: ["gc"] });
  }

  /** Stops recording; entries still buffered by the observer are taken first. */
  stop(): void {
    for (const entry of this.#observer.takeRecords()) this.#record(entry);
    this.#observer.disconnect();
  }

  /**
   * The pause time that fell inside `[from, to]` (clock of {@link now}). Read after {@link stop} or
   * after the event loop has turned: the observer delivers its entries asynchronously.
   * @unit ms
   */
  pausedWithin(from: number, to: number): number {
    let paused = 0;
    for (const pause of this.#pauses) {
      const overlap = Math.min(to, pause.end) - Math.max(from, pause.start);
      if (overlap > 0) paused += overlap;
    }
    return paused;
  }

  #record(entry: PerformanceEntry): void {
    const start = performance.timeOrigin + entry.startTime;
    this.#pauses.push({ start, end: start + entry.duration });
  }
}
