// Where a nats-server comes from: the one the user named or installed, one forkd cached, one it
// provisions (apt-get, or the verified release archive), else a container; or one error naming
// every route tried.
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { NatsServerUnavailableError } from "./errors.js";
import { aptInstall, aptTools } from "./provision/apt.js";
import { cachedNatsServerPath, forkdCacheDir, natsServerCacheRoot } from "./provision/cache.js";
import {
  DEFAULT_RELEASE_BASE_URL,
  downloadNatsServer,
  PINNED_NATS_SERVER_VERSION,
} from "./provision/download.js";
import {
  isAtLeast,
  MIN_NATS_SERVER_VERSION,
  parseVersion,
  readNatsServerVersion,
  type Version,
} from "./provision/version.js";

/**
 * How to run NATS servers: `binary` (a local `nats-server`), `container` (`@testcontainers/nats`,
 * needs a Docker engine), or `auto` (the binary if found, else a container if an engine is detected).
 */
export type NatsServerMode = "auto" | "binary" | "container";

/** Options shared by everything that looks for a way to run nats-server. */
export interface NatsLocateOptions {
  /**
   * The nats-server binary: a path, or a bare name searched on {@link searchPath}.
   * @default env `NATS_SERVER_BIN`, else "nats-server"
   */
  binary?: string;
  /**
   * Directories to search for a bare {@link binary}, in `PATH` syntax. When given, only these are
   * searched; by default `PATH` is searched, then `/usr/sbin`, `/usr/local/sbin` and `/usr/local/bin`
   * (Debian installs nats-server to `/usr/sbin`, which is not on every user's `PATH`).
   * @default env `PATH` plus the directories above
   */
  searchPath?: string;
  /**
   * Which way to run servers.
   * @default env `FORKD_TEST_NATS` ("auto" | "binary" | "container"), else "auto"
   */
  mode?: NatsServerMode;
  /**
   * The environment to read `NATS_SERVER_BIN`, `PATH`, `FORKD_TEST_NATS`, `DOCKER_HOST`, `HOME` and
   * `XDG_RUNTIME_DIR` from.
   * @default process.env
   */
  env?: NodeJS.ProcessEnv;
  /** Where to say what is being installed. @default a `forkd: …` line on stderr */
  log?: (line: string) => void;
  /** forkd's cache directory. @default {@link forkdCacheDir} of the environment */
  cacheDir?: string;
  /** The release to download (and look for in the cache). @default {@link PINNED_NATS_SERVER_VERSION} */
  version?: string;
  /** The OS description that decides whether apt-get applies. @default "/etc/os-release" */
  osReleaseFile?: string;
  /** The platform whose release archive to download. @default process.platform */
  platform?: string;
  /** The CPU architecture whose release archive to download. @default process.arch */
  arch?: string;
}

/** The outcome of {@link locateNatsServer}: run this binary, or use a container. */
export type NatsServerLocation =
  | {
      kind: "binary";
      /** Absolute path of the binary. */
      path: string;
      /** Its version, `x.y.z`. */
      version: string;
      /** The route that gave it: `NATS_SERVER_BIN`, `PATH`, `cache`, `apt-get` or `download`. */
      route: string;
    }
  | { kind: "container"; containerRuntimeDetected: boolean };

const EXTRA_DIRS = ["/usr/sbin", "/usr/local/sbin", "/usr/local/bin"];

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The first executable file named `name` in `dirs`. @internal */
export function findExecutable(name: string, dirs: readonly string[]): string | undefined {
  return dirs.map((dir) => join(dir, name)).find(isExecutableFile);
}

/**
 * Whether a container engine looks reachable: `DOCKER_HOST` is set, or a Docker socket exists at
 * `/var/run/docker.sock`, `~/.docker/run/docker.sock` or `$XDG_RUNTIME_DIR/docker.sock`. A cheap
 * check that loads nothing; the container start itself is the real test.
 *
 * @param env - where to read `DOCKER_HOST`, `HOME` and `XDG_RUNTIME_DIR`.
 * @default env process.env
 */
export function detectContainerRuntime(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.DOCKER_HOST) return true;
  const home = env.HOME ?? homedir();
  const sockets = ["/var/run/docker.sock", join(home, ".docker/run/docker.sock")];
  if (env.XDG_RUNTIME_DIR) sockets.push(join(env.XDG_RUNTIME_DIR, "docker.sock"));
  return sockets.some((socket) => existsSync(socket));
}

