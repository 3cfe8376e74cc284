// Endings first, bookkeeping after. When many runs end at once on a daemon — a cascade abort ends
// every run of a parent — each ending is a terminal event (what the parent and the observers wait
// for) and then bookkeeping: the registry record, the spec's ack or removal. Issued in that order per
// run, the bookkeeping of the first runs to end queued in front of the terminal events of the others,
// on the daemon's connection, on the server and for the CPU. Measured (bench #14, 40-run cascades on
// four daemons on two cores): the slowest run of a round took 90–140 ms with the bookkeeping right
// after each event, 40–100 ms with the bookkeeping deferred until the daemon's endings were out.
//
// A run that ends alone (no other ending on its daemon in the quiet period) is not held: its registry
// record follows its event at once, as readers of `state()` right after a result expect.
//
// Deferring is safe: a daemon that dies between a run's terminal event and its record leaves a spec
// whose next delivery finds the ended log and records it (run-executor.ts, `#claim`), as it already did
// for a crash at that point.

/** The longest a run's bookkeeping waits for other endings on the daemon. @unit ms */
export const BOOKKEEPING_WAIT_MS = 250;
/**
 * How long no terminal event must have been in flight on the daemon before bookkeeping starts: endings
 * come in bursts (a cascade's reach every daemon within a few tens of milliseconds), and another
 * daemon's endings share the server (and, on one host, the CPU) with this one's bookkeeping. @unit ms
 */
export const BOOKKEEPING_QUIET_MS = 50;

/** Counts a daemon's terminal events in flight; bookkeeping waits until none has been for a while. */
export class EndingOrder {
  #inFlight = 0;
  #lastEndedAt = Number.NEGATIVE_INFINITY;
  /** When the endings of the last quiet period finished, oldest first. */
  #recent: number[] = [];
  readonly #now: () => number;
  readonly #quietMs: number;
  readonly #maxWaitMs: number;

  constructor(
    options: {
      now?: () => number;
      /** @unit ms @default BOOKKEEPING_QUIET_MS */
      quietMs?: number;
      /** @unit ms @default BOOKKEEPING_WAIT_MS */
      maxWaitMs?: number;
    } = {},
  ) {
    this.#now = options.now ?? performance.now.bind(performance);
    this.#quietMs = options.quietMs ?? BOOKKEEPING_QUIET_MS;
    this.#maxWaitMs = options.maxWaitMs ?? BOOKKEEPING_WAIT_MS;
  }

  /** Runs `publish` (a terminal event's publish) as an ending in flight. */
  async ending<T>(publish: () => Promise<T>): Promise<T> {
    this.#inFlight++;
    try {
      return await publish();
    } finally {
      this.#inFlight--;
      this.#lastEndedAt = this.#now();
      this.#recent = this.#recentSince(this.#lastEndedAt);
      this.#recent.push(this.#lastEndedAt);
    }
  }

  /**
   * Resolves once no terminal event has been in flight on this daemon for the quiet period, or after
   * the longest wait, whichever comes first; at once when the caller's ending (finished just before)
   * was the only one in the last quiet period and none is in flight.
   */
  async quiet(): Promise<void> {
    const start = this.#now();
    this.#recent = this.#recentSince(start);
    // Alone: the caller's own ending is the only one in the quiet period, and none is in flight.
    if (this.#inFlight === 0 && this.#recent.length <= 1) return;
    const deadline = start + this.#maxWaitMs;
    for (;;) {
      const now = this.#now();
      const wait = this.#inFlight > 0 ? this.#quietMs : this.#lastEndedAt + this.#quietMs - now;
      if (wait <= 0 || now >= deadline) return;
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, deadline - now)));
    }
  }

  /** Terminal events in flight now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  // The endings that finished within the quiet period before `now`.
  #recentSince(now: number): number[] {
    return this.#recent.filter((at) => at >= now - this.#quietMs);
  }
}
