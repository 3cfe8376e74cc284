// Vitest global setup: find (or install, once) the nats-server every integration, e2e and fault
// test starts, before any test file runs. Without one, the run fails here, once, with the error
// that lists each route tried, instead of as one failure per test that needed a server.
import { locateNatsServer } from "@forkd/testing";

/** Resolves the server and hands its path to the test workers through `NATS_SERVER_BIN`. */
export default async function setup(): Promise<void> {
  const location = await locateNatsServer();
  // Workers are spawned after this and inherit the environment: no test resolves again.
  if (location.kind === "binary") process.env.NATS_SERVER_BIN = location.path;
}
