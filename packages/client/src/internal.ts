// @forkd/client/internal: what forkd's own packages and tests need of @forkd/client beyond its public
// API (see index.ts). Not covered by semver; applications import from @forkd/client.
export { readStoredEvents } from "./event-log.js";
export { isAlreadyExists, isStorageFull, isWrongLastSequence } from "./jetstream-errors.js";
export type { PrefixMeta } from "./prefix-collection.js";
export {
  COLLECTING_HEADER,
  collectUnusedPrefixes,
  confirmPrefix,
  deleteMarkedPrefix,
  markUnusedPrefixes,
  readPrefixMeta,
  referencedPrefixes,
} from "./prefix-collection.js";
export type { StoredPrefixRef } from "./prefix-encoding.js";
export { encodeStoredPrefix } from "./prefix-encoding.js";
export { downloadPrefix, PrefixCache, uploadPrefix, uploadPrefixBytes } from "./prefix-store.js";
export { readStoredSpec, runsKeySubject } from "./registry-index.js";
export type { ResolvedForkResourceOptions } from "./resource-options.js";
export { resolveResourceOptions } from "./resource-options.js";
export type { RunStateMutation } from "./run-registry.js";
export { createRunEntry, updateRunState } from "./run-registry.js";
export { type EventHint, eventHint } from "./terminal-watch.js";
