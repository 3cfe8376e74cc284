// @forkd/daemon: the forkd worker.
export type { DaemonConfig, DaemonConfigInput } from "./config.js";
export { DAEMON_FLAGS, DaemonConfigError, DaemonConfigSchema, loadDaemonConfig } from "./config.js";
export { secretFilesOf, secretsOfConfig } from "./config-secrets.js";
export type { DaemonState, ForkDaemonOptions } from "./daemon.js";
export { ForkDaemon } from "./daemon.js";
export { BUILTIN_TOOL_DEFINITIONS, DEFAULT_SYSTEM_PROMPT, defaultForkParams } from "./default-request.js";
export type { DaemonErrorCode } from "./errors.js";
export { DaemonError } from "./errors.js";
export type { EventLogPosition, RunEventPublisherOptions } from "./event-publisher.js";
export { RunEventPublisher } from "./event-publisher.js";
export type { ForkRunOptions, RunTools, RunToolsFactory } from "./fork-run.js";
export { executeForkRun } from "./fork-run.js";
export type { DaemonLogger } from "./logger.js";
export { createDaemonLogger } from "./logger.js";
export type { DaemonMetrics } from "./metrics.js";
export { createDaemonMetrics, serveMetrics } from "./metrics.js";
export { connectNats, natsConnectionOptions } from "./nats-connection.js";
export { redactCredentials } from "./redact.js";
export { natsPermissionAsker, toolHostDispatcher } from "./remote-tools.js";
export type { RunningDaemon } from "./run-daemon.js";
export { runDaemonProcess, startDaemon } from "./run-daemon.js";
export type { ActiveRun, RunContext, RunExecutorDeps } from "./run-executor.js";
export { RunExecutor } from "./run-executor.js";
export { daemonRunTools, requireSandbox } from "./run-tools.js";
export type { BashPolicy } from "./tools/bash.js";
export { MAX_BASH_TIMEOUT_MS, minimalShellEnv } from "./tools/bash.js";
export type { PathAlias } from "./tools/context.js";
export type { BuiltinToolDispatcherOptions, BuiltinToolName } from "./tools/dispatcher.js";
export {
  BUILTIN_TOOL_NAMES,
  createBuiltinToolDispatcher,
  recursionRefusal,
} from "./tools/dispatcher.js";
export type { Sandbox, SandboxMode } from "./tools/sandbox.js";
export { probeSandbox, sandboxedShell } from "./tools/sandbox.js";
export type { NamedSecret } from "./tools/secrets.js";
export { daemonSecrets, registerDaemonSecrets, scrubSecrets, secretsOf } from "./tools/secrets.js";
export type {
  CommitAuthor,
  CreateRunWorktreeOptions,
  RunWorktree,
  WorktreeCommit,
  WorktreeCwdMapping,
  WorktreeOperation,
} from "./tools/worktree.js";
export { createRunWorktree, WORKTREE_BRANCH_PREFIX, WorktreeError } from "./tools/worktree.js";
