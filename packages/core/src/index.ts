/**
 * What a fork is, free of any transport: cache-safe params and their hash, the child's request, the
 * directive, the recursion guard, tool filters, pricing, task notifications and the in-process fork.
 * The turn loop, resume and the shell classifier that runners build on are in `@forkd/core/internal`.
 *
 * @example
 * ```ts
 * import { createForkPrefix, InProcessForkSubagent } from "@forkd/core";
 *
 * const prefix = createForkPrefix(lastRequest, lastReply, { betas });
 * const forks = new InProcessForkSubagent({ llm, dispatcherFactory });
 * const outcome = await forks.forkAndWait({ prefix, directive: "Check the tests.", parent: { agent_id: "me" } });
 * ```
 * @module
 */
export type { ForkStopReason } from "./assistant-turn.js";
export type { CacheBreakCheck, CacheBreakContext } from "./cache-break.js";
export { CACHE_MISS_TOLERANCE, cacheMissCost, detectCacheBreak } from "./cache-break.js";
export type { DiagnosedRequest, DiagnosisLayer, DiagnosisLayerHashes } from "./cache-diagnosis.js";
export {
  DIAGNOSIS_LAYERS,
  diagnosisLayersOf,
  firstDifferingLayer,
  inheritedMessages,
} from "./cache-diagnosis.js";
export type { CacheKey, CacheLayer, CacheLayerHashes } from "./cache-key.js";
export { computeCacheKey, firstChangedLayer } from "./cache-key.js";
export type { ForkPrefixOptions } from "./cache-safe-params.js";
export { createForkPrefix, snapshotCacheSafeParams } from "./cache-safe-params.js";
export type { Clock } from "./clock.js";
export { systemClock } from "./clock.js";
export type { WorktreeMapping } from "./directive.js";
export { FORK_PLACEHOLDER_RESULT } from "./directive.js";
export type { CoreErrorCode, RecursionGuardCheck } from "./errors.js";
export {
  CoreError,
  EventLogError,
  InternalError,
  InvalidForkParamsError,
  InvalidPrefixError,
  InvalidPricingError,
  NotificationParseError,
  RecursionGuardError,
  RunTimeoutError,
  WorkspaceError,
} from "./errors.js";
export type { ForkHandle, ForkOutcome, ForkParams, ForkSubagent } from "./fork-subagent.js";
export type {
  ForkCallDescription,
  ForkToolAnswers,
  ForkToolBridgeOptions,
  LaunchedFork,
} from "./fork-tool-bridge.js";
export { describeForkCall, ForkToolBridge } from "./fork-tool-bridge.js";
export type { BuildForkedRequestOptions, ForkedRequest, ForkShape } from "./forked-request.js";
export { buildForkedRequest, DEFAULT_MAX_TOKENS, FORK_ACKNOWLEDGEMENT } from "./forked-request.js";
export * from "./gemini/index.js";
export type {
  DefaultForkRequest,
  DispatcherContext,
  InProcessForkOptions,
  ToolDispatcherFactory,
  WorktreeFactory,
} from "./in-process-fork.js";
export { InProcessForkHandle, InProcessForkSubagent } from "./in-process-fork.js";
export type {
  LlmCallOptions,
  LlmClient,
  LlmErrorCode,
  LlmRequest,
  LlmResponse,
  LlmStreamEvent,
} from "./llm-client.js";
export { LlmError } from "./llm-client.js";
export type { LogFn, Logger } from "./logger.js";
export { silentLogger } from "./logger.js";
export * from "./openai/index.js";
export type { ModelPricing, PricingTable, TokenCounts } from "./pricing.js";
export {
  CACHE_READ_MULTIPLIER,
  CACHE_WRITE_1H_MULTIPLIER,
  CACHE_WRITE_5M_MULTIPLIER,
  costOfTokens,
  createPricingTable,
  DEFAULT_MODEL_PRICING,
  defaultPricingTable,
  readPricingFile,
} from "./pricing.js";
export type { ForkMarkerMatch, RecursionCheck, RecursionGuardInput } from "./recursion-guard.js";
export {
  assertMayFork,
  checkForkRecursion,
  FORK_QUERY_SOURCE_PREFIX,
  findForkMarker,
  forkQuerySource,
} from "./recursion-guard.js";
export { parseForkReport } from "./report.js";
export { findRequestProblems } from "./request-shape.js";
export { newRunId } from "./run-id.js";
export type {
  NotificationContext,
  TaskNotification,
  TaskNotificationStatus,
  TaskNotificationUsage,
} from "./task-notification.js";
export {
  parseTaskNotification,
  renderTaskNotification,
  taskNotificationFromOutcome,
  taskNotificationMessage,
} from "./task-notification.js";
export type {
  PermissionAsker,
  PermissionDecision,
  ToolCall,
  ToolDispatcher,
  ToolExecutionContext,
  ToolOutcome,
} from "./tool-dispatcher.js";
export type {
  MemoryToolFilterOptions,
  ToolDenialCode,
  ToolFilter,
  ToolFilterContext,
  ToolFilterDecision,
  ToolFilterDenial,
} from "./tools/tool-filter.js";
export {
  allowAllTools,
  allowListTools,
  denialToolResultText,
  MEMORY_READ_TOOLS,
  MEMORY_SHELL_TOOL,
  MEMORY_WRITE_TOOLS,
  memoryToolFilter,
} from "./tools/tool-filter.js";
export type { SteeringMessage, TurnAdmission, TurnBoundary } from "./turn-boundary.js";
export { withSteering } from "./turn-boundary.js";
export type { TurnLoopOutcome } from "./turn-loop.js";
export { DEFAULT_FORK_TOOL_NAMES } from "./turn-loop.js";
export { addUsageTotals, tokenCountsOf, totalTokensOf, UsageAccumulator } from "./usage.js";
