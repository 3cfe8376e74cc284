#!/usr/bin/env node
// `forkd-daemon`: the daemon as a process, configured by flags, environment and an optional file.
import { DaemonConfigError, loadDaemonConfig } from "./config.js";
import { redactCredentials } from "./redact.js";
import { runDaemonProcess } from "./run-daemon.js";

try {
  const argv = process.argv.slice(2);
  if (argv.some((arg) => arg === "--nats-pass" || arg.startsWith("--nats-pass="))) {
    process.stderr.write(
      "forkd-daemon: warning: --nats-pass is visible to every user in the process list; use NATS_PASSWORD or --nats-pass-file\n",
    );
  }
  const config = loadDaemonConfig({ argv });
  process.exitCode = await runDaemonProcess(config);
  process.exit();
} catch (error) {
  const verbose = process.argv.includes("--verbose");
  const text =
    error instanceof DaemonConfigError || !verbose ? (error as Error).message : (error as Error).stack;
  process.stderr.write(`forkd-daemon: ${redactCredentials(String(text))}\n`);
  process.exit(error instanceof DaemonConfigError ? 2 : 1);
}
