import { describe, expect, it } from "vitest";
import { freePort, WaitForTimeoutError, waitFor } from "./index.js";

describe("waitFor", () => {
  it("resolves with the first truthy value", async () => {
    let calls = 0;
    await expect(
      waitFor(() => (++calls >= 3 ? `after ${calls}` : undefined), { intervalMs: 1 }),
    ).resolves.toBe("after 3");
  });

  it("treats a throwing condition as not yet, and reports its last error at the deadline", async () => {
    const error = await waitFor(
      () => {
        throw new Error("still down");
      },
      { timeoutMs: 30, intervalMs: 5, message: "the thing" },
    ).catch((e) => e);
    expect(error).toBeInstanceOf(WaitForTimeoutError);
    expect(error.code).toBe("wait_for_timeout");
    expect(error.message).toMatch(/waiting for the thing/);
    expect(error.attempts).toBeGreaterThan(1);
    expect(error.cause).toEqual(new Error("still down"));
  });

  it("evaluates the condition once even with a zero timeout", async () => {
    await expect(waitFor(() => 42, { timeoutMs: 0 })).resolves.toBe(42);
  });

  it("stops when aborted", async () => {
    const controller = new AbortController();
    const waiting = waitFor(() => false, { signal: controller.signal, intervalMs: 1_000 });
    controller.abort(new Error("enough"));
    await expect(waiting).rejects.toThrow("enough");
  });
});

describe("freePort", () => {
  it("returns a loopback port that can be bound", async () => {
    const port = await freePort();
    expect(port).toBeGreaterThan(0);
    const { createServer } = await import("node:net");
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });
});
