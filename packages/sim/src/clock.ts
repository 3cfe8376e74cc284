/** Time sources: the injectable cache clock and the high-resolution wall clock used in the log. */

/** The clock the prompt cache reads for TTLs. Inject one to test expiry without waiting. */
export interface Clock {
  /** @unit milliseconds since the Unix epoch */
  now(): number;
}

/** The real clock (`Date.now()`). */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that moves only when told to. */
export class ManualClock implements Clock {
  #now: number;
  /** @param start start time, @unit ms since epoch, @default 0 */
  constructor(start = 0) {
    this.#now = start;
  }
  now(): number {
    return this.#now;
  }
  /** Moves the clock forward. @param ms @unit milliseconds */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`cannot advance a clock by ${ms} ms`);
    this.#now += ms;
  }
  /** Sets the clock. @param ms @unit ms since epoch */
  set(ms: number): void {
    this.#now = ms;
  }
}

/** Wall-clock time with sub-millisecond resolution: `performance.timeOrigin + performance.now()`. @unit ms since epoch */
export function hiResNow(): number {
  return performance.timeOrigin + performance.now();
}
