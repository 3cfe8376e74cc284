// Temp dirs of harness servers. Each records the pid of the process that made it, so a later run
// can remove the dirs of test processes that were killed before they could clean up.
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isProcessAlive } from "./process-alive.js";
import { trackTempDir } from "./registry.js";

const PREFIX = "forkd-nats-";
const OWNER_FILE = "owner.pid";
let swept = false;

/**
 * Removes `forkd-nats-*` dirs whose owning process is gone (a test worker killed by a signal runs
 * no exit handler). Dirs without an owner file are left alone. Once per process, best effort.
 */
function sweepStaleTempDirs(): void {
  if (swept) return;
  swept = true;
  let entries: string[];
  try {
    entries = readdirSync(tmpdir()).filter((name) => name.startsWith(PREFIX));
  } catch {
    return;
  }
  for (const name of entries) {
    const dir = join(tmpdir(), name);
    try {
      const owner = Number(readFileSync(join(dir, OWNER_FILE), "utf8"));
      if (Number.isInteger(owner) && owner > 0 && !isProcessAlive(owner))
        rmSync(dir, { recursive: true, force: true });
    } catch {
      // no owner file, or not ours to read: leave it
    }
  }
}

/** Creates and tracks a `forkd-nats-<kind>` temp dir owned by this process. @internal */
export async function makeTempDir(kind: string): Promise<string> {
  sweepStaleTempDirs();
  const dir = await mkdtemp(join(tmpdir(), `${PREFIX}${kind}-`));
  trackTempDir(dir);
  await writeFile(join(dir, OWNER_FILE), String(process.pid));
  return dir;
}
