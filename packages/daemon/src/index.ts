/**
 * The forkd worker: pulls fork specs from NATS, claims them, runs the child's turn loop with its
 * tools and publishes its events, fenced. Its building blocks (the run executor, the event
 * publisher, the sandbox, worktrees) are in `@forkd/daemon/internal`.
 *
 * @example
 * ```ts
 * import { loadDaemonConfig, startDaemon } from "@forkd/daemon";
 *
 * const daemon = await startDaemon(loadDaemonConfig({ argv: ["--concurrency", "8"] }));
 * process.on("SIGTERM", () => void daemon.stop());
 * ```
 * @module
 */
export type { DaemonConfig, DaemonConfigInput } from "./config.js";
export { DAEMON_FLAGS, DaemonConfigError, DaemonConfigSchema, loadDaemonConfig } from "./config.js";
export type { DaemonState, ForkDaemonOptions } from "./daemon.js";
export { ForkDaemon } from "./daemon.js";
export type { DaemonErrorCode } from "./errors.js";
export { DaemonError } from "./errors.js";
export type { DaemonLogger } from "./logger.js";
export {
  createDaemonLogger,
  createProcessLogger,
  LOG_FORMATS,
  LOG_LEVELS,
  type LogFormat,
} from "./logger.js";
export type { DaemonMetrics } from "./metrics.js";
export { createDaemonMetrics, serveMetrics } from "./metrics.js";
export { connectNats, natsConnectionOptions } from "./nats-connection.js";
export { redactCredentials } from "./redact.js";
export type { RunningDaemon } from "./run-daemon.js";
export { runDaemonProcess, startDaemon } from "./run-daemon.js";
export type { BashPolicy } from "./tools/bash.js";
export type { BuiltinToolDispatcherOptions, BuiltinToolName } from "./tools/dispatcher.js";
export { BUILTIN_TOOL_NAMES, createBuiltinToolDispatcher } from "./tools/dispatcher.js";
export type { Sandbox, SandboxMode } from "./tools/sandbox.js";
export { probeSandbox } from "./tools/sandbox.js";
export { WorktreeError } from "./tools/worktree.js";
