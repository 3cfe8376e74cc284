// Waiting that an AbortSignal can cut short, with the listener removed whatever happens.

/**
 * Settles like `promise`, or rejects with `signal.reason` as soon as `signal` aborts, whichever comes
 * first. A promise that loses the race is left to settle on its own; its rejection is swallowed so it
 * cannot surface as an unhandled rejection. The abort listener is removed in every case.
 */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      promise.catch(() => {});
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/** A readable text for an abort reason: an Error's message, a string as is, anything else JSON. */
export function describeAbortReason(reason: unknown, fallback = "aborted"): string {
  if (reason instanceof Error) return reason.message || fallback;
  if (typeof reason === "string") return reason || fallback;
  if (reason === undefined || reason === null) return fallback;
  try {
    return JSON.stringify(reason) ?? fallback;
  } catch {
    return fallback;
  }
}
