/**
 * What forkd's tests and benchmarks start and wait on: real nats-server processes (one node from
 * `@forkd/local-nats`, or a three-node cluster for failure tests) on loopback, the recorded parent
 * turns of `@forkd/fixtures`, a free port, and `waitFor` for the few conditions no event signals.
 * Re-exports both packages, so a test imports from one place. Never a run-time dependency.
 *
 * @example
 * ```ts
 * import { loadFixture, startNatsCluster, waitFor } from "@forkd/testing";
 *
 * await using cluster = await startNatsCluster({ nodes: 3 });
 * const turn = await loadFixture("4k");
 * await cluster.nodes[0]!.kill("SIGKILL");
 * const health = `${cluster.nodes[1]!.monitorUrl}/healthz`;
 * await waitFor(async () => (await fetch(health)).ok, { timeoutMs: 10_000, message: "a healthy node" });
 * ```
 * @module
 */
export type { FixtureName, FixtureRequest, FixtureResponse, ParentTurnFixture } from "@forkd/fixtures";
export { FIXTURE_NAMES, FixtureError, fixturePath, loadFixture } from "@forkd/fixtures";
export type {
  LocalNatsErrorCode,
  NatsLocateOptions,
  NatsRouteOutcome,
  NatsServerHandle,
  NatsServerLocation,
  NatsServerMode,
  RestartOptions,
  StartNatsServerOptions,
  WaitForLogOptions,
} from "@forkd/local-nats";
export {
  detectContainerRuntime,
  ensureProgram,
  forkdCacheDir,
  INSTALL_HINT,
  isProcessAlive,
  LocalNatsError,
  locateNatsServer,
  MIN_NATS_SERVER_VERSION,
  NatsServerReloadError,
  NatsServerStartError,
  NatsServerUnavailableError,
  NatsServerUnsupportedError,
  PINNED_NATS_SERVER_VERSION,
  runningNatsServerCount,
  startNatsServer,
  stopAllNatsServers,
  WaitForTimeoutError,
} from "@forkd/local-nats";
export { freePort } from "./free-port.js";
export type { NatsClusterHandle, StartNatsClusterOptions } from "./start-cluster.js";
export { startNatsCluster } from "./start-cluster.js";
export type { WaitForOptions } from "./wait-for.js";
export { waitFor } from "./wait-for.js";
