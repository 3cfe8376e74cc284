/**
 * The wire protocol of forkd: subjects and resource names, the zod schemas of every message (and
 * their JSON Schemas), the hardened codec, size limits, registry entries, model facts and the error
 * base every package's errors extend. The control-proof helpers and codec internals the daemon and
 * client share are in `@forkd/protocol/internal`.
 *
 * @example
 * ```ts
 * import { forkEventCodec, forkSubjects } from "@forkd/protocol";
 *
 * const subjects = forkSubjects("agent");
 * nc.subscribe(subjects.allEvents, { callback: (_e, m) => console.log(forkEventCodec.decode(m.data).type) });
 * ```
 * @module
 */
export type {
  AssistantMessage,
  CacheControl,
  CacheSafeParams,
  ContentBlock,
  MessageParam,
  ProviderUsage,
  SystemPrompt,
  TextBlock,
  ToolDefinition,
  ToolResultBlock,
  ToolUseBlock,
} from "./anthropic.js";
export {
  AssistantMessageSchema,
  BetasSchema,
  CacheControlSchema,
  CacheSafeParamsSchema,
  ContentBlockSchema,
  MessageParamSchema,
  ProviderUsageSchema,
  SystemPromptSchema,
  TextBlockSchema,
  ToolDefinitionSchema,
  ToolResultBlockSchema,
  ToolUseBlockSchema,
} from "./anthropic.js";
export type { Codec, ForkSpecOwnership } from "./codec.js";
export {
  abortRequestCodec,
  callSlotsCodec,
  createForkSpecCodec,
  daemonInfoCodec,
  daemonPresenceCodec,
  decodeSpecOwnership,
  forkEventCodec,
  forkPrefixCodec,
  forkSpecCodec,
  geminiCacheEntryCodec,
  groupBudgetCodec,
  groupSpendCodec,
  permissionRequestCodec,
  permissionResponseCodec,
  providerThrottleCodec,
  retentionLeaseCodec,
  runStateCodec,
  steerReplyCodec,
  steerRequestCodec,
  toolHostRequestCodec,
  toolHostResponseCodec,
} from "./codec.js";
export type {
  AbortRequest,
  AbortRequestInput,
  PermissionRequest,
  PermissionResponse,
  SteerReply,
  SteerRequest,
  StopMode,
  ToolHostRequest,
  ToolHostResponse,
} from "./control.js";
export {
  AbortRequestSchema,
  CONTROL_REPEAT_HEADER,
  PermissionRequestSchema,
  PermissionResponseSchema,
  SteerReplySchema,
  SteerRequestSchema,
  StopModeSchema,
  ToolHostRequestSchema,
  ToolHostResponseSchema,
} from "./control.js";
export type { ProtocolErrorCode, ProtocolErrorJSON } from "./errors.js";
export {
  ForkdError,
  isProtocolErrorCode,
  PROTOCOL_ERROR_CODES,
  ProtocolError,
  toWireError,
} from "./errors.js";
export type {
  ForkEvent,
  ForkEventBody,
  ForkEventEnvelope,
  ForkEventOf,
  ForkEventType,
  ForkReport,
  ForkResult,
  ProviderCacheMissReason,
  TerminalForkEvent,
  WireError,
} from "./events.js";
export {
  AbortedEventSchema,
  AcceptedEventSchema,
  CacheBreakEventSchema,
  CompletedEventSchema,
  FailedEventSchema,
  FORK_EVENT_TYPES,
  ForkEventEnvelopeSchema,
  ForkEventSchema,
  ForkReportSchema,
  ForkResultSchema,
  HeartbeatEventSchema,
  isForkEventType,
  isTerminalEvent,
  isTerminalEventType,
  LlmDeltaEventSchema,
  LlmMessageEventSchema,
  LlmRequestEventSchema,
  PausedEventSchema,
  PermissionRequestedEventSchema,
  PermissionResolvedEventSchema,
  ProviderCacheMissReasonSchema,
  ResumedEventSchema,
  StartedEventSchema,
  SteeredEventSchema,
  TERMINAL_EVENT_TYPES,
  ToolCallEventSchema,
  ToolDeniedEventSchema,
  ToolResultEventSchema,
  WireErrorSchema,
} from "./events.js";
export { protocolJsonSchemas } from "./json-schema.js";
export {
  INLINE_PREFIX_THRESHOLD_BYTES,
  MAX_CONTROL_BYTES,
  MAX_EVENT_BYTES,
  MAX_JSON_DEPTH,
  MAX_PREFIX_BYTES,
  MAX_RUN_ID_LENGTH,
  MAX_SPEC_BYTES,
} from "./limits.js";
export type { ModelFacts, ThinkingSupport } from "./model-facts.js";
export {
  CONTEXT_1M_BETA,
  contextWindowTokens,
  DEFAULT_CONTEXT_WINDOW_TOKENS,
  DEFAULT_MIN_CACHEABLE_TOKENS,
  GEMINI_EXPLICIT_CACHE_TTL_SECONDS,
  MODEL_FACTS,
  minCacheableTokens,
  modelFacts,
} from "./model-facts.js";
export type {
  CallSlots,
  DaemonInfo,
  DaemonPresence,
  GeminiCacheEntry,
  GroupBudget,
  GroupSpend,
  ProviderThrottleNotice,
  QueuedRunInit,
  RetentionLease,
  RunState,
  RunStatus,
} from "./registry.js";
export {
  CallSlotsSchema,
  DaemonInfoSchema,
  DaemonPresenceSchema,
  GeminiCacheEntrySchema,
  GroupBudgetSchema,
  GroupSpendSchema,
  groupBudgetKey,
  groupSpendKey,
  isTerminalRunStatus,
  ProviderThrottleSchema,
  queuedRunState,
  RETENTION_LEASE_KEY,
  RetentionLeaseSchema,
  RunStateSchema,
  RunStatusSchema,
  TERMINAL_RUN_STATUSES,
} from "./registry.js";
export type {
  CacheLeader,
  ForkCall,
  ForkPrefix,
  ForkSpec,
  ForkSpecInput,
  Isolation,
  Limits,
  LlmApi,
  NativePrefix,
  Overrides,
  ParentIdentity,
  PermissionPolicy,
  PrefixSource,
  ProviderSpec,
  ToolFilterSpec,
  ToolHostRef,
  TraceContext,
  VerbatimValue,
} from "./spec.js";
export {
  CacheLeaderSchema,
  DEFAULT_CACHE_LEADER_WAIT_MS,
  EpochMsSchema,
  ForkCallSchema,
  ForkPrefixSchema,
  ForkSpecSchema,
  IsolationSchema,
  LimitsSchema,
  LlmApiSchema,
  MAX_CACHE_LEADER_WAIT_MS,
  NativePrefixSchema,
  OverridesSchema,
  ParentIdentitySchema,
  PermissionPolicySchema,
  PROTOCOL_VERSION,
  PrefixSourceSchema,
  ProviderSpecSchema,
  RunIdSchema,
  Sha256HexSchema,
  ToolFilterSpecSchema,
  ToolHostRefSchema,
  TraceContextSchema,
  VerbatimValueSchema,
} from "./spec.js";
export type { ForkSubjects } from "./subjects.js";
export {
  assertValidRunId,
  DAEMON_INBOX_PREFIX,
  DEFAULT_SUBJECT_PREFIX,
  eventMsgId,
  forkSubjects,
  isValidRunId,
  RUN_ID_PATTERN,
} from "./subjects.js";
export type { UsageTotals } from "./usage.js";
export { emptyUsageTotals, UsageTotalsSchema } from "./usage.js";
