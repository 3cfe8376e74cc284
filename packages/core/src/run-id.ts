// Run ids: UUIDv7, so ids sort by creation time in the run registry and in logs.
import { randomBytes } from "node:crypto";

/**
 * A new UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. It is a valid run id
 * (one NATS token of `[0-9a-f-]`).
 * @param now milliseconds since the epoch. @unit ms @default Date.now()
 */
export function newRunId(now: number = Date.now()): string {
  const bytes = randomBytes(16);
  let ms = BigInt(Math.max(0, Math.floor(now)));
  for (let i = 5; i >= 0; i--) {
    bytes[i] = Number(ms & 0xffn);
    ms >>= 8n;
  }
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x70;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
