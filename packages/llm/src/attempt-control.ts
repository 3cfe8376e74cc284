// One model call's attempt: its own abort controller, tied to the caller's signal by one listener
// (removed at the end, whatever the SDK does with its own listeners), and the idle timeout that aborts
// through the same controller when no byte came for too long.
import type { LlmCallOptions, LlmError, LlmStreamEvent, Logger } from "@forkd/core";
import { abortableSleep, type RetryPolicy, retryDelay } from "./retry.js";

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

/**
 * The caller's `onEvent` as a function that never throws: an observer's failure is logged and the
 * event dropped, never turned into the model call's failure.
 */
export function observerEmitter(
  onEvent: LlmCallOptions["onEvent"],
  logger: Logger,
): (event: LlmStreamEvent) => void {
  return (event) => {
    try {
      onEvent?.(event);
    } catch (error) {
      logger.error({ type: event.type, err: error }, "llm onEvent observer threw; event dropped");
    }
  };
}

/**
 * After a failed attempt: throws `error` when the policy gives up on it, else logs the retry, reports
 * it (`retry` event) and waits its delay (the caller's signal cuts the wait short).
 */
export async function retryOrThrow(
  error: LlmError,
  attempt: number,
  retryAfterMs: number | undefined,
  context: {
    policy: RetryPolicy;
    model: string;
    logger: Logger;
    emit: (event: LlmStreamEvent) => void;
    signal: AbortSignal | undefined;
  },
): Promise<void> {
  const delayMs = retryDelay(error, attempt, retryAfterMs, context.policy);
  if (delayMs === undefined) throw error;
  context.logger.warn(
    { model: context.model, attempt, code: error.code, delayMs, err: error },
    "llm attempt failed; retrying",
  );
  context.emit({ type: "retry", attempt, delayMs, error: error.code, status: error.status });
  await abortableSleep(delayMs, context.signal);
}
