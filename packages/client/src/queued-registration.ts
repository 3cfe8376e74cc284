// The parent's "queued" registry entry for a run whose spec it stored, written a moment late. A daemon
// with a free slot claims a spec within a millisecond or two of its storing, and its claim registers
// the run (a create, one round trip). Written at once, the parent's entry got there first in most
// dispatches (bench #2: 57 % at 48k, 79 % at 4k), and the daemon's create was refused: it then read
// the entry and claimed it with a compare-and-set, a second round trip before the run's first model
// call. Left a moment, the parent's write is refused instead (the run is claimed: nothing to do), or
// registers a run that waits in the queue. Inside this process nothing waits for the moment: reading
// a run's state, controlling it or closing writes its entry first.
//
// A refused write is not free: JetStream refuses it, and the client makes an error of the refusal
// (bench #2: 1–1.8 ms of CPU per fork between this process and nats-server). So a parent that has
// heard one of the run's events — which a daemon publishes only once its claim, the run's
// registration, is stored — makes no write at all ({@link DeferredRegistrations.skip}).

/** How long a stored spec's run is left to a daemon's claim before its parent registers it as queued. @unit ms */
export const QUEUED_REGISTRATION_DELAY_MS = 20;

interface Pending {
  timer: NodeJS.Timeout | undefined;
  written: Promise<void> | undefined;
  write: () => Promise<void>;
}

/** Registrations waiting for their moment, by run id; each is written once. */
export class DeferredRegistrations {
  readonly #pending = new Map<string, Pending>();
  readonly #delayMs: number;

  /** @param delayMs how long a registration waits unless flushed. @unit ms */
  constructor(delayMs = QUEUED_REGISTRATION_DELAY_MS) {
    this.#delayMs = delayMs;
  }

  /** Writes `write` after the delay, or sooner when {@link flush}ed. It must not reject. */
  schedule(runId: string, write: () => Promise<void>): void {
    const pending: Pending = { timer: undefined, written: undefined, write };
    pending.timer = setTimeout(() => void this.flush(runId), this.#delayMs);
    pending.timer.unref();
    this.#pending.set(runId, pending);
  }

  /** Writes the run's registration now if it still waits; resolves once it is written (at once when none is pending). */
  flush(runId: string): Promise<void> {
    const pending = this.#pending.get(runId);
    if (pending === undefined) return Promise.resolve();
    if (pending.written === undefined) {
      clearTimeout(pending.timer);
      pending.written = pending.write().finally(() => this.#pending.delete(runId));
    }
    return pending.written;
  }

  /**
   * Drops the run's waiting registration: its claim registered it. One already being written is left
   * to finish (a flush still waits for it).
   */
  skip(runId: string): void {
    const pending = this.#pending.get(runId);
    if (pending === undefined || pending.written !== undefined) return;
    // The timer is unref'd and its flush would find nothing; cleared so that no dead timer waits.
    clearTimeout(pending.timer);
    this.#pending.delete(runId);
  }

  /** Writes every waiting registration now; resolves once all are written. */
  async flushAll(): Promise<void> {
    await Promise.all([...this.#pending.keys()].map((runId) => this.flush(runId)));
  }

  /** Registrations not yet written. */
  get size(): number {
    return this.#pending.size;
  }
}
