// @forkd/daemon/internal: what forkd's own packages and tests need of @forkd/daemon beyond its public
// API (see index.ts). Not covered by semver; applications import from @forkd/daemon.
export type { CallLimitSettings, CallLimitsOptions } from "./call-limits.js";
export { CallLimits } from "./call-limits.js";
export { secretFilesOf, secretsOfConfig } from "./config-secrets.js";
export { BUILTIN_TOOL_DEFINITIONS, DEFAULT_SYSTEM_PROMPT, defaultForkParams } from "./default-request.js";
export type { EventLogPosition, RunEventPublisherOptions } from "./event-publisher.js";
export { RunEventPublisher } from "./event-publisher.js";
export type { ForkRunOptions, RunTools, RunToolsFactory } from "./fork-run.js";
export { executeForkRun } from "./fork-run.js";
export { handleMaxDeliveries } from "./max-deliveries.js";
export { natsPermissionAsker, toolHostDispatcher } from "./remote-tools.js";
export type { ActiveRun, RunContext, RunExecutorDeps } from "./run-executor.js";
export { RunExecutor } from "./run-executor.js";
export { daemonRunTools, requireSandbox } from "./run-tools.js";
export { MAX_BASH_TIMEOUT_MS, minimalShellEnv } from "./tools/bash.js";
export type { PathAlias } from "./tools/context.js";
export { recursionRefusal } from "./tools/dispatcher.js";
export { sandboxedShell } from "./tools/sandbox.js";
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
export { createRunWorktree, WORKTREE_BRANCH_PREFIX } from "./tools/worktree.js";
