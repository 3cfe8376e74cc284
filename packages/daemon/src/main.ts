#!/usr/bin/env node
// `forkd-daemon`: the daemon as a process, configured by flags, environment and an optional file.
import { DaemonConfigError, loadDaemonConfig } from "./config.js";
import { runDaemonProcess } from "./run-daemon.js";

try {
  const config = loadDaemonConfig({ argv: process.argv.slice(2) });
  process.exitCode = await runDaemonProcess(config);
  process.exit();
} catch (error) {
  const verbose = process.argv.includes("--verbose");
  process.stderr.write(
    `forkd-daemon: ${error instanceof DaemonConfigError || !verbose ? (error as Error).message : (error as Error).stack}\n`,
  );
  process.exit(error instanceof DaemonConfigError ? 2 : 1);
}
