/**
 * The parent's side of forkd over NATS: fork children onto a cluster of daemons, fan out
 * warm-first, follow their events, abort them, and serve tools the children call back.
 *
 * @example
 * ```ts
 * import { NatsForkSubagent } from "@forkd/client";
 * import { createForkPrefix } from "@forkd/core";
 *
 * const forks = await NatsForkSubagent.create(nc);
 * const prefix = createForkPrefix(lastRequest, lastReply);
 * const handle = forks.fork({ prefix, directive: "Check the tests.", parent: { agent_id: "me" } });
 * for await (const event of handle.events()) console.log(event.type);
 * ```
 * @module
 */
export type { ClientErrorCode } from "./errors.js";
export { ClientError } from "./errors.js";
export type { LoggedEvent, ReadEventLogOptions } from "./event-log.js";
export { lastLoggedEvent, readEventLog } from "./event-log.js";
export { ForkGroup } from "./fork-group.js";
export type {
  FanOutChild,
  FanOutOptions,
  NatsForkSubagentOptions,
  PermissionHandler,
} from "./nats-fork-subagent.js";
export { NatsForkHandle, NatsForkSubagent } from "./nats-fork-subagent.js";
export { QUEUED_REGISTRATION_DELAY_MS } from "./queued-registration.js";
export {
  bucketKeys,
  groupIndexKey,
  liveRunIds,
  liveRuns,
  newestRuns,
  parentIndexKey,
  parentToken,
  runsOfGroup,
  runsOfParent,
} from "./registry-index.js";
export type { ForkResourceOptions } from "./resource-options.js";
export type { ForkResources } from "./resources.js";
export { ensureForkResources } from "./resources.js";
export type { RetentionLeaseTerms, SweepResult } from "./retention.js";
export {
  holdRetentionLease,
  isExpiredRun,
  readRetentionLease,
  releaseRetentionLease,
  removeFinishedRun,
  sweepFinishedRuns,
} from "./retention.js";
export type { RunStateEntry } from "./run-registry.js";
export { getRunState } from "./run-registry.js";
export {
  type AwaitTerminalEventOptions,
  awaitTerminalEvent,
  type LoggedTerminalEvent,
  TERMINAL_HINTS_FOR_MS,
} from "./terminal-event.js";
export type { ServeToolsOptions, ToolHandler, ToolHost } from "./tool-host.js";
export { serveTools } from "./tool-host.js";
