// What version a nats-server binary is, and whether forkd can use it.
import { execFile } from "node:child_process";

/** The oldest nats-server forkd works with: JetStream KV/object store and `Nats-Expected-Last-Subject-Sequence`. */
export const MIN_NATS_SERVER_VERSION = "2.9.0";

/** A parsed `major.minor.patch`. */
export type Version = readonly [number, number, number];

/** Parses the first `x.y.z` in `text` (`nats-server: v2.9.10` → `[2, 9, 10]`), or undefined. */
export function parseVersion(text: string): Version | undefined {
  const match = /v?(\d+)\.(\d+)\.(\d+)/.exec(text);
  return match === null ? undefined : [Number(match[1]), Number(match[2]), Number(match[3])];
}

/** Whether `version` is at least `minimum`. */
export function isAtLeast(version: Version, minimum: Version): boolean {
  for (let i = 0; i < 3; i += 1) {
    if (version[i] !== minimum[i]) return (version[i] ?? 0) > (minimum[i] ?? 0);
  }
  return true;
}

const versions = new Map<string, Promise<string>>();

/**
 * Runs `<binary> --version` (once per path per process) and returns the `x.y.z` it reports.
 * @throws Error when the binary does not run or prints no version.
 */
export function readNatsServerVersion(binary: string): Promise<string> {
  let pending = versions.get(binary);
  if (pending === undefined) {
    pending = new Promise<string>((resolve, reject) => {
      execFile(binary, ["--version"], { timeout: 10_000 }, (error, stdout, stderr) => {
        const version = parseVersion(`${stdout}${stderr}`);
        if (error !== null) reject(new Error(`\`${binary} --version\` failed: ${error.message.trim()}`));
        else if (version === undefined) reject(new Error(`\`${binary} --version\` printed no version`));
        else resolve(version.join("."));
      });
    });
    versions.set(binary, pending);
    pending.catch(() => versions.delete(binary));
  }
  return pending;
}
