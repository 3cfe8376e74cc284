// Where forkd keeps the nats-server binaries it downloaded: one directory per version.
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * forkd's cache directory: `FORKD_CACHE_DIR`, else `$XDG_CACHE_HOME/forkd`, else `~/.cache/forkd`
 * (`~/Library/Caches/forkd` on macOS).
 */
export function forkdCacheDir(env: NodeJS.ProcessEnv): string {
  if (env.FORKD_CACHE_DIR) return env.FORKD_CACHE_DIR;
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, "forkd");
  const home = env.HOME || homedir();
  return process.platform === "darwin"
    ? join(home, "Library", "Caches", "forkd")
    : join(home, ".cache", "forkd");
}

/** The directory holding every cached nats-server version. */
export function natsServerCacheRoot(cacheDir: string): string {
  return join(cacheDir, "nats-server");
}

/** The path of the cached binary of `version`. */
export function cachedNatsServerPath(cacheDir: string, version: string): string {
  return join(
    natsServerCacheRoot(cacheDir),
    version,
    process.platform === "win32" ? "nats-server.exe" : "nats-server",
  );
}
