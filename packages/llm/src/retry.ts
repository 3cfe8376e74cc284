// The retry policy of the Anthropic client: which failures are retried, how long to wait between
// attempts (full-jitter exponential backoff, or what the server asked for), and an abortable sleep.
import { LlmError } from "@forkd/core";

/** How a client retries failed calls. Every field is optional; see {@link compileRetryPolicy}. */
export interface RetryOptions {
  /**
   * Retries after the first attempt. `0` disables retrying.
   * @default 4
   */
  maxRetries?: number;
  /**
   * Backoff before the first retry; it doubles with each further retry, up to `maxDelayMs`.
   * @default 500
   * @unit ms
   */
  baseDelayMs?: number;
  /**
   * The longest the client waits before one retry. A `retry-after` longer than this is not waited
   * for: the call fails at once (still `retryable`) and the caller decides.
   * @default 30000
   * @unit ms
   */
  maxDelayMs?: number;
  /**
   * Source of randomness for the jitter, in [0, 1). Tests pass a seeded generator.
   * @default Math.random
   */
  random?: () => number;
}

/** {@link RetryOptions} with defaults applied and values checked. */
export interface RetryPolicy {
  readonly maxRetries: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly random: () => number;
}

/** Default number of retries. */
export const DEFAULT_MAX_RETRIES = 4;
/** Default base of the exponential backoff. @unit ms */
export const DEFAULT_BASE_DELAY_MS = 500;
/** Default cap of one backoff delay. @unit ms */
export const DEFAULT_MAX_DELAY_MS = 30_000;

/** Applies defaults and rejects nonsensical values (negative, non-finite, cap below base). */
export function compileRetryPolicy(options: RetryOptions = {}): RetryPolicy {
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  const baseDelayMs = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
  const maxDelayMs = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) {
    throw new RangeError(`retry.maxRetries must be a non-negative integer, got ${maxRetries}`);
  }
  if (!Number.isFinite(baseDelayMs) || baseDelayMs < 0) {
    throw new RangeError(`retry.baseDelayMs must be a non-negative number, got ${baseDelayMs}`);
  }
  if (!Number.isFinite(maxDelayMs) || maxDelayMs < baseDelayMs) {
    throw new RangeError(`retry.maxDelayMs must be a number ≥ baseDelayMs, got ${maxDelayMs}`);
  }
  return { maxRetries, baseDelayMs, maxDelayMs, random: options.random ?? Math.random };
}

/**
 * Full-jitter exponential backoff: a uniform delay in [0, min(maxDelayMs, baseDelayMs · 2^(retry−1))).
 * Full jitter spreads the retries of many daemons hit by the same overload, so they do not return
 * in step.
 * @param retry 1 for the first retry.
 * @returns the delay. @unit ms
 */
export function backoffDelay(retry: number, policy: RetryPolicy): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(policy.random() * ceiling);
}

/** The subset of `Headers` the parser reads. */
export interface HeaderLookup {
  get(name: string): string | null;
}

/**
 * How long the server asked the client to wait: `retry-after-ms` (milliseconds, Anthropic's
 * precise form) first, then `retry-after` (seconds, or an HTTP date).
 * @returns the delay, or `undefined` when no usable header is present. @unit ms
 */
export function parseRetryAfter(
  headers: HeaderLookup | undefined,
  now: number = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const milliseconds = parseNonNegativeNumber(headers.get("retry-after-ms"));
  if (milliseconds !== undefined) return milliseconds;
  const value = headers.get("retry-after")?.trim();
  if (!value) return undefined;
  const seconds = parseNonNegativeNumber(value);
  if (seconds !== undefined) return seconds * 1000;
  // An HTTP date names its weekday and month; Date.parse would also take "-3" as a year.
  const date = /[a-z]/i.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

function parseNonNegativeNumber(value: string | null): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  // Number("") is 0 and Number("1e3") is 1000: accept plain decimals only.
  if (!/^\d+(\.\d+)?$/.test(trimmed)) return undefined;
  return Number(trimmed);
}

/**
 * What to do after a failed attempt.
 * @returns the delay before the next attempt, or `undefined` when the call must fail now.
 * @param retry 1 for the first retry.
 */
export function retryDelay(
  error: LlmError,
  retry: number,
  retryAfterMs: number | undefined,
  policy: RetryPolicy,
): number | undefined {
  if (!error.retryable || error.code === "stream_interrupted" || retry > policy.maxRetries) return undefined;
  if (retryAfterMs === undefined) return backoffDelay(retry, policy);
  return retryAfterMs <= policy.maxDelayMs ? Math.ceil(retryAfterMs) : undefined;
}

/**
 * Waits `ms`, or rejects with an `aborted` {@link LlmError} as soon as `signal` aborts. The abort
 * listener is removed on both paths.
 */
export function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortedError());
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function abortedError(): LlmError {
  return new LlmError("aborted", "The call was aborted while waiting to retry.");
}
