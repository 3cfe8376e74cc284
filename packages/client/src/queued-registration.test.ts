// DeferredRegistrations on its own: a registration is written once — after its delay, or sooner when
// flushed — and a flush while it is being written waits for that write.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DeferredRegistrations, QUEUED_REGISTRATION_DELAY_MS } from "./queued-registration.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

/** A write that counts its calls and resolves when told. */
function countedWrite() {
  let calls = 0;
  let finish: () => void = () => undefined;
  const write = () => {
    calls += 1;
    return new Promise<void>((resolve) => {
      finish = resolve;
    });
  };
  return { write, calls: () => calls, finish: () => finish() };
}

describe("DeferredRegistrations", () => {
  it("writes after exactly its delay, once", async () => {
    const registrations = new DeferredRegistrations(50);
    const { write, calls, finish } = countedWrite();
    registrations.schedule("run-1", write);
    await vi.advanceTimersByTimeAsync(49);
    expect(calls()).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls()).toBe(1);
    finish();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(calls()).toBe(1);
    expect(registrations.size).toBe(0);
  });

  it("writes at once when flushed, and not again when its delay passes", async () => {
    const registrations = new DeferredRegistrations(50);
    const { write, calls, finish } = countedWrite();
    registrations.schedule("run-1", write);
    const flushed = registrations.flush("run-1");
    expect(calls()).toBe(1);
    let done = false;
    void flushed.then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(false); // the flush waits for the write
    finish();
    await flushed;
    await vi.advanceTimersByTimeAsync(100);
    expect(calls()).toBe(1);
  });

  it("a flush during the write waits for that write; a flush of a run with none resolves at once", async () => {
    const registrations = new DeferredRegistrations(10);
    const { write, calls, finish } = countedWrite();
    registrations.schedule("run-1", write);
    await vi.advanceTimersByTimeAsync(10);
    expect(calls()).toBe(1);
    const during = registrations.flush("run-1");
    expect(calls()).toBe(1);
    finish();
    await during;
    await expect(registrations.flush("run-unknown")).resolves.toBeUndefined();
  });

  it("flushAll writes every waiting registration", async () => {
    const registrations = new DeferredRegistrations(60_000);
    const first = countedWrite();
    const second = countedWrite();
    registrations.schedule("run-1", first.write);
    registrations.schedule("run-2", second.write);
    const all = registrations.flushAll();
    expect([first.calls(), second.calls()]).toEqual([1, 1]);
    first.finish();
    second.finish();
    await all;
    expect(registrations.size).toBe(0);
  });

  it("defaults to a delay of QUEUED_REGISTRATION_DELAY_MS", async () => {
    const registrations = new DeferredRegistrations();
    const { write, calls } = countedWrite();
    registrations.schedule("run-1", write);
    await vi.advanceTimersByTimeAsync(QUEUED_REGISTRATION_DELAY_MS - 1);
    expect(calls()).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls()).toBe(1);
  });

  it("skip drops a waiting registration: nothing is written after its delay or on flushAll", async () => {
    const registrations = new DeferredRegistrations(50);
    const { write, calls } = countedWrite();
    registrations.schedule("run-1", write);
    registrations.skip("run-1");
    registrations.skip("run-unknown");
    expect(registrations.size).toBe(0);
    await vi.advanceTimersByTimeAsync(1_000);
    await registrations.flushAll();
    await registrations.flush("run-1");
    expect(calls()).toBe(0);
  });

  it("a skip during the write leaves it to finish, and a flush still waits for it", async () => {
    const registrations = new DeferredRegistrations(10);
    const { write, calls, finish } = countedWrite();
    registrations.schedule("run-1", write);
    await vi.advanceTimersByTimeAsync(10);
    registrations.skip("run-1");
    let flushed = false;
    void registrations.flush("run-1").then(() => {
      flushed = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(flushed).toBe(false);
    finish();
    await vi.advanceTimersByTimeAsync(0);
    expect([calls(), flushed]).toEqual([1, true]);
  });
});
