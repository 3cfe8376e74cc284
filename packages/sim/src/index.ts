export type { Breakpoint, CachePlan, CacheWrite, PromptCacheOptions, PromptCacheStats } from "./cache.js";
export {
  LOOKBACK_BLOCKS,
  MAX_BREAKPOINTS,
  PromptCache,
  prefixKeys,
  resolveBreakpoints,
  TTL_MS,
} from "./cache.js";
export type { Clock } from "./clock.js";
export { hiResNow, ManualClock, systemClock } from "./clock.js";
export type { ApiErrorBody, ApiErrorType, SimErrorCode } from "./errors.js";
export {
  apiErrorBody,
  errorTypeOfStatus,
  SimApiError,
  SimError,
  SimOptionsError,
  statusOfErrorType,
} from "./errors.js";
export type { FaultRateOptions, FaultSpec } from "./faults.js";
export { describeFault, FaultInjector, mulberry32, parseFault } from "./faults.js";
export type { RequestLogEntry, RequestLogOptions, RequestTotals } from "./log.js";
export { RequestLog, requestBodyBytes } from "./log.js";
export type { ModelReply } from "./model.js";
export { fillerText, runScriptedModel } from "./model.js";
export {
  OPENAI_CACHE_STEP_TOKENS,
  OPENAI_IDLE_TTL_MS,
  OPENAI_MACHINE_RATE_PER_MINUTE,
  OPENAI_MIN_CACHED_TOKENS,
  OPENAI_ROUTING_TOKENS,
  OpenAiPromptCache,
} from "./openai/openai-cache.js";
export { openAiApiOf, openAiBreakpointUnits, renderOpenAiPrompt } from "./openai/openai-route.js";
export type { BlockTokenCount, PromptBlock, PromptLayout, Segment, TokenCount } from "./prompt.js";
export { countTokens, layoutPrompt } from "./prompt.js";
export type { Script, ScriptToolCall, ScriptTurn } from "./script.js";
export { parseScript } from "./script.js";
export type {
  AcceptedEvent,
  DisconnectEvent,
  FirstByteEvent,
  LatencyOptions,
  Sim,
  SimEvents,
  SimFaultOptions,
  SimOptions,
  SimStats,
} from "./server.js";
export { startSim } from "./server.js";
export type { Frame, FrameOptions } from "./sse.js";
export { messageFrames, sseEvent } from "./sse.js";
export {
  BLOCK_OVERHEAD_TOKENS,
  blockTokens,
  CHARS_PER_TOKEN,
  countTextTokens,
  MESSAGE_OVERHEAD_TOKENS,
  REQUEST_OVERHEAD_TOKENS,
  renderBlock,
  renderTool,
} from "./tokenizer.js";
export type {
  CacheControl,
  CacheCreationUsage,
  CacheTtl,
  ContentBlock,
  InputUsage,
  Message,
  MessageResponse,
  MessagesRequest,
  OtherBlock,
  OutputBlock,
  StopReason,
  ThinkingConfig,
  ToolChoice,
  ToolDefinition,
  Usage,
} from "./types.js";
export { validateRequest } from "./validate.js";
