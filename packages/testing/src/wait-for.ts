// Polling, for the few conditions that have no event to wait on (an HTTP health endpoint, a remote
// server's state). Anything that emits an event should be awaited on that event instead.
import { setTimeout as delay } from "node:timers/promises";
import { WaitForTimeoutError } from "@forkd/local-nats";

/** Options of {@link waitFor}. */
export interface WaitForOptions {
  /**
   * How long to keep trying before failing with {@link WaitForTimeoutError}.
   * @default 10_000
   * @unit milliseconds
   */
  timeoutMs?: number;
  /**
   * Pause between two evaluations of the condition.
   * @default 25
   * @unit milliseconds
   */
  intervalMs?: number;
  /** Aborts the wait; the promise rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /**
   * What is being waited for, used in the timeout error's message.
   * @default "condition"
   */
  message?: string;
}

/**
 * Polls `condition` until it returns a truthy value, and resolves with that value.
 *
 * For conditions with no event source only (a health endpoint, a remote server's state): when an
 * event says the thing happened, wait on the event. A condition that throws counts as "not yet";
 * its last error becomes the `cause` of the {@link WaitForTimeoutError} raised at the deadline.
 * The condition is evaluated at least once, even with a zero timeout.
 *
 * @param condition - called repeatedly, one call at a time; may be async.
 * @param options - deadline, interval, abort signal and a description for the error.
 * @returns the first truthy value `condition` produced.
 * @throws {@link WaitForTimeoutError} when the deadline passes; the signal's reason when aborted.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  options: WaitForOptions = {},
): Promise<NonNullable<T>> {
  const { timeoutMs = 10_000, intervalMs = 25, signal, message = "condition" } = options;
  const deadline = Date.now() + timeoutMs;
  let attempts = 0;
  let lastError: unknown;
  for (;;) {
    signal?.throwIfAborted();
    attempts += 1;
    try {
      const value = await condition();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      lastError = error;
    }
    const left = deadline - Date.now();
    if (left <= 0) {
      throw new WaitForTimeoutError(
        `timed out after ${timeoutMs} ms (${attempts} attempts) waiting for ${message}`,
        lastError === undefined ? { timeoutMs, attempts } : { timeoutMs, attempts, cause: lastError },
      );
    }
    try {
      await delay(Math.min(intervalMs, left), undefined, { signal });
    } catch (error) {
      signal?.throwIfAborted(); // the caller's reason, not the timer's AbortError
      throw error;
    }
  }
}
