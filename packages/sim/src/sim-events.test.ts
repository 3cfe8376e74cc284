import { describe, expect, it } from "vitest";
import type { DisconnectEvent } from "./sim-events.js";
import { SimEventBus } from "./sim-events.js";

const disconnect = (seq: number): DisconnectEvent => ({
  seq,
  id: `req_${seq}`,
  at: 0,
  afterFirstByte: false,
  outputTokensSent: 0,
});

describe("SimEventBus", () => {
  it("delivers events to listeners until they are removed, and says whether anyone listens", () => {
    const bus = new SimEventBus();
    const seen: number[] = [];
    const listener = (e: DisconnectEvent) => seen.push(e.seq);
    expect(bus.listening("disconnect")).toBe(false);
    bus.on("disconnect", listener);
    expect(bus.listening("disconnect")).toBe(true);
    expect(bus.listening("firstByte")).toBe(false);
    bus.emit("disconnect", disconnect(1));
    bus.off("disconnect", listener);
    bus.emit("disconnect", disconnect(2));
    expect(seen).toEqual([1]);
  });

  it("turns a listener that throws into a process warning", async () => {
    const bus = new SimEventBus();
    bus.on("disconnect", () => {
      throw new Error("listener bug");
    });
    const warned = new Promise<Error>((resolve) => process.once("warning", resolve));
    expect(() => bus.emit("disconnect", disconnect(1))).not.toThrow();
    expect((await warned).message).toContain(
      'a "disconnect" listener of the simulator threw: Error: listener bug',
    );
  });

  it("next resolves with the first event that passes the filter, then stops listening", async () => {
    const bus = new SimEventBus();
    const next = bus.next("disconnect", { filter: (e) => e.seq === 2 });
    bus.emit("disconnect", disconnect(1));
    bus.emit("disconnect", disconnect(2));
    expect((await next).seq).toBe(2);
    expect(bus.listening("disconnect")).toBe(false);
  });

  it("next rejects with the signal's reason, at once when already aborted, and stops listening", async () => {
    const bus = new SimEventBus();
    const controller = new AbortController();
    const next = bus.next("disconnect", { signal: controller.signal });
    controller.abort(new Error("gave up"));
    await expect(next).rejects.toThrow("gave up");
    expect(bus.listening("disconnect")).toBe(false);
    await expect(bus.next("disconnect", { signal: AbortSignal.abort(new Error("before")) })).rejects.toThrow(
      "before",
    );
    expect(bus.listening("disconnect")).toBe(false);
  });
});
