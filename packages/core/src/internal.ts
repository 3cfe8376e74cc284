// @forkd/core/internal: what forkd's own packages and tests need of @forkd/core beyond its public
// API (see index.ts). Not covered by semver; applications import from @forkd/core.
export { describeAbortReason, raceAbort } from "./abort.js";
export type { AssistantTurnAction, ToolAnswer } from "./assistant-turn.js";
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
export { CACHE_KEY_VERSION, CACHE_LAYERS, canonicalCacheJson } from "./cache-key.js";
export type { DirectiveBlockOptions, ParsedDirectiveBlock } from "./directive.js";
export {
  FORK_BOILERPLATE_OPENING,
  FORK_BOILERPLATE_RULES,
  FORK_BOILERPLATE_TAG,
  FORK_BOILERPLATE_VERSION,
  FORK_REPORT_FORMAT,
  FORK_REPORT_MAX_WORDS,
  parseDirectiveBlock,
  renderDirectiveBlock,
  renderWorktreeNotice,
} from "./directive.js";
export type { DeltaBatchOptions, EventSequencerOptions } from "./events.js";
export { EventSequencer, LlmDeltaBatcher } from "./events.js";
export type { ForkRunInput, ForkRunPlan } from "./fork-run-plan.js";
export { prepareForkRun } from "./fork-run-plan.js";
export { placeholderToolResults } from "./forked-request.js";
export { isForkQuerySource } from "./recursion-guard.js";
export type { LedgerEntry, PendingTurn, RebuildOptions, ResumeState, TurnUsage } from "./resume.js";
export { rebuildRunState } from "./resume.js";
export { isSealedValue, sealSharedPrefix } from "./shared-prefix.js";
export { renderSystemReminder } from "./system-reminder.js";
export type { TerminalEventContext } from "./terminal.js";
export { forkOutcomeFromTerminalEvent, forkResultOf, outcomeToTerminalEvent } from "./terminal.js";
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
export { ARGUMENT_ENVELOPE_KEYS, toolFilterFromSpec } from "./tools/tool-filter.js";
export type { TurnLoopOptions, TurnLoopPermissions, TurnLoopStats } from "./turn-loop.js";
export { DEFAULT_MAX_TURNS, DEFAULT_PERMISSION_TIMEOUT_MS, runTurnLoop } from "./turn-loop.js";
export { promptTokensOf, usagePricer } from "./usage.js";
export {
  stringifyWithVerbatim,
  tieVerbatimTexts,
  type VerbatimApi,
  verbatimValuesOf,
} from "./verbatim-values.js";
export { escapeXml, unescapeXml } from "./xml.js";
