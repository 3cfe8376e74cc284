// Time, injected: tests drive durations and timestamps without sleeping.

/** A source of wall-clock time. */
export interface Clock {
  /** Milliseconds since the Unix epoch. @unit ms */
  now(): number;
}

/** The real clock (`Date.now`). */
export const systemClock: Clock = { now: () => Date.now() };
