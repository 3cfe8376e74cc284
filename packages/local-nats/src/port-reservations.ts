// Ports a server keeps across its restarts. A server that picks a free port itself (`-p -1`) gets one
// from the kernel's ephemeral range, where any process's next outgoing connection or `listen(0)` may
// take it while the server is down (a test that kills a node and restarts it later then fails with
// "address already in use"). These ports come from below that range, where the kernel hands out
// nothing by itself, and each is held by a lock file naming its process, so that two test processes
// never pick the same one; a lock whose process is gone is taken over.
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Where the lock files live: one per port, holding the pid of the process that reserved it. */
export const PORT_LOCK_DIR = join(tmpdir(), "forkd-local-nats-ports");
/** The range: above the well-known and registered ports most services use, below the ephemeral range. */
export const RESERVED_PORT_RANGE = { low: 20_000, high: 32_767 } as const;
const MAX_TRIES = 200;

/** A port held for one server until {@link PortReservation.release}. */
export interface PortReservation {
  readonly port: number;
  /** Gives the port back (idempotent). */
  release(): void;
}

const held = new Set<string>();
let exitHookInstalled = false;

function releaseAllAtExit(): void {
  for (const file of held) {
    try {
      unlinkSync(file);
    } catch {
      // already gone
    }
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Takes the lock of `port`, or of nobody's: false when a live process holds it. */
function lock(file: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = Number.parseInt(readFileSync(file, "utf8"), 10);
      // A lock being written (no pid yet) or held by a live process is not ours to take.
      if (!Number.isInteger(owner) || processAlive(owner)) return false;
      try {
        unlinkSync(file);
      } catch {
        // another process took it over first
      }
    }
  }
  return false;
}

/** Whether nothing listens on `port` of `host` now (a process that does not use these locks). */
function bindable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * Reserves a port on `host` that no other process using these reservations holds, that nothing
 * listens on now, and that the kernel does not hand out by itself.
 */
export async function reservePort(
  host: string,
  range: { low: number; high: number } = RESERVED_PORT_RANGE,
): Promise<PortReservation> {
  mkdirSync(PORT_LOCK_DIR, { recursive: true });
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", releaseAllAtExit);
  }
  const span = range.high - range.low + 1;
  for (let tries = 0; tries < MAX_TRIES; tries++) {
    const port = range.low + Math.floor(Math.random() * span);
    const file = join(PORT_LOCK_DIR, String(port));
    if (!lock(file)) continue;
    if (!(await bindable(host, port))) {
      unlinkSync(file);
      continue;
    }
    held.add(file);
    let released = false;
    return {
      port,
      release: () => {
        if (released) return;
        released = true;
        held.delete(file);
        try {
          unlinkSync(file);
        } catch {
          // already gone
        }
      },
    };
  }
  throw new Error(`no free port in ${range.low}-${range.high} after ${MAX_TRIES} tries`);
}
