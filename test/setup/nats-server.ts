// Vitest global setup: find (or install, once) the nats-server every integration, e2e and fault
// test starts, and bubblewrap, which daemons run Bash in, before any test file runs. Without them
// the run fails here, once, with the error that lists each route tried, instead of as one failure
// per test that needed them.
import { ensureProgram, locateNatsServer } from "@forkd/local-nats";

/** Resolves the server and hands its path to the test workers through `NATS_SERVER_BIN`. */
export default async function setup(): Promise<void> {
  const location = await locateNatsServer();
  // Workers are spawned after this and inherit the environment: no test resolves again.
  if (location.kind === "binary") process.env.NATS_SERVER_BIN = location.path;
  // Daemons with Bash on refuse to start without their sandbox: install bubblewrap the same way.
  const bwrap = await ensureProgram("bwrap", "bubblewrap");
  if ("missing" in bwrap) {
    throw new Error(
      `the test suite's daemons run Bash in bubblewrap, and ${bwrap.missing}; install bubblewrap`,
    );
  }
}
