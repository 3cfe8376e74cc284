// One spec through the core: rebuild the child's request, resume from earlier attempts' events,
// run the turn loop with the run's tools, filter and permissions, and say how it ended.
import { join, resolve } from "node:path";
import {
  assertMayFork,
  forkPrefixFromNative,
  type LlmClient,
  type ToolDispatcher,
  type TurnBoundary,
  type WorktreeMapping,
} from "@forkd/core";
import {
  outcomeToTerminalEvent,
  prepareForkRun,
  rebuildRunState,
  runTurnLoop,
  toolFilterFromSpec,
} from "@forkd/core/internal";
import type { GeminiLlmClient } from "@forkd/llm";
import type {
  ForkEvent,
  ForkEventBody,
  ForkPrefix,
  ForkSpec,
  ForkSubjects,
  LlmApi,
  UsageTotals,
} from "@forkd/protocol";
import type { NatsConnection } from "@nats-io/transport-node";
import type { DaemonConfig } from "./config.js";
import { defaultForkParams } from "./default-request.js";
import { DaemonError } from "./errors.js";
import { type OpenAiClients, runApi, runLlmClient } from "./llm-providers.js";
import type { DaemonLogger } from "./logger.js";
import type { DaemonMetrics } from "./metrics.js";
import { natsPermissionAsker } from "./remote-tools.js";

/** The tools of one run. */
export interface RunTools {
  dispatcher: ToolDispatcher;
  /** Working directory of the run (inside the workspace or the run's worktree). */
  cwd: string;
  /** Set when the run has a worktree: notice for the directive and the commit at the end. */
  worktree?: {
    mapping: WorktreeMapping;
    commit(message: string): Promise<{ sha: string; branch: string; files_changed: string[] } | null>;
    dispose(): Promise<void>;
  };
}

/** Makes the tools of one run (built-in tools confined to the workspace, tool host, optional worktree). */
export type RunToolsFactory = (context: { spec: ForkSpec; signal: AbortSignal }) => Promise<RunTools>;

/** What {@link executeForkRun} needs. */
export interface ForkRunOptions {
  spec: ForkSpec;
  /** The inherited prefix; null for a spec without cache-safe params. */
  prefix: ForkPrefix | null;
  attempt: number;
  /** Events of earlier attempts: the run resumes after them. */
  priorEvents: ForkEvent[];
  llm: LlmClient;
  /** The OpenAI clients; absent: a spec that asks for an OpenAI API fails `provider_unavailable`. */
  openai?: OpenAiClients | undefined;
  /**
   * Wraps the run's model client: the cache leader's gate (cache-leader.ts) and the cluster-wide call
   * limits (call-limits.ts), where they apply.
   */
  wrapClient?: ((llm: LlmClient, api: LlmApi) => LlmClient) | undefined;
  /** The Gemini client; absent: a spec that asks for Gemini fails `provider_unavailable`. */
  gemini?: GeminiLlmClient | undefined;
  tools: RunToolsFactory;
  config: DaemonConfig;
  signal: AbortSignal;
  /** Graceful stop and steering, asked at every turn boundary. */
  boundary?: TurnBoundary;
  emit: (event: ForkEventBody) => void;
  /** Resolves when every event emitted so far is stored (see the turn loop's `durable`). */
  durable?: () => Promise<void>;
  onUsage?: (usage: UsageTotals) => void;
  metrics?: DaemonMetrics;
  logger: DaemonLogger;
  /** For permission bubbling to the parent. */
  nats?: { nc: NatsConnection; subjects: ForkSubjects };
  /** The daemon's ceiling on the run's time: its first claim plus `ceilings.maxRunMs`. @unit ms since epoch */
  runDeadlineAt: number;
}

/**
 * Runs the spec to its end and returns its terminal event body. Throws only for failures before the
 * loop (a disallowed model, the recursion guard, a worktree that cannot be made).
 */
