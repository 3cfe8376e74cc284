// Test-only: prints the cache key of a fixture's parent request, so a test can compare the hash
// computed by separate Node processes. Usage: node --import tsx print-cache-key.ts <4k|48k|300k>
import { computeCacheKey } from "../cache-key.js";
import { snapshotCacheSafeParams } from "../cache-safe-params.js";
import { type FixtureName, loadFixture } from "./fixtures.js";

const name = (process.argv[2] ?? "48k") as FixtureName;
const key = computeCacheKey(snapshotCacheSafeParams(loadFixture(name).request));
process.stdout.write(`${JSON.stringify(key)}\n`);
