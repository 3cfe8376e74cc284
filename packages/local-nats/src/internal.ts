/**
 * The parts of `@forkd/local-nats` that `@forkd/testing` builds its three-node cluster from: one
 * nats-server process with a configuration of its own, the registry that stops what was started,
 * and the temp dirs a crashed run's successor removes; and the `x.y.z` parsing that
 * `scripts/with-node.ts` picks a Node release with. Outside semver.
 *
 * @example
 * ```ts
 * import { locateNatsServer } from "@forkd/local-nats";
 * import { makeTempDir, NatsProcess } from "@forkd/local-nats/internal";
 *
 * const location = await locateNatsServer({ mode: "binary" });
 * if (location.kind !== "binary") throw new Error("a cluster needs the binary");
 * const node = await NatsProcess.start({
 *   binary: location.path, name: "n1", dir: await makeTempDir("cluster"), ownsDir: true,
 *   baseConfig: "cluster { … }", config: "", args: [], startTimeoutMs: 10_000, stopGraceMs: 5_000,
 * });
 * ```
 * @module
 */
export type { NatsProcessSpec } from "./nats-process.js";
export { LOOPBACK, NatsProcess } from "./nats-process.js";
export { type PortReservation, RESERVED_PORT_RANGE, reservePort } from "./port-reservations.js";
export { isAtLeast, parseVersion, type Version } from "./provision/version.js";
export { trackStoppable, untrackStoppable, untrackTempDir } from "./registry.js";
export { makeTempDir } from "./temp-dirs.js";
