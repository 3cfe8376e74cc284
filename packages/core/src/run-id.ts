// Run ids: UUIDv7, so ids sort by creation time in the run registry and in logs.
import { randomFillSync } from "node:crypto";
import { v7 as uuidv7 } from "uuid";

// Random bytes are drawn from a pool refilled in one call: the uuid package asks the Web Crypto API for
// 16 bytes per id, which costs ~10 µs a call on Node 20 (in a loop; several times that inside a
// dispatch), and a run id is made on every fork's way to its spec.
const POOL_BYTES = 4096;
const pool = new Uint8Array(POOL_BYTES);
let poolOffset = POOL_BYTES;

function randomBytes16(): Uint8Array {
  if (poolOffset + 16 > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const bytes = pool.subarray(poolOffset, poolOffset + 16);
  poolOffset += 16;
  return bytes;
}

/**
 * A new UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. It is a valid run id
 * (one NATS token of `[0-9a-f-]`).
 * @param now milliseconds since the epoch. @unit ms @default Date.now()
 */
export function newRunId(now: number = Date.now()): string {
  return uuidv7({ msecs: Math.max(0, Math.floor(now)), random: randomBytes16() });
}
