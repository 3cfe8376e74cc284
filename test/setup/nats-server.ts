// Vitest global setup: find (or install, once) the nats-server every integration, e2e and fault
// test starts, bubblewrap, which daemons run Bash in, and Debian's chromium, which the web view's
// browser tests drive headless, before any test file runs. Without them
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
  // The web view is tested in a real browser (test/web): the system's chromium, driven by
  // playwright-core. The path reaches the workers through `CHROMIUM_BIN`.
  const chromium = await ensureProgram("chromium", "chromium");
  if ("missing" in chromium) {
    throw new Error(`the web view's browser tests run chromium, and ${chromium.missing}; install chromium`);
  }
  process.env.CHROMIUM_BIN = chromium.path;
}