/** The install hint every "no nats-server" error carries. */
export const INSTALL_HINT =
  "Install nats-server yourself: on Debian/Ubuntu `apt-get install -y nats-server`; elsewhere put the " +
  "release binary from github.com/nats-io/nats-server/releases on PATH (or set NATS_SERVER_BIN to its path); " +
  "or run a Docker engine (FORKD_TEST_NATS=container uses @testcontainers/nats).";

function parseMode(value: string | undefined): NatsServerMode | undefined {
  if (value === undefined || value === "") return undefined;
  if (value === "auto" || value === "binary" || value === "container") return value;
  throw new TypeError(
    `FORKD_TEST_NATS must be "auto", "binary" or "container", got ${JSON.stringify(value)}`,
  );
}

/** One way of getting a nats-server that was tried, and what came of it. */
export interface NatsRouteOutcome {
  /** The route: `NATS_SERVER_BIN`, `PATH`, `cache`, `apt-get`, `download` or `docker`. */
  route: string;
  /** Why it gave no usable server. */
  outcome: string;
}

/**
 * Decides how to run nats-server, provisioning it when it is nowhere to be found. In order:
 * `NATS_SERVER_BIN`; `nats-server` on the search path (`PATH`, then `/usr/sbin` …); a binary forkd
 * downloaded before (in {@link forkdCacheDir}); then, unless `FORKD_NO_INSTALL=1`,
 * `apt-get install -y nats-server` on Debian/Ubuntu as root or with password-less sudo, else the
 * pinned release archive for the platform, verified against the release's SHA-256 checksum file
 * and unpacked into the cache; then a container through `@testcontainers/nats` when a Docker
 * engine is detected. Says what it installs, on one line, before doing it.
 *
 * A binary older than {@link MIN_NATS_SERVER_VERSION} is refused (and the next route tried).
 *
 * @param options - the binary's name or path, where to search, the mode, the environment, where
 *   to log, and the overrides tests use.
 * @returns the binary's absolute path and version, or `{ kind: "container" }`.
 * @throws {@link NatsServerUnavailableError} listing every route tried and why it failed.
 */
