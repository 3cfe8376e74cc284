// Where the nats-server binary is, whether a container engine is around, and which of the two to use.
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { NatsServerUnavailableError } from "./errors.js";

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
}

/** The outcome of {@link locateNatsServer}: run this binary, or use a container. */
export type NatsServerLocation =
  | { kind: "binary"; path: string }
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
  "Install nats-server: on Debian/Ubuntu `apt-get install -y nats-server`; elsewhere download the " +
  "release binary from the nats-io/nats-server GitHub releases and put it on PATH (or set NATS_SERVER_BIN to its path); " +
  "or run a Docker engine and set FORKD_TEST_NATS=container to use @testcontainers/nats.";

function parseMode(value: string | undefined): NatsServerMode | undefined {
  if (value === undefined || value === "") return undefined;
  if (value === "auto" || value === "binary" || value === "container") return value;
  throw new TypeError(
    `FORKD_TEST_NATS must be "auto", "binary" or "container", got ${JSON.stringify(value)}`,
  );
}

/**
 * Decides how to run nats-server: finds the binary, or falls back to a container.
 *
 * @param options - the binary's name or path, where to search, the mode, the environment.
 * @returns the binary's absolute path, or `{ kind: "container" }`.
 * @throws {@link NatsServerUnavailableError} when mode is `binary` and no binary is found, or mode is
 *   `auto` and neither a binary nor a container engine is found. The message says how to install one.
 */
export function locateNatsServer(options: NatsLocateOptions = {}): NatsServerLocation {
  const env = options.env ?? process.env;
  const mode = options.mode ?? parseMode(env.FORKD_TEST_NATS) ?? "auto";
  const containerRuntimeDetected = detectContainerRuntime(env);
  if (mode === "container") return { kind: "container", containerRuntimeDetected };

  const binary = options.binary ?? (env.NATS_SERVER_BIN || "nats-server");
  const bare = !binary.includes("/");
  const searchedDirs = bare
    ? (options.searchPath ?? [env.PATH ?? "", ...EXTRA_DIRS].join(delimiter))
        .split(delimiter)
        .filter((dir) => dir !== "")
    : [];
  const found = bare ? findExecutable(binary, searchedDirs) : isExecutableFile(binary) ? binary : undefined;
  if (found !== undefined) return { kind: "binary", path: isAbsolute(found) ? found : resolve(found) };
  if (mode === "auto" && containerRuntimeDetected) return { kind: "container", containerRuntimeDetected };

  const where = bare ? `on ${searchedDirs.join(delimiter) || "an empty search path"}` : "at that path";
  const container =
    mode === "binary"
      ? "Mode 'binary' (the mode option or FORKD_TEST_NATS) rules out the container fallback."
      : "No Docker engine was detected for the @testcontainers/nats fallback.";
  throw new NatsServerUnavailableError(
    `nats-server not found: no executable ${binary} ${where}. ${container} ${INSTALL_HINT}`,
    {
      binary,
      searchedDirs,
      containerRuntimeDetected,
    },
  );
}
