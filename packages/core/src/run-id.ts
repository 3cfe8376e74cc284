// Run ids: UUIDv7, so ids sort by creation time in the run registry and in logs.
import { v7 as uuidv7 } from "uuid";

/**
 * A new UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. It is a valid run id
 * (one NATS token of `[0-9a-f-]`).
 * @param now milliseconds since the epoch. @unit ms @default Date.now()
 */
export function newRunId(now: number = Date.now()): string {
  return uuidv7({ msecs: Math.max(0, Math.floor(now)) });
}
