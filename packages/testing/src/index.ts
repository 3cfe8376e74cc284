// @forkd/testing: real nats-server processes (one node or a cluster) on loopback for tests, the
// parent-turn fixtures, and a few waiting helpers.

export type { NatsTestingErrorCode } from "./errors.js";
export {
  FixtureError,
  NatsServerReloadError,
  NatsServerStartError,
  NatsServerUnavailableError,
  NatsServerUnsupportedError,
  NatsTestingError,
  WaitForTimeoutError,
} from "./errors.js";
export type { FixtureName, FixtureRequest, FixtureResponse, ParentTurnFixture } from "./fixtures.js";
export { FIXTURE_NAMES, fixturePath, loadFixture } from "./fixtures.js";
export { freePort } from "./free-port.js";
export type { NatsServerHandle, RestartOptions } from "./handle.js";
export type { NatsLocateOptions, NatsRouteOutcome, NatsServerLocation, NatsServerMode } from "./locate.js";
export { detectContainerRuntime, ensureProgram, INSTALL_HINT, locateNatsServer } from "./locate.js";
export { isProcessAlive } from "./process-alive.js";
export { forkdCacheDir } from "./provision/cache.js";
export { PINNED_NATS_SERVER_VERSION } from "./provision/download.js";
export { MIN_NATS_SERVER_VERSION } from "./provision/version.js";
export { runningNatsServerCount, stopAllNatsServers } from "./registry.js";
export type { WaitForLogOptions } from "./server-log.js";
export type { NatsClusterHandle, StartNatsClusterOptions } from "./start-cluster.js";
export { startNatsCluster } from "./start-cluster.js";
export type { StartNatsServerOptions } from "./start-server.js";
export { startNatsServer } from "./start-server.js";
export type { WaitForOptions } from "./wait-for.js";
export { waitFor } from "./wait-for.js";
