import { getEventListeners } from "node:events";
import { LlmError } from "@forkd/core";
import { mulberry32 } from "@forkd/sim";
import { describe, expect, it } from "vitest";
import {
  abortableSleep,
  backoffDelay,
  compileRetryPolicy,
  DEFAULT_BASE_DELAY_MS,
  DEFAULT_MAX_DELAY_MS,
  DEFAULT_MAX_RETRIES,
  parseRetryAfter,
  retryDelay,
} from "./retry.js";

// The simulator's seeded generator, so the jitter is the same on every run.
const seeded = mulberry32;

const headers = (entries: Record<string, string>) => new Headers(entries);

describe("parseRetryAfter", () => {
  it("reads retry-after-ms first, as milliseconds", () => {
    expect(parseRetryAfter(headers({ "retry-after-ms": "1500", "retry-after": "9" }))).toBe(1500);
    expect(parseRetryAfter(headers({ "retry-after-ms": "12.5" }))).toBe(12.5);
  });

  it("reads retry-after as seconds", () => {
    expect(parseRetryAfter(headers({ "retry-after": "1" }))).toBe(1000);
    expect(parseRetryAfter(headers({ "retry-after": " 0.25 " }))).toBe(250);
    expect(parseRetryAfter(headers({ "retry-after": "0" }))).toBe(0);
  });

  it("reads retry-after as an HTTP date, relative to now", () => {
    const now = Date.parse("Tue, 01 Dec 2026 10:00:00 GMT");
    expect(parseRetryAfter(headers({ "retry-after": "Tue, 01 Dec 2026 10:00:07 GMT" }), now)).toBe(7000);
    expect(parseRetryAfter(headers({ "retry-after": "Tue, 01 Dec 2026 09:59:00 GMT" }), now)).toBe(0);
  });

  it("falls back from an unusable retry-after-ms to retry-after", () => {
    expect(parseRetryAfter(headers({ "retry-after-ms": "soon", "retry-after": "2" }))).toBe(2000);
  });

  it("ignores missing, empty, negative and non-decimal values", () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter(headers({}))).toBeUndefined();
    expect(parseRetryAfter(headers({ "retry-after": "" }))).toBeUndefined();
    expect(parseRetryAfter(headers({ "retry-after": "-3" }))).toBeUndefined();
    expect(parseRetryAfter(headers({ "retry-after": "1e3" }))).toBeUndefined();
    expect(parseRetryAfter(headers({ "retry-after-ms": "-1" }))).toBeUndefined();
    expect(parseRetryAfter(headers({ "retry-after": "later" }))).toBeUndefined();
  });
});

describe("compileRetryPolicy", () => {
  it("applies the documented defaults", () => {
    const policy = compileRetryPolicy();
    expect(policy).toMatchObject({ maxRetries: 4, baseDelayMs: 500, maxDelayMs: 30_000 });
    expect([DEFAULT_MAX_RETRIES, DEFAULT_BASE_DELAY_MS, DEFAULT_MAX_DELAY_MS]).toEqual([4, 500, 30_000]);
  });

  it("rejects values that make no sense", () => {
    expect(() => compileRetryPolicy({ maxRetries: -1 })).toThrow(RangeError);
    expect(() => compileRetryPolicy({ maxRetries: 1.5 })).toThrow(RangeError);
    expect(() => compileRetryPolicy({ baseDelayMs: Number.NaN })).toThrow(RangeError);
    expect(() => compileRetryPolicy({ baseDelayMs: 100, maxDelayMs: 50 })).toThrow(RangeError);
  });
});

describe("backoffDelay", () => {
  it("stays within [0, min(cap, base·2^(n−1))) for every retry, with full jitter", () => {
    const policy = compileRetryPolicy({ random: seeded(42) });
    for (let retry = 1; retry <= 12; retry++) {
      const ceiling = Math.min(30_000, 500 * 2 ** (retry - 1));
      const delays = Array.from({ length: 200 }, () => backoffDelay(retry, policy));
      for (const delay of delays) {
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThan(ceiling);
      }
      // Full jitter: the delays spread over the whole window, not just its top quarter.
      expect(Math.min(...delays)).toBeLessThan(ceiling * 0.1);
      expect(Math.max(...delays)).toBeGreaterThan(ceiling * 0.9);
    }
  });

  it("is reproducible with a seeded generator", () => {
    const run = () => {
      const policy = compileRetryPolicy({ random: seeded(7) });
      return [1, 2, 3, 4].map((retry) => backoffDelay(retry, policy));
    };
    expect(run()).toEqual(run());
  });

  it("hits the edges of the window at the edges of the generator", () => {
    const low = compileRetryPolicy({ random: () => 0 });
    const high = compileRetryPolicy({ random: () => 0.999999 });
    expect(backoffDelay(3, low)).toBe(0);
    expect(backoffDelay(3, high)).toBe(1999);
    expect(backoffDelay(40, high)).toBe(29_999);
  });
});

describe("retryDelay", () => {
  const policy = compileRetryPolicy({ maxRetries: 2, baseDelayMs: 100, maxDelayMs: 1000, random: () => 0.5 });
  const overloaded = new LlmError("overloaded", "529", { retryable: true, status: 529 });

  it("backs off for a retryable error within maxRetries", () => {
    expect(retryDelay(overloaded, 1, undefined, policy)).toBe(50);
    expect(retryDelay(overloaded, 2, undefined, policy)).toBe(100);
  });

  it("gives up after maxRetries", () => {
    expect(retryDelay(overloaded, 3, undefined, policy)).toBeUndefined();
  });

  it("waits exactly what retry-after asks, without jitter", () => {
    expect(retryDelay(overloaded, 1, 750, policy)).toBe(750);
    expect(retryDelay(overloaded, 1, 0, policy)).toBe(0);
  });

  it("does not wait for a retry-after beyond maxDelayMs: the call fails and the caller decides", () => {
    expect(retryDelay(overloaded, 1, 5000, policy)).toBeUndefined();
  });

  it("never retries a non-retryable error or an interrupted stream", () => {
    expect(
      retryDelay(new LlmError("invalid_request", "400", { status: 400 }), 1, undefined, policy),
    ).toBeUndefined();
    const interrupted = new LlmError("stream_interrupted", "cut", { retryable: true });
    expect(retryDelay(interrupted, 1, undefined, policy)).toBeUndefined();
  });
});

describe("abortableSleep", () => {
  it("resolves after the delay and leaves no listener", async () => {
    const controller = new AbortController();
    await abortableSleep(5, controller.signal);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("rejects with an aborted LlmError as soon as the signal aborts, and leaves no listener", async () => {
    const controller = new AbortController();
    const sleeping = abortableSleep(60_000, controller.signal);
    controller.abort();
    await expect(sleeping).rejects.toMatchObject({ name: "LlmError", code: "aborted", retryable: false });
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("rejects at once for a signal that is already aborted", async () => {
    await expect(abortableSleep(60_000, AbortSignal.abort())).rejects.toMatchObject({ code: "aborted" });
  });
});
