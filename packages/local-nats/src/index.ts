/**
 * A local nats-server with JetStream on loopback, for the demo and the tests: find one
 * (`NATS_SERVER_BIN`, `PATH`, `/usr/sbin`, forkd's cache), else install one once (apt-get, or the
 * pinned release archive checked against its SHA-256), else run one in a container through the
 * optional peer `@testcontainers/nats` (loaded only when needed); or fail with one error naming every
 * route tried. Servers it starts are tracked, and SIGKILLed with their temp dirs removed if the
 * process exits without stopping them.
 *
 * @example
 * ```ts
 * import { locateNatsServer, startNatsServer } from "@forkd/local-nats";
 *
 * const where = await locateNatsServer({ log: (line) => console.error(line) });
 * await using server = await startNatsServer({ name: "mine" });
 * console.log(where.kind, server.url); // "binary" nats://127.0.0.1:…
 * ```
 * @module
 */
export type { LocalNatsErrorCode } from "./errors.js";
export {
  LocalNatsError,
  NatsServerReloadError,
  NatsServerStartError,
  NatsServerUnavailableError,
  NatsServerUnsupportedError,
  WaitForTimeoutError,
} from "./errors.js";
export type { NatsServerHandle, RestartOptions } from "./handle.js";
export type { NatsLocateOptions, NatsRouteOutcome, NatsServerLocation, NatsServerMode } from "./locate.js";
export { detectContainerRuntime, ensureProgram, INSTALL_HINT, locateNatsServer } from "./locate.js";
export { isProcessAlive } from "./process-alive.js";
export { forkdCacheDir } from "./provision/cache.js";
export { PINNED_NATS_SERVER_VERSION } from "./provision/download.js";
export { MIN_NATS_SERVER_VERSION } from "./provision/version.js";
export { runningNatsServerCount, stopAllNatsServers } from "./registry.js";
export type { WaitForLogOptions } from "./server-log.js";
export type { StartNatsServerOptions } from "./start-server.js";
export { startNatsServer } from "./start-server.js";
