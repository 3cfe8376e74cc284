import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PORT_LOCK_DIR, RESERVED_PORT_RANGE, reservePort } from "./port-reservations.js";

const HOST = "127.0.0.1";

/** A port of the reserved range that nobody holds now: reserved, then given back. */
async function idlePort(): Promise<number> {
  const probe = await reservePort(HOST);
  probe.release();
  return probe.port;
}

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen({ host: HOST, port, exclusive: true }, () => resolve(server));
  });
}

describe("reservePort", () => {
  it("holds a port below the kernel's ephemeral range with a lock naming this process, until released", async () => {
    const reservation = await reservePort(HOST);
    expect(reservation.port).toBeGreaterThanOrEqual(RESERVED_PORT_RANGE.low);
    expect(reservation.port).toBeLessThanOrEqual(RESERVED_PORT_RANGE.high);
    const lock = join(PORT_LOCK_DIR, String(reservation.port));
    expect(readFileSync(lock, "utf8")).toBe(String(process.pid));
    // Held: not handed out again, even from a range of that one port.
    const only = { low: reservation.port, high: reservation.port };
    await expect(reservePort(HOST, only)).rejects.toThrow(/no free port/);
    reservation.release();
    reservation.release();
    expect(existsSync(lock)).toBe(false);
    const again = await reservePort(HOST, only);
    expect(again.port).toBe(reservation.port);
    again.release();
  });

  it("takes over the lock of a process that is gone", async () => {
    const port = await idlePort();
    const gone = spawnSync(process.execPath, ["-e", ""]).pid;
    writeFileSync(join(PORT_LOCK_DIR, String(port)), String(gone));
    const reservation = await reservePort(HOST, { low: port, high: port });
    expect(readFileSync(join(PORT_LOCK_DIR, String(port)), "utf8")).toBe(String(process.pid));
    reservation.release();
  });

  it("skips a port something listens on without a lock", async () => {
    const port = await idlePort();
    const server = await listen(port);
    try {
      await expect(reservePort(HOST, { low: port, high: port })).rejects.toThrow(/no free port/);
      expect(existsSync(join(PORT_LOCK_DIR, String(port)))).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
