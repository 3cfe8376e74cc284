// @forkd/core: what a fork is, free of any transport. Cache-safe params and their hash, the forked
// request, the child directive, the recursion guard, tool filters, the turn loop, resume, events,
// task notifications, and the in-process fork.
export { describeAbortReason, raceAbort } from "./abort.js";
export type { AssistantTurnAction, ForkStopReason, ToolAnswer } from "./assistant-turn.js";
export {
  INTERRUPTED_TOOL_RESULT,
  nextAction,
  textOf,
  toolCallsOf,
  toolResultsMessage,
} from "./assistant-turn.js";
export type {
  BlockLocation,
  Breakpoint,
  MessageBlockLocation,
  PlaceBreakpointOptions,
} from "./breakpoints.js";
export {
  canCarryBreakpoint,
  lastBreakpointCandidate,
  listBreakpoints,
  MAX_CACHE_BREAKPOINTS,
  placeBreakpoint,
} from "./breakpoints.js";
export type { CacheBreakCheck } from "./cache-break.js";
export { detectCacheBreak } from "./cache-break.js";
export type { CacheKey, CacheLayer, CacheLayerHashes } from "./cache-key.js";
export {
  CACHE_KEY_VERSION,
  CACHE_LAYERS,
  canonicalCacheJson,
  computeCacheKey,
  firstChangedLayer,
} from "./cache-key.js";
export type { ForkPrefixOptions } from "./cache-safe-params.js";
export { createForkPrefix, snapshotCacheSafeParams } from "./cache-safe-params.js";
export type { Clock } from "./clock.js";
export { systemClock } from "./clock.js";
export type { DirectiveBlockOptions, ParsedDirectiveBlock, WorktreeMapping } from "./directive.js";
export {
  FORK_BOILERPLATE_OPENING,
  FORK_BOILERPLATE_RULES,
  FORK_BOILERPLATE_TAG,
  FORK_BOILERPLATE_VERSION,
  FORK_PLACEHOLDER_RESULT,
  FORK_REPORT_FORMAT,
  FORK_REPORT_MAX_WORDS,
  parseDirectiveBlock,
  renderDirectiveBlock,
  renderWorktreeNotice,
} from "./directive.js";
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
export type { DeltaBatchOptions, EventSequencerOptions } from "./events.js";
export { EventSequencer, LlmDeltaBatcher } from "./events.js";
export type { ForkRunInput, ForkRunPlan } from "./fork-run-plan.js";
export { prepareForkRun } from "./fork-run-plan.js";
export type { ForkHandle, ForkOutcome, ForkParams, ForkSubagent } from "./fork-subagent.js";
export type {
  ForkCallDescription,
  ForkToolAnswers,
  ForkToolBridgeOptions,
  LaunchedFork,
} from "./fork-tool-bridge.js";
export { describeForkCall, ForkToolBridge } from "./fork-tool-bridge.js";
export type { BuildForkedRequestOptions, ForkedRequest, ForkShape } from "./forked-request.js";
export {
  buildForkedRequest,
  DEFAULT_MAX_TOKENS,
  FORK_ACKNOWLEDGEMENT,
  placeholderToolResults,
} from "./forked-request.js";
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
  isForkQuerySource,
} from "./recursion-guard.js";
export { parseForkReport } from "./report.js";
export { findRequestProblems } from "./request-shape.js";
export type { LedgerEntry, PendingTurn, RebuildOptions, ResumeState, TurnUsage } from "./resume.js";
export { rebuildRunState } from "./resume.js";
export { newRunId } from "./run-id.js";
export { renderSystemReminder } from "./system-reminder.js";
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
export type { TerminalEventContext } from "./terminal.js";
export { forkOutcomeFromTerminalEvent, forkResultOf, outcomeToTerminalEvent } from "./terminal.js";
export type {
  PermissionAsker,
  PermissionDecision,
  ToolCall,
  ToolDispatcher,
  ToolExecutionContext,
  ToolOutcome,
} from "./tool-dispatcher.js";
export type {
  ConfinedPathFailureCode,
  ConfinedPathResult,
  ResolveConfinedPathOptions,
} from "./tools/path-confinement.js";
export { resolveConfinedPath } from "./tools/path-confinement.js";
export type {
  HostileShellClass,
  HostileShellPayload,
  ShellClassification,
  ShellCorpusEntry,
} from "./tools/shell/index.js";
export {
  classifyShellCommand,
  HOSTILE_SHELL_CORPUS,
  READ_ONLY_SHELL_COMMANDS,
  SHELL_CORPUS,
  splitShellWords,
} from "./tools/shell/index.js";
export type {
  MemoryToolFilterOptions,
  ToolDenialCode,
  ToolFilter,
  ToolFilterContext,
  ToolFilterDecision,
  ToolFilterDenial,
} from "./tools/tool-filter.js";
export {
  ARGUMENT_ENVELOPE_KEYS,
  allowAllTools,
  allowListTools,
  denialToolResultText,
  MEMORY_READ_TOOLS,
  MEMORY_SHELL_TOOL,
  MEMORY_WRITE_TOOLS,
  memoryToolFilter,
  toolFilterFromSpec,
} from "./tools/tool-filter.js";
export type { TurnLoopOptions, TurnLoopOutcome, TurnLoopPermissions, TurnLoopStats } from "./turn-loop.js";
export {
  DEFAULT_FORK_TOOL_NAMES,
  DEFAULT_MAX_TURNS,
  DEFAULT_PERMISSION_TIMEOUT_MS,
  runTurnLoop,
} from "./turn-loop.js";
export {
  addUsageTotals,
  promptTokensOf,
  tokenCountsOf,
  totalTokensOf,
  UsageAccumulator,
  usagePricer,
} from "./usage.js";
export { escapeXml, unescapeXml } from "./xml.js";
