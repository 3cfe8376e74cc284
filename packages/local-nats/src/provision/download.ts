// Provisioning nats-server from its release archive: download, verify the SHA-256 against the
// release's checksum file, unpack into forkd's cache. Nothing lands in the cache unless all of it
// succeeded: the work happens in a temp dir beside the target, which is renamed into place last.
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { chmod, mkdir, mkdtemp, readdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { run } from "./apt.js";
import { cachedNatsServerPath, natsServerCacheRoot } from "./cache.js";

/** The nats-server release forkd downloads when it has to. */
export const PINNED_NATS_SERVER_VERSION = "2.10.24";

/** Where release archives come from; `FORKD_NATS_RELEASE_URL` overrides it (mirrors, tests). */
export const DEFAULT_RELEASE_BASE_URL = "https://github.com/nats-io/nats-server/releases/download";

const ARCHES: Readonly<Record<string, string>> = { x64: "amd64", arm64: "arm64", arm: "arm7", ia32: "386" };
const PLATFORMS: Readonly<Record<string, string>> = { linux: "linux", darwin: "darwin", freebsd: "freebsd" };

/** The archive's base name for this platform (`nats-server-v2.10.24-linux-amd64`), or why there is none. */
export function releaseAssetBase(
  version: string,
  platform: string,
  arch: string,
): string | { unsupported: string } {
  const os = PLATFORMS[platform];
  const cpu = ARCHES[arch];
  if (os === undefined || cpu === undefined)
    return { unsupported: `no release archive for ${platform}-${arch}` };
  return `nats-server-v${version}-${os}-${cpu}`;
}

/** How the download went, for the one line of progress the user sees. */
export type ProgressListener = (line: string) => void;

/** What {@link downloadNatsServer} needs. */
export interface DownloadOptions {
  version: string;
  baseUrl: string;
  cacheDir: string;
  platform: string;
  arch: string;
  progress: ProgressListener;
}

async function fetchOk(url: string): Promise<Response> {
  const response = await fetch(url, { redirect: "follow" });
  if (!response.ok || response.body === null) {
    await response.body?.cancel().catch(() => undefined);
    throw new Error(`GET ${url}: HTTP ${response.status}`);
  }
  return response;
}

/** The SHA-256 the checksum file lists for `fileName`. */
function expectedSha256(sums: string, fileName: string): string {
  for (const line of sums.split("\n")) {
    const [hash, name] = line.trim().split(/\s+\*?/);
    if (name === fileName && hash !== undefined && /^[0-9a-f]{64}$/i.test(hash)) return hash.toLowerCase();
  }
  throw new Error(`the checksum file lists no SHA-256 for ${fileName}`);
}

/** Streams `response` to `file`, reporting progress by tenths, and returns the SHA-256 of what came. */
async function saveWithHash(
  response: Response,
  file: string,
  progress: ProgressListener,
  what: string,
): Promise<string> {
  const total = Number(response.headers.get("content-length") ?? 0);
  const hash = createHash("sha256");
  let received = 0;
  let reportedTenth = 0;
  const body = Readable.fromWeb(response.body as import("node:stream/web").ReadableStream<Uint8Array>);
  body.on("data", (chunk: Buffer) => {
    hash.update(chunk);
    received += chunk.length;
    const tenth = total > 0 ? Math.floor((received / total) * 10) : 0;
    if (tenth > reportedTenth) {
      reportedTenth = tenth;
      progress(`downloading ${what}: ${tenth * 10}% of ${(total / 1_048_576).toFixed(1)} MB`);
    }
  });
  await pipeline(body, createWriteStream(file));
  if (total > 0 && received !== total)
    throw new Error(`download of ${what} ended after ${received} of ${total} bytes`);
  return hash.digest("hex");
}

async function findFile(dir: string, name: string): Promise<string | undefined> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isFile() && entry.name === name) return path;
    if (entry.isDirectory()) {
      const found = await findFile(path, name);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/**
 * Downloads the release archive, verifies it and installs its binary into the cache.
 * @returns the cached binary's path.
 * @throws Error saying which step failed; the cache is left as it was.
 */
export async function downloadNatsServer(options: DownloadOptions): Promise<string> {
  const base = releaseAssetBase(options.version, options.platform, options.arch);
  if (typeof base !== "string") throw new Error(base.unsupported);
  const archiveName = `${base}.tar.gz`;
  const releaseUrl = `${options.baseUrl.replace(/\/$/, "")}/v${options.version}`;
  const root = natsServerCacheRoot(options.cacheDir);
  await mkdir(root, { recursive: true });
  const work = await mkdtemp(join(root, `.partial-${options.version}-`));
  try {
    const sums = await (await fetchOk(`${releaseUrl}/SHA256SUMS`)).text();
    const expected = expectedSha256(sums, archiveName);
    const archive = join(work, archiveName);
    const actual = await saveWithHash(
      await fetchOk(`${releaseUrl}/${archiveName}`),
      archive,
      options.progress,
      archiveName,
    );
    if (actual !== expected) {
      throw new Error(`SHA-256 of ${archiveName} is ${actual}, the release's checksum file says ${expected}`);
    }
    const unpacked = join(work, "unpacked");
    await mkdir(unpacked);
    const tar = await run("tar", ["-xzf", archive, "-C", unpacked], process.env);
    if (tar.code !== 0) throw new Error(`unpacking ${archiveName} failed: ${tar.output.trim()}`);
    const binary = await findFile(unpacked, "nats-server");
    if (binary === undefined) throw new Error(`${archiveName} holds no nats-server binary`);
    const staged = join(work, "staged");
    await mkdir(staged);
    await rename(binary, join(staged, "nats-server"));
    await chmod(join(staged, "nats-server"), 0o755);
    const target = cachedNatsServerPath(options.cacheDir, options.version);
    // The rename is the commit point: before it the cache has no entry for this version.
    await rename(staged, join(root, options.version)).catch(async (error: NodeJS.ErrnoException) => {
      // Another process installed the same version first; theirs is as good as ours.
      if (
        !(await stat(target).then(
          () => true,
          () => false,
        ))
      )
        throw error;
    });
    return target;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
