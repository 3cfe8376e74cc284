// @forkd/client: the parent side of forkd over NATS.
export type { ClientErrorCode } from "./errors.js";
export { ClientError } from "./errors.js";
export type { LoggedEvent, ReadEventLogOptions } from "./event-log.js";
export { lastLoggedEvent, readEventLog, readStoredEvents } from "./event-log.js";
export type {
  ClientLogger,
  FanOutChild,
  FanOutOptions,
  NatsForkSubagentOptions,
  PermissionHandler,
} from "./nats-fork-subagent.js";
export { NatsForkHandle, NatsForkSubagent } from "./nats-fork-subagent.js";
export type { StoredPrefixRef } from "./prefix-store.js";
export {
  downloadPrefix,
  encodeStoredPrefix,
  PrefixCache,
  uploadPrefix,
  uploadPrefixBytes,
} from "./prefix-store.js";
export type { ForkResourceOptions, ForkResources, ResolvedForkResourceOptions } from "./resources.js";
export { ensureForkResources, resolveResourceOptions } from "./resources.js";
export type { RunStateEntry, RunStateMutation } from "./run-registry.js";
export { getRunState, isStorageFull, isWrongLastSequence, updateRunState } from "./run-registry.js";
export type { ServeToolsOptions, ToolHandler, ToolHost } from "./tool-host.js";
export { serveTools } from "./tool-host.js";
