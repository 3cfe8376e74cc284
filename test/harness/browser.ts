// The system's chromium (Debian's `chromium`, found or installed once by the test suite's global
// setup), driven headless by playwright-core: for the web view's tests and benchmark.
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/** Where chromium is: `CHROMIUM_BIN` (set by the global setup), else Debian's path. */
export function chromiumPath(): string {
  const path = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
  if (!existsSync(path)) {
    throw new Error(
      `no chromium at ${path}: the test suite's global setup installs it (apt-get install chromium)`,
    );
  }
  return path;
}

/**
 * Launches headless chromium. As root (CI containers) chromium refuses to start with its sandbox on,
 * so `--no-sandbox` is passed then; the page it loads is our own, from loopback.
 */
export function launchChromium(): Promise<Browser> {
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      ...(root ? ["--no-sandbox"] : []),
      // No GPU in CI; /dev/shm is small in containers.
      "--disable-gpu",
      "--disable-dev-shm-usage",
      // Timers in a background tab are not throttled (the page renders once a frame).
      "--disable-background-timer-throttling",
      "--disable-renderer-backgrounding",
    ],
  });
}