export async function locateNatsServer(options: NatsLocateOptions = {}): Promise<NatsServerLocation> {
  const env = options.env ?? process.env;
  const mode = options.mode ?? parseMode(env.FORKD_TEST_NATS) ?? "auto";
  const containerRuntimeDetected = detectContainerRuntime(env);
  if (mode === "container") return { kind: "container", containerRuntimeDetected };

  const say = options.log ?? ((line: string) => process.stderr.write(`forkd: ${line}\n`));
  const searchedDirs = (options.searchPath ?? [env.PATH ?? "", ...EXTRA_DIRS].join(delimiter))
    .split(delimiter)
    .filter((dir, i, all) => dir !== "" && all.indexOf(dir) === i);
  const find = (name: string) => findExecutable(name, searchedDirs);
  const routes: NatsRouteOutcome[] = [];
  const minimum = parseVersion(MIN_NATS_SERVER_VERSION) as Version;

  // A candidate is usable when it runs and is recent enough; otherwise the reason is recorded.
  const tryBinary = async (route: string, path: string | undefined, missing: string) => {
    if (path === undefined) {
      routes.push({ route, outcome: missing });
      return undefined;
    }
    try {
      const version = await readNatsServerVersion(path);
      if (isAtLeast(parseVersion(version) as Version, minimum)) {
        return { kind: "binary" as const, path: isAbsolute(path) ? path : resolve(path), version, route };
      }
      routes.push({
        route,
        outcome: `${path} is nats-server ${version}; forkd needs ${MIN_NATS_SERVER_VERSION} or newer`,
      });
    } catch (error) {
      routes.push({ route, outcome: (error as Error).message });
    }
    return undefined;
  };

  const unavailable = () =>
    new NatsServerUnavailableError(
      `no NATS server could be had; each route forkd tried:\n${routes.map((r) => `  - ${r.route}: ${r.outcome}`).join("\n")}\n${INSTALL_HINT}`,
      { binary: named || "nats-server", searchedDirs, containerRuntimeDetected, routes },
    );

  const named = options.binary ?? env.NATS_SERVER_BIN;
  if (named) {
    const path = named.includes("/") ? (isExecutableFile(named) ? named : undefined) : find(named);
    const where = named.includes("/") ? "at that path" : `on ${searchedDirs.join(delimiter)}`;
    const found = await tryBinary("NATS_SERVER_BIN", path, `no executable ${named} ${where}`);
    // A binary the user named is their choice: when it is unusable, say so rather than run another.
    if (found === undefined) throw unavailable();
    return found;
  }
  routes.push({ route: "NATS_SERVER_BIN", outcome: "not set" });
  const onPath = await tryBinary(
    "PATH",
    find("nats-server"),
    `no nats-server on ${searchedDirs.join(delimiter) || "an empty search path"}`,
  );
  if (onPath !== undefined) return onPath;

  const cacheDir = options.cacheDir ?? forkdCacheDir(env);
  const version = options.version ?? PINNED_NATS_SERVER_VERSION;
  const cached = cachedNatsServerPath(cacheDir, version);
  const fromCache = await tryBinary(
    "cache",
    isExecutableFile(cached) ? cached : undefined,
    `no nats-server ${version} in ${natsServerCacheRoot(cacheDir)}`,
  );
  if (fromCache !== undefined) return fromCache;

  if (env.FORKD_NO_INSTALL === "1") {
    routes.push({ route: "apt-get", outcome: "skipped: FORKD_NO_INSTALL=1" });
    routes.push({ route: "download", outcome: "skipped: FORKD_NO_INSTALL=1" });
  } else {
    const apt = await aptTools(options.osReleaseFile ?? "/etc/os-release", find, env);
    if (typeof apt === "string") {
      routes.push({ route: "apt-get", outcome: apt });
    } else {
      say("installing nats-server with apt-get (once; FORKD_NO_INSTALL=1 turns this off)");
      const failed = await aptInstall(apt, env, "nats-server");
      const installed = failed === undefined ? find("nats-server") : undefined;
      const found = await tryBinary(
        "apt-get",
        installed,
        failed ?? `apt-get installed no nats-server on ${searchedDirs.join(delimiter)}`,
      );
      if (found !== undefined) return found;
    }
    const platform = options.platform ?? process.platform;
    const arch = options.arch ?? process.arch;
    const baseUrl = env.FORKD_NATS_RELEASE_URL || DEFAULT_RELEASE_BASE_URL;
    say(
      `downloading nats-server ${version} for ${platform}-${arch} into ${natsServerCacheRoot(cacheDir)} (once; FORKD_NO_INSTALL=1 turns this off)`,
    );
    try {
      const path = await downloadNatsServer({ version, baseUrl, cacheDir, platform, arch, progress: say });
      const found = await tryBinary("download", path, "");
      if (found !== undefined) return found;
    } catch (error) {
      routes.push({ route: "download", outcome: `${baseUrl}: ${(error as Error).message}` });
    }
  }

  if (mode === "binary") {
    routes.push({
      route: "docker",
      outcome: "ruled out: mode 'binary' (the mode option or FORKD_TEST_NATS)",
    });
  } else if (containerRuntimeDetected) {
    return { kind: "container", containerRuntimeDetected };
  } else {
    routes.push({ route: "docker", outcome: "no Docker engine detected for @testcontainers/nats" });
  }
  throw unavailable();
}

/**
 * A program the test suite needs besides nats-server (bubblewrap's `bwrap`, for one): found on the
 * search path, or installed once with apt-get on Debian/Ubuntu as root or with password-less sudo
 * (saying so on one line; `FORKD_NO_INSTALL=1` turns it off).
 * @returns its path, or why there is none.
 */
export async function ensureProgram(
  binary: string,
  debianPackage: string,
  options: Pick<NatsLocateOptions, "env" | "searchPath" | "log" | "osReleaseFile"> = {},
): Promise<{ path: string } | { missing: string }> {
  const env = options.env ?? process.env;
  const dirs = (options.searchPath ?? [env.PATH ?? "", ...EXTRA_DIRS].join(delimiter))
    .split(delimiter)
    .filter((dir) => dir !== "");
  const found = findExecutable(binary, dirs);
  if (found !== undefined) return { path: found };
  if (env.FORKD_NO_INSTALL === "1") return { missing: `${binary} is not installed (FORKD_NO_INSTALL=1)` };
  const apt = await aptTools(
    options.osReleaseFile ?? "/etc/os-release",
    (name) => findExecutable(name, dirs),
    env,
  );
  if (typeof apt === "string")
    return { missing: `${binary} is not installed, and apt-get cannot install it: ${apt}` };
  (options.log ?? ((line: string) => process.stderr.write(`forkd: ${line}\n`)))(
    `installing ${debianPackage} with apt-get (once; FORKD_NO_INSTALL=1 turns this off)`,
  );
  const failed = await aptInstall(apt, env, debianPackage);
  const installed = findExecutable(binary, dirs);
  return installed !== undefined
    ? { path: installed }
    : { missing: failed ?? `apt-get installed no ${binary}` };
}