export async function executeForkRun(
  options: ForkRunOptions,
): Promise<Extract<ForkEventBody, { type: "completed" | "failed" | "aborted" }>> {
  const { spec, config } = options;
  const cacheShared = options.prefix !== null;
  // A native parent's canonical params are derived here from its own bytes, never taken on trust:
  // the recursion guard and the tool filter must read what the provider will read.
  const given =
    options.prefix?.native !== undefined ? forkPrefixFromNative(options.prefix.native) : options.prefix;
  const api = runApi(spec, given);
  const prefix = given ?? defaultForkParams(config);
  const model = spec.overrides.model ?? prefix.params.model;
  if (config.allowedModels.length > 0 && !config.allowedModels.includes(model)) {
    throw new DaemonError(
      "model_not_allowed",
      `model ${model} is not allowed on this daemon (allowed: ${config.allowedModels.join(", ")})`,
    );
  }
  assertMayFork({ querySource: spec.query_source, messages: prefix.params.messages });
  const tools = await options.tools({ spec, signal: options.signal });
  try {
    const overrides = spec.overrides;
    const plan = prepareForkRun({
      runId: spec.run_id,
      prefix,
      cacheShared,
      directive: spec.directive,
      forkCall: spec.fork_call,
      worktree: tools.worktree?.mapping,
      overrides,
      defaultMaxTokens: config.defaultMaxTokens,
      maxTokensCeiling: config.ceilings.maxOutputTokens,
    });
    const client = runLlmClient({
      api,
      anthropic: options.llm,
      openai: options.openai,
      gemini: options.gemini,
      cacheShared,
      spec,
      prefix,
      prefixHash: plan.prefixHash,
    });
    // Whatever client the API gets, its calls pass the run's gates: its cache leader, the cluster-wide limits.
    const llm = options.wrapClient ? options.wrapClient(client, api) : client;
    const resume =
      options.priorEvents.length > 0
        ? rebuildRunState(plan.request, options.priorEvents, { systemReminder: overrides.system_reminder })
        : undefined;
    if (resume?.terminal) {
      const terminal = resume.terminal;
      // The log already ended (another attempt finished between our claim and our read).
      return terminal.type === "completed"
        ? { type: "completed", result: terminal.result }
        : terminal.type === "failed"
          ? { type: "failed", error: terminal.error, usage: terminal.usage }
          : { type: "aborted", reason: terminal.reason, usage: terminal.usage };
    }
    const permissionAsker =
      options.nats && spec.permissions.mode !== "allow"
        ? natsPermissionAsker({
            nc: options.nats.nc,
            subjects: options.nats.subjects,
            runId: spec.run_id,
            policy: spec.permissions,
            dispatcher: tools.dispatcher,
            ownerToken: spec.owner_token,
          })
        : undefined;
    const metrics = options.metrics;
    const outcome = await runTurnLoop({
      ...plan,
      runId: spec.run_id,
      llm,
      dispatcher: metrics ? countingDispatcher(tools.dispatcher, metrics) : tools.dispatcher,
      cwd: tools.cwd,
      toolFilter: toolFilterFromSpec(spec.tool_filter),
      ...(permissionAsker
        ? { permissions: { asker: permissionAsker, timeoutMs: spec.permissions.timeout_ms } }
        : {}),
      limits: { ...spec.limits, max_turns: Math.min(spec.limits.max_turns, config.ceilings.maxTurns) },
      deadlineAt: Math.min(spec.deadline_at ?? Number.POSITIVE_INFINITY, options.runDeadlineAt),
      resume,
      signal: options.signal,
      boundary: options.boundary,
      emit: (body) => {
        if (metrics && body.type === "llm.message") observeLlmMessage(metrics, body);
        if (metrics && body.type === "tool.denied") metrics.toolCalls.inc({ result: "denied" });
        options.emit(body);
      },
      durable: options.durable,
      logger: options.logger,
    });
    options.onUsage?.(outcome.usage);
    let commit: Awaited<ReturnType<NonNullable<RunTools["worktree"]>["commit"]>> = null;
    if (outcome.status === "completed" && tools.worktree) {
      commit = await tools.worktree.commit(
        `forkd: ${spec.label ?? spec.directive.split("\n")[0]!.slice(0, 60)} (${spec.run_id})`,
      );
    }
    return outcomeToTerminalEvent(outcome, { cacheShared, ...(commit ? { commit } : {}) });
  } finally {
    await tools.worktree
      ?.dispose()
      .catch((error) => options.logger.warn({ err: error }, "worktree cleanup failed"));
  }
}

function observeLlmMessage(
  metrics: DaemonMetrics,
  body: Extract<ForkEventBody, { type: "llm.message" }>,
): void {
  const usage = body.usage;
  const read = usage.cache_read_input_tokens ?? 0;
  const written = usage.cache_creation_input_tokens ?? 0;
  const oneHour = usage.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  metrics.tokens.inc({ kind: "input" }, usage.input_tokens);
  metrics.tokens.inc({ kind: "cache_read" }, read);
  metrics.tokens.inc({ kind: "cache_write_1h" }, oneHour);
  metrics.tokens.inc({ kind: "cache_write_5m" }, Math.max(0, written - oneHour));
  metrics.tokens.inc({ kind: "output" }, usage.output_tokens);
  const prompt = usage.input_tokens + read + written;
  if (prompt > 0) metrics.cacheReadShare.observe(read / prompt);
  if (body.ttft_ms !== undefined) metrics.llmLatency.observe({ phase: "ttft" }, body.ttft_ms / 1000);
  if (body.duration_ms !== undefined) metrics.llmLatency.observe({ phase: "total" }, body.duration_ms / 1000);
}

function countingDispatcher(dispatcher: ToolDispatcher, metrics: DaemonMetrics): ToolDispatcher {
  return {
    isSafeToRepeat: (call) => dispatcher.isSafeToRepeat(call),
    async execute(call, context) {
      const outcome = await dispatcher.execute(call, context);
      metrics.toolCalls.inc({ result: outcome.isError ? "error" : "ok" });
      return outcome;
    },
  };
}

/** Working directory of a run inside `root`, refusing a `cwd` that climbs out. */
export function runCwd(root: string, relative: string | undefined): string {
  if (!relative) return root;
  const cwd = resolve(root, relative);
  if (cwd !== root && !cwd.startsWith(join(root, "/"))) {
    throw new DaemonError("internal", `isolation.cwd ${relative} is outside the workspace`);
  }
  return cwd;
}
