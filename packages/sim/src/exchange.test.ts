// BodyTurns: read bodies are handed on one per turn of the event loop, in order, so the loop polls its
// sockets (and stamps arrivals) between two bodies' checks.
import { describe, expect, it } from "vitest";
import { BodyTurns } from "./exchange.js";

describe("BodyTurns", () => {
  it("hands bodies on in order, one per turn of the event loop", async () => {
    const turns = new BodyTurns();
    const order: string[] = [];
    const done = new Promise<void>((resolve) => {
      turns.enqueue(() => {
        order.push("a");
        // Runs on the loop's next turn: before b only if b waits for that turn too.
        setImmediate(() => order.push("after a's turn"));
      });
      turns.enqueue(() => order.push("b"));
      turns.enqueue(() => {
        order.push("c");
        resolve();
      });
    });
    expect(order).toEqual([]);
    await done;
    expect(order).toEqual(["a", "after a's turn", "b", "c"]);
  });

  it("starts again after running dry", async () => {
    const turns = new BodyTurns();
    const seen: number[] = [];
    await new Promise<void>((resolve) => turns.enqueue(() => resolve(void seen.push(1))));
    await new Promise<void>((resolve) => turns.enqueue(() => resolve(void seen.push(2))));
    expect(seen).toEqual([1, 2]);
  });
});
