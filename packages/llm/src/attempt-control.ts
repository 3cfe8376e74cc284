// One model call's attempt: its own abort controller, tied to the caller's signal by one listener
// (removed at the end, whatever the SDK does with its own listeners), and the idle timeout that aborts
// through the same controller when no byte came for too long.

/** What an attempt holds while it runs. */
export interface AttemptControl {
  /** Aborts the attempt's HTTP request: the caller's abort, the idle timeout, or a failure. */
  readonly controller: AbortController;
  /** (Re)starts the idle timer: call before the request and on every stream event. */
  arm(): void;
  /** Whether the idle timer fired. */
  timedOut(): boolean;
  /** Stops the timer and removes the caller's listener. */
  close(): void;
}

/** Starts an attempt's control; `timeoutMs` is the longest silence allowed. @unit ms */
export function startAttempt(signal: AbortSignal | undefined, timeoutMs: number): AttemptControl {
  const controller = new AbortController();
  const abortAttempt = () => controller.abort();
  signal?.addEventListener("abort", abortAttempt, { once: true });
  if (signal?.aborted) controller.abort();
  let fired = false;
  let timer: NodeJS.Timeout | undefined;
  return {
    controller,
    arm() {
      clearTimeout(timer);
      timer = setTimeout(() => {
        fired = true;
        controller.abort();
      }, timeoutMs);
    },
    timedOut: () => fired,
    close() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", abortAttempt);
    },
  };
}
