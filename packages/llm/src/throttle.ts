// Backoff shared by every caller of one provider account: when the provider says "slow down" (429,
// 529) to one call, the others of the same model hold their next request until the time it named,
// instead of each one finding out with a refused request of its own. The client consults a throttle
// before each attempt and reports to it after a refusal; a daemon's throttle also hears the other
// daemons' refusals over NATS (@forkd/daemon's shared-throttle).
import { abortableSleep } from "./retry.js";

/** What the client asks of a throttle. */
export interface ProviderThrottle {
  /** Resolves when a request for `model` may go (at once when nothing holds it). Rejects on abort. */
  clearance(model: string, signal?: AbortSignal): Promise<void>;
  /** The provider refused a request for `model` with "slow down": hold requests until `until`. */
  report(model: string, until: number): void;
}

/** The longest a throttle holds requests for one report, whatever it says. @unit ms */
export const MAX_THROTTLE_MS = 60_000;

/** A {@link ProviderThrottle} in memory: one hold per model, the latest `until` wins. */
export class LocalThrottle implements ProviderThrottle {
  readonly #until = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Until when requests for `model` are held, or undefined when they are not. @unit ms since epoch */
  heldUntil(model: string): number | undefined {
    const until = this.#until.get(model);
    if (until === undefined) return undefined;
    if (until <= this.#now()) {
      this.#until.delete(model);
      return undefined;
    }
    return until;
  }

  async clearance(model: string, signal?: AbortSignal): Promise<void> {
    // A later report may extend the hold while this caller waits: check again after each wait.
    for (let until = this.heldUntil(model); until !== undefined; until = this.heldUntil(model)) {
      await abortableSleep(until - this.#now(), signal);
    }
  }

  report(model: string, until: number): void {
    const capped = Math.min(until, this.#now() + MAX_THROTTLE_MS);
    if (capped > (this.#until.get(model) ?? 0)) this.#until.set(model, capped);
  }
}
