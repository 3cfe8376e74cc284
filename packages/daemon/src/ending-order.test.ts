import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BOOKKEEPING_QUIET_MS, BOOKKEEPING_WAIT_MS, EndingOrder } from "./ending-order.js";

/** Resolves when `promise` settles; reports whether it had by the time the fake clock reached now. */
function tracked(promise: Promise<void>): { done: () => boolean } {
  let settled = false;
  void promise.then(() => {
    settled = true;
  });
  return { done: () => settled };
}

describe("EndingOrder", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const order = () => new EndingOrder({ now: () => Date.now() });

  it("lets bookkeeping go at once when no ending was ever in flight", async () => {
    const quiet = tracked(order().quiet());
    await vi.advanceTimersByTimeAsync(0);
    expect(quiet.done()).toBe(true);
  });

  it("holds bookkeeping while an ending is in flight, then for exactly the quiet period after it", async () => {
    const endings = order();
    let publish!: () => void;
    const ending = endings.ending(() => new Promise<void>((resolve) => (publish = resolve)));
    expect(endings.inFlight).toBe(1);
    const quiet = tracked(endings.quiet());
    await vi.advanceTimersByTimeAsync(40);
    expect(quiet.done()).toBe(false);
    publish();
    await ending;
    expect(endings.inFlight).toBe(0);
    await vi.advanceTimersByTimeAsync(BOOKKEEPING_QUIET_MS - 1);
    expect(quiet.done()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(quiet.done()).toBe(true);
  });

  it("counts an ending that failed as over", async () => {
    const endings = order();
    await expect(endings.ending(() => Promise.reject(new Error("fenced")))).rejects.toThrow("fenced");
    expect(endings.inFlight).toBe(0);
  });

  it("never holds bookkeeping longer than its bound, however many endings keep coming", async () => {
    const endings = order();
    const never = endings.ending(() => new Promise<void>(() => undefined));
    const quiet = tracked(endings.quiet());
    await vi.advanceTimersByTimeAsync(BOOKKEEPING_WAIT_MS - 1);
    expect(quiet.done()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(quiet.done()).toBe(true);
    void never;
  });

  it("ends the wait at the bound itself, not at the next quiet period's end", async () => {
    const endings = new EndingOrder({ now: () => Date.now(), quietMs: 60, maxWaitMs: 250 });
    void endings.ending(() => new Promise<void>(() => undefined));
    const quiet = tracked(endings.quiet());
    await vi.advanceTimersByTimeAsync(249);
    expect(quiet.done()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(quiet.done()).toBe(true);
  });

  it("does not hold the bookkeeping of a run that ended alone", async () => {
    const endings = order();
    await endings.ending(async () => undefined);
    const quiet = tracked(endings.quiet());
    await vi.advanceTimersByTimeAsync(0);
    expect(quiet.done()).toBe(true);
  });

  it("holds it when another ending finished within the quiet period, until the period after the last", async () => {
    const endings = order();
    await endings.ending(async () => undefined);
    await vi.advanceTimersByTimeAsync(BOOKKEEPING_QUIET_MS);
    await endings.ending(async () => undefined); // exactly one quiet period later: still a burst
    const quiet = tracked(endings.quiet());
    await vi.advanceTimersByTimeAsync(BOOKKEEPING_QUIET_MS - 1);
    expect(quiet.done()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(quiet.done()).toBe(true);
  });

  it("forgets endings older than the quiet period: a run ending after them ends alone", async () => {
    const endings = order();
    await endings.ending(async () => undefined);
    await vi.advanceTimersByTimeAsync(BOOKKEEPING_QUIET_MS + 1);
    await endings.ending(async () => undefined);
    const quiet = tracked(endings.quiet());
    await vi.advanceTimersByTimeAsync(0);
    expect(quiet.done()).toBe(true);
  });
});
