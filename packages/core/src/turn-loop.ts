// The turn loop of a fork: call the model, answer its tool calls (through the recursion guard, the
// tool filter, the permission asker and the dispatcher), append, repeat until the model ends its turn
// or a limit, a timeout or an abort stops it. Transport-free: the daemon runs exactly this code.
import {
  type AssistantMessage,
  ForkdError,
  type ForkEventBody,
  type Limits,
  type MessageParam,
  toWireError,
  type UsageTotals,
  type WireError,
} from "@forkd/protocol";
import { describeAbortReason, raceAbort } from "./abort.js";
import {
  type ForkStopReason,
  INTERRUPTED_TOOL_RESULT,
  nextAction,
  type ToolAnswer,
  textOf,
  toolResultsMessage,
} from "./assistant-turn.js";
import { lastBreakpointCandidate, type MessageBlockLocation, placeBreakpoint } from "./breakpoints.js";
import { type CacheBreakCheck, detectCacheBreak } from "./cache-break.js";
import { type Clock, systemClock } from "./clock.js";
import { EventLogError, RunTimeoutError } from "./errors.js";
import { type DeltaBatchOptions, LlmDeltaBatcher } from "./events.js";
import { type LlmClient, LlmError, type LlmRequest } from "./llm-client.js";
import { type Logger, silentLogger } from "./logger.js";
import type { PricingTable } from "./pricing.js";
import { checkForkRecursion, forkQuerySource } from "./recursion-guard.js";
import type { LedgerEntry, PendingTurn, ResumeState } from "./resume.js";
import type {
  PermissionAsker,
  PermissionDecision,
  ToolCall,
  ToolDispatcher,
  ToolOutcome,
} from "./tool-dispatcher.js";
import { denialToolResultText, type ToolFilter } from "./tools/tool-filter.js";
import { type TurnBoundary, withSteering } from "./turn-boundary.js";
import { UsageAccumulator } from "./usage.js";

/**
 * Names of the fork tool in the agents forkd serves: Claude Code's current and former name, and
 * `forkd mcp`'s fork tool as Claude Code (and qwen-code, and the Codex CLI's namespaced call in
 * canonical form) names it, and as the Gemini CLI does. A child inherits the parent's tools, so a
 * child of an MCP-forking agent sees it too.
 */
export const DEFAULT_FORK_TOOL_NAMES: readonly string[] = [
  "Agent",
  "Task",
  "mcp__forkd__fork",
  "mcp_forkd_fork",
];

/** Turns a run may take when its limits do not say. */
export const DEFAULT_MAX_TURNS = 200;

/** How long a permission request may wait when the options do not say. @unit ms */
export const DEFAULT_PERMISSION_TIMEOUT_MS = 60_000;

/** Approval of tool calls by someone else (the parent, under an `ask` policy). */
export interface TurnLoopPermissions {
  asker: PermissionAsker;
  /** No decision within this is a `timeout`, which denies the call. @unit ms @default 60000 */
  timeoutMs?: number;
}

/** Options of {@link runTurnLoop}. */
export interface TurnLoopOptions {
  /** The run's id: stamped into the fork's query source and given to tools. */
  runId: string;
  /** The run's first request (from `buildForkedRequest`); on resume, the same request rebuilt. */
  request: LlmRequest;
  llm: LlmClient;
  dispatcher: ToolDispatcher;
  /** Working directory of the run, for tools and the tool filter. Absolute. */
  cwd: string;
  /** Decides which calls may run. @default every call may run */
  toolFilter?: ToolFilter | undefined;
  /** When set, calls the asker says need approval wait for it. */
  permissions?: TurnLoopPermissions | undefined;
  /** `max_turns` (0 returns at once), `timeout_ms`, `budget`. @default { max_turns: 200 } */
  limits?: Partial<Limits> | undefined;
  /** Absolute deadline, in addition to `limits.timeout_ms`. @unit ms since epoch */
  deadlineAt?: number | undefined;
  /** A `critical_system_reminder`, appended to every tool-results message (pass it to `buildForkedRequest` too, for the first). */
  systemReminder?: string | undefined;
  /** Tool names that start forks; a fork's calls to them are refused by the recursion guard. @default DEFAULT_FORK_TOOL_NAMES */
  forkToolNames?: readonly string[] | undefined;
  /** The fork's own breakpoint (`ForkedRequest.breakpoint`): kept when later turns place theirs. */
  forkBreakpoint?: MessageBlockLocation | null | undefined;
  /**
   * From the second turn on, put a breakpoint on the last tool result, so each turn reads the one
   * before it from the cache. Within the limit of four, the earliest other breakpoint makes room.
   * @default true
   */
  rollingBreakpoint?: boolean | undefined;
  /** Checks the first turn's cache reads; a `cache.break` event reports a break. */
  cacheCheck?: CacheBreakCheck | undefined;
  /** Cache key hash of the inherited prefix for the `started` event; `null` when nothing is shared. @default null */
  prefixHash?: string | null | undefined;
  /** Continue a run rebuilt by `rebuildRunState` instead of starting it. No `started` event is emitted. */
  resume?: ResumeState | undefined;
  /** Stops the run; it ends `aborted` with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** Asked at every turn boundary for a graceful stop and for steering messages. */
  boundary?: TurnBoundary | undefined;
  /** Receives every event body in order; the caller stamps and publishes them (see `EventSequencer`). */
  emit?: ((event: ForkEventBody) => void) | undefined;
  /**
   * Resolves once every event emitted so far is stored. Awaited before a tool runs, and before a
   * model call that builds on tool results not yet stored, so that after a crash the log always shows
   * a started tool call (the ledger then knows it may have run) and every result the next turn was
   * built on.
   */
  durable?: (() => Promise<void>) | undefined;
  /** Observes every message appended to the conversation. */
  onMessage?: ((message: MessageParam) => void) | undefined;
  /** @default defaultPricingTable */
  pricing?: PricingTable | undefined;
  /** @default systemClock */
  clock?: Clock | undefined;
  /** @default silentLogger */
  logger?: Logger | undefined;
  /** Batching of `llm.delta` events. */
  deltaBatch?: DeltaBatchOptions | undefined;
}

/** What every outcome reports. */
export interface TurnLoopStats {
  /** The whole conversation: the first request's messages and everything appended. */
  messages: MessageParam[];
  /** Text of the last assistant message the run produced; empty when it produced none. */
  finalText: string;
  turns: number;
  /** Tool calls answered (run, refused or reported interrupted). */
  toolUses: number;
  usage: UsageTotals;
  /** From the run's start (the first event's time on resume). @unit ms */
  durationMs: number;
}

/** How the loop ended. It never rejects for the run's own failure. */
export type TurnLoopOutcome =
  | (TurnLoopStats & { status: "completed"; stop: ForkStopReason; stopReason?: string })
  | (TurnLoopStats & { status: "failed"; error: WireError })
  | (TurnLoopStats & { status: "timeout"; error: WireError })
  | (TurnLoopStats & { status: "aborted"; reason: string });

// The reason the loop's own controller aborts with, so an abort can be told from a timeout.
class StopRequest {
  constructor(
    readonly kind: "aborted" | "timeout",
    readonly reason: string,
    readonly error?: RunTimeoutError,
  ) {}
}

type Emit = (event: ForkEventBody) => void;

/**
 * Runs a fork's turns until it ends. See docs/fork-semantics.md, "The turn loop".
 *
 * Each turn: `llm.request`, the call (streamed text as batched `llm.delta`), `llm.message` with its
 * usage; then, when the model stopped for tools, each call in order: `tool.call`, the recursion guard
 * (fork tools), the filter (`tool.denied`), the permission asker (`permission.requested/resolved`),
 * the dispatcher, `tool.result`; the results are appended as one user message. The run stops when the
 * model ends its turn (or stops for `max_tokens`, a stop sequence, a refusal), after the turn that
 * reaches `max_turns` or a budget, at the timeout, or at an abort: the signal is raced against the
 * model call, the filter, the permission request and the tool alike, so nothing can hold the loop.
 *
 * @throws {@link EventLogError} only when `resume` is a run that already ended.
 */
export async function runTurnLoop(options: TurnLoopOptions): Promise<TurnLoopOutcome> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const emit: Emit = options.emit ?? (() => {});
  const resume = options.resume;
  if (resume?.terminal) {
    throw new EventLogError(`the run already ended with a ${resume.terminal.type} event`, {
      seq: resume.terminal.seq,
    });
  }
  const maxTurns = Math.max(0, options.limits?.max_turns ?? DEFAULT_MAX_TURNS);
  const budget = options.limits?.budget;
  const startedAt = resume?.startedAt ?? clock.now();
  const usage = new UsageAccumulator(options.pricing);
  for (const recorded of resume?.turnUsages ?? []) usage.add(recorded.model, recorded.usage);

  const messages: MessageParam[] = [...(resume?.messages ?? options.request.messages)];
  let turns = resume?.turns ?? 0;
  let toolUses = resume?.toolUses ?? 0;
  let lastAssistant: AssistantMessage | null = resume?.lastAssistant ?? null;
  let pending: PendingTurn | null = resume?.pending ?? null;

  const controller = new AbortController();
  const signal = controller.signal;
  const onParentAbort = () =>
    controller.abort(new StopRequest("aborted", describeAbortReason(options.signal?.reason, "aborted")));
  options.signal?.addEventListener("abort", onParentAbort, { once: true });
  if (options.signal?.aborted) onParentAbort();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadlines: { at: number; limitMs: number }[] = [];
  if (options.limits?.timeout_ms !== undefined) {
    deadlines.push({ at: startedAt + options.limits.timeout_ms, limitMs: options.limits.timeout_ms });
  }
  if (options.deadlineAt !== undefined)
    deadlines.push({ at: options.deadlineAt, limitMs: Math.max(0, options.deadlineAt - startedAt) });
  const deadline = deadlines.sort((a, b) => a.at - b.at)[0];
  if (deadline !== undefined && !signal.aborted) {
    // The error is made when the deadline passes, not for every run that has one (every daemon run does).
    const fire = () => {
      const timeoutError = new RunTimeoutError(deadline.limitMs);
      controller.abort(new StopRequest("timeout", timeoutError.message, timeoutError));
    };
    const remaining = deadline.at - clock.now();
    if (remaining <= 0) fire();
    else timer = setTimeout(fire, remaining);
  }

  const append = (message: MessageParam) => {
    messages.push(message);
    options.onMessage?.(message);
  };
  const stats = (): TurnLoopStats => ({
    messages,
    finalText: lastAssistant === null ? "" : textOf(lastAssistant),
    turns,
    toolUses,
    usage: usage.totals,
    durationMs: Math.max(0, clock.now() - startedAt),
  });
  // Tool results emitted since the last durability barrier: the next model call builds on them, so
  // they must be stored first. Before a run's first call nothing can be lost (no tool has run), and
  // the barrier's round trip would only delay the request.
  let resultsSinceBarrier = false;
  const emitFromTools: Emit = (event) => {
    if (event.type === "tool.result" || event.type === "tool.denied") resultsSinceBarrier = true;
    emit(event);
  };
  const tools = new ToolRunner(options, emitFromTools, signal, clock, logger, messages);
  const boundary = options.boundary;
  // A model call admitted by the boundary whose usage it was not told yet.
  let unsettled: { turn: number; model: string } | null = null;
  // A graceful stop ends the run here, with what it has.
  const stopped = (): TurnLoopOutcome | undefined => {
    const reason = boundary?.stopRequested();
    return reason === undefined
      ? undefined
      : { ...stats(), status: "completed", stop: "stopped", stopReason: reason };
  };
  // Adds the steering messages received so far, each with its `steered` event, before turn `turn`'s
  // request. The events must be stored before that request (the barrier), so a resumed run has them.
  const steer = (turn: number): boolean => {
    const taken = boundary?.takeSteering() ?? [];
    for (const message of taken) {
      emit({
        type: "steered",
        turn,
        steer_id: message.id,
        text: message.text,
        ...(message.by !== undefined ? { by: message.by } : {}),
      });
      withSteering(messages, message.text);
      resultsSinceBarrier = true;
    }
    return taken.length > 0;
  };

  try {
    if (resume === undefined) {
      const prefixHash = options.prefixHash ?? null;
      emit({
        type: "started",
        model: options.request.model,
        prefix_hash: prefixHash,
        cache_shared: prefixHash !== null,
      });
    }
    signal.throwIfAborted();
    for (;;) {
      if (pending === null) {
        const stop = stopped();
        if (stop !== undefined) return stop;
        if (turns >= maxTurns) return { ...stats(), status: "completed", stop: "max_turns" };
        const turn = turns + 1;
        steer(turn);
        const request = renderRequest(options, messages, turn);
        if (boundary?.admitTurn !== undefined) {
          const admitted = await raceAbort(
            boundary.admitTurn({ turn, model: request.model, request }, signal),
            signal,
          );
          if (admitted === "stop") return stopped() ?? { ...stats(), status: "completed", stop: "stopped" };
          unsettled = { turn, model: request.model };
        }
        let response!: Awaited<ReturnType<LlmClient["createMessage"]>>;
        // A stream cut after output began is not replayed by the client (it would bill the input
        // twice without telling anyone); the loop sends the turn again as a new, visible llm.request.
        for (let interruptions = 0; ; interruptions++) {
          if (options.durable !== undefined && resultsSinceBarrier) {
            await raceAbort(options.durable(), signal);
            resultsSinceBarrier = false;
          }
          emit({ type: "llm.request", turn, model: request.model, message_count: request.messages.length });
          const batcher = new LlmDeltaBatcher(turn, emit, options.deltaBatch);
          let call: Promise<unknown> = Promise.resolve();
          try {
            call = options.llm.createMessage(request, {
              signal,
              onEvent: (event) => {
                if (event.type === "text_delta") batcher.push(event.text);
                else if (event.type === "response_started") batcher.started();
              },
            });
            response = (await raceAbort(call, signal)) as typeof response;
            break;
          } catch (error) {
            const failure = signal.aborted ? await lateRejection(call, error) : error;
            // A graceful stop reached the call while it waited for a slot: nothing was sent.
            const stop =
              failure instanceof LlmError && failure.code === "not_started" ? stopped() : undefined;
            if (stop !== undefined && !signal.aborted) return stop;
            if (failure instanceof LlmError && failure.partialUsage)
              usage.add(request.model, failure.partialUsage);
            const resend =
              !signal.aborted &&
              failure instanceof LlmError &&
              failure.code === "stream_interrupted" &&
              interruptions < MAX_STREAM_INTERRUPTIONS;
            if (!resend) throw error;
            logger.warn(
              { turn, interruptions: interruptions + 1 },
              "model stream cut after output began: sending the turn again",
            );
          } finally {
            batcher.flush();
          }
        }
        turns = turn;
        lastAssistant = response.message;
        append(response.message);
        usage.add(request.model, response.usage);
        if (unsettled !== null) {
          unsettled = null;
          await raceAbort(
            boundary!.settleTurn?.(turn, request.model, response.usage) ?? Promise.resolve(),
            signal,
          );
        }
        emit({
          type: "llm.message",
          turn,
          message: response.message,
          stop_reason: response.stop_reason,
          usage: response.usage,
          ttft_ms: response.ttftMs,
          duration_ms: response.durationMs,
        });
        if (turn === 1 && options.cacheCheck !== undefined) {
          const cacheBreak = detectCacheBreak(turn, request.model, response.usage, options.cacheCheck, {
            provider: response.cacheMissReason,
            pricing: options.pricing,
          });
          if (cacheBreak !== null) emit(cacheBreak);
        }
        pending = { turn, message: response.message, stopReason: response.stop_reason, ledger: [] };
      }

      const action = nextAction(pending.message, pending.stopReason);
      if (action.kind === "stop") {
        // A steering message that arrived while the model finished gives it one more turn.
        if (action.stop === "end_turn" && turns < maxTurns && stopped() === undefined && steer(turns + 1)) {
          pending = null;
          continue;
        }
        return { ...stats(), status: "completed", stop: action.stop };
      }
      if (budget !== undefined && overBudget(usage.totals, budget, logger)) {
        return { ...stats(), status: "completed", stop: "budget" };
      }
      if (action.kind === "continue") {
        pending = null;
        continue;
      }
      if (turns >= maxTurns) return { ...stats(), status: "completed", stop: "max_turns" };
      const ledger: LedgerEntry[] =
        pending.ledger.length > 0
          ? pending.ledger
          : action.calls.map((call) => ({ call, state: "not_started" }));
      const answers: ToolAnswer[] = [];
      for (const entry of ledger) {
        const stop = stopped();
        if (stop !== undefined) return stop;
        const answer = await tools.answer(entry, pending.turn);
        if (entry.state !== "recorded") toolUses += 1;
        answers.push(answer);
      }
      append(toolResultsMessage(answers, options.systemReminder));
      pending = null;
    }
  } catch (error) {
    // Release the reservation of a call that never returned; its partial usage, if any, is in the totals.
    if (unsettled !== null && boundary?.settleTurn !== undefined)
      await boundary
        .settleTurn(unsettled.turn, unsettled.model, null)
        .catch((settleError: unknown) =>
          logger.warn({ err: settleError }, "could not settle a model call with the shared budget"),
        );
    if (signal.aborted && signal.reason instanceof StopRequest) {
      const stop = signal.reason;
      if (stop.kind === "timeout") {
        return { ...stats(), status: "timeout", error: (stop.error ?? new RunTimeoutError(0)).toWire() };
      }
      return { ...stats(), status: "aborted", reason: stop.reason };
    }
    return { ...stats(), status: "failed", error: wireErrorOf(error, logger) };
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    options.signal?.removeEventListener("abort", onParentAbort);
  }
}

// When the abort wins the race against the model call, a client that honours its signal has usually
// rejected by the next turn of the event loop, with the usage the provider had already reported (an
// aborted turn still consumed input). Wait that long and no longer: a client that ignores its signal
// must not hold the loop.
/** Times one turn is sent again after its stream was cut mid-output, before the run fails. */
const MAX_STREAM_INTERRUPTIONS = 2;

/** How long an aborted tool may take to clean up before the loop reports the abort. @unit ms */
const TOOL_ABORT_GRACE_MS = 2_000;

function settleWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.then(
      () => undefined,
      () => undefined,
    ),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function lateRejection(call: Promise<unknown>, fallback: unknown): Promise<unknown> {
  return Promise.race([
    call.then(
      () => fallback,
      (error: unknown) => error,
    ),
    new Promise<unknown>((resolve) => setImmediate(() => resolve(fallback))),
  ]);
}

// The request of one turn: the first request's parameters with the conversation so far and, from the
// second turn on, a rolling breakpoint on the last block before the system reminder.
function renderRequest(
  options: TurnLoopOptions,
  messages: readonly MessageParam[],
  turn: number,
): LlmRequest {
  const request: LlmRequest = { ...options.request, messages: [...messages] };
  if (turn === 1 || options.rollingBreakpoint === false) return request;
  const lastIndex = messages.length - 1;
  const content = messages[lastIndex]?.content;
  if (!Array.isArray(content)) return request;
  const end =
    options.systemReminder === undefined || messages[lastIndex]?.role !== "user"
      ? content.length
      : content.length - 1;
  const candidate = lastBreakpointCandidate(content, end);
  if (candidate === -1) return request;
  const protect = options.forkBreakpoint ? [options.forkBreakpoint] : [];
  placeBreakpoint(request, { area: "messages", messageIndex: lastIndex, blockIndex: candidate }, { protect });
  return request;
}

function overBudget(totals: UsageTotals, budget: NonNullable<Limits["budget"]>, logger: Logger): boolean {
  const inputTokens =
    totals.input_tokens +
    totals.cache_write_5m_tokens +
    totals.cache_write_1h_tokens +
    totals.cache_read_tokens;
  if (budget.max_input_tokens !== undefined && inputTokens >= budget.max_input_tokens) return true;
  if (budget.max_output_tokens !== undefined && totals.output_tokens >= budget.max_output_tokens) return true;
  if (budget.max_cost_usd !== undefined) {
    if (totals.cost_usd === null) {
      logger.warn(
        { unpriced_models: totals.unpriced_models, max_cost_usd: budget.max_cost_usd },
        "cost budget not enforced: a model has no price",
      );
      return false;
    }
    return totals.cost_usd >= budget.max_cost_usd;
  }
  return false;
}

function wireErrorOf(error: unknown, logger: Logger): WireError {
  if (!(error instanceof ForkdError)) logger.error({ err: error }, "turn loop failed unexpectedly");
  return toWireError(error);
}

// Answers one tool call: guard, filter, permission, dispatcher; each step raced against the run's signal.
class ToolRunner {
  readonly #forkTools: Set<string>;

  constructor(
    private readonly options: TurnLoopOptions,
    private readonly emit: Emit,
    private readonly signal: AbortSignal,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly messages: readonly MessageParam[],
  ) {
    this.#forkTools = new Set(options.forkToolNames ?? DEFAULT_FORK_TOOL_NAMES);
  }

  async answer(entry: LedgerEntry, turn: number): Promise<ToolAnswer> {
    const { call } = entry;
    if (entry.state === "recorded") return entry.answer;
    if (entry.state === "interrupted" && !this.options.dispatcher.isSafeToRepeat(call)) {
      const answer = { toolUseId: call.id, content: INTERRUPTED_TOOL_RESULT, isError: true };
      this.emit({
        type: "tool.result",
        turn,
        tool_use_id: call.id,
        name: call.name,
        content: answer.content,
        is_error: true,
        duration_ms: 0,
        interrupted: true,
      });
      return answer;
    }
    this.emit({ type: "tool.call", turn, tool_use_id: call.id, name: call.name, input: call.input });
    const started = this.clock.now();
    const { content, isError } = await this.#decideAndRun(call, turn);
    this.emit({
      type: "tool.result",
      turn,
      tool_use_id: call.id,
      name: call.name,
      content,
      is_error: isError,
      duration_ms: Math.max(0, this.clock.now() - started),
    });
    return { toolUseId: call.id, content, isError };
  }

  async #decideAndRun(call: ToolCall, turn: number): Promise<{ content: string; isError: boolean }> {
    const deny = (code: string, reason: string, content: string) => {
      this.emit({ type: "tool.denied", turn, tool_use_id: call.id, name: call.name, code, reason });
      return { content, isError: true };
    };
    if (this.#forkTools.has(call.name)) {
      const check = checkForkRecursion({
        querySource: forkQuerySource(this.options.runId),
        messages: this.messages,
      });
      if (!check.allowed) return deny(check.error.code, check.error.message, check.error.toolResultText);
    }
    const filter = this.options.toolFilter;
    if (filter !== undefined) {
      const decision = await raceAbort(
        filter.check(call, { cwd: this.options.cwd, signal: this.signal }),
        this.signal,
      );
      if (!decision.allowed) return deny(decision.code, decision.reason, denialToolResultText(decision));
    }
    const permissions = this.options.permissions;
    if (permissions?.asker.needsApproval(call)) {
      const decision = await this.#askPermission(call, turn, permissions);
      if (decision.decision !== "allow") {
        const verb = decision.decision === "timeout" ? "was not approved in time" : "was denied";
        return {
          content: `Permission for ${call.name} ${verb}: ${decision.reason}. The call was not run.`,
          isError: true,
        };
      }
    }
    let execution: Promise<ToolOutcome> | undefined;
    try {
      if (this.options.durable !== undefined) await raceAbort(this.options.durable(), this.signal);
      execution = this.options.dispatcher.execute(call, {
        runId: this.options.runId,
        turn,
        cwd: this.options.cwd,
        signal: this.signal,
      });
      const outcome = await raceAbort(execution, this.signal);
      return { content: outcome.content, isError: outcome.isError };
    } catch (error) {
      if (this.signal.aborted) {
        // A well-behaved tool stops on the signal (killing its processes); give it a moment so that
        // when the run ends `aborted`, what the tool started is gone. A tool that ignores the
        // signal cannot hold the loop longer than the grace.
        if (execution !== undefined) await settleWithin(execution, TOOL_ABORT_GRACE_MS);
        throw error;
      }
      // The dispatcher contract says a tool's failure is a result, not a throw; honour the model anyway.
      this.logger.warn({ err: error, tool: call.name, tool_use_id: call.id }, "tool dispatcher threw");
      const message = error instanceof Error ? error.message : String(error);
      return { content: `Tool ${call.name} failed: ${message}`, isError: true };
    }
  }

  async #askPermission(
    call: ToolCall,
    turn: number,
    permissions: TurnLoopPermissions,
  ): Promise<PermissionDecision> {
    const timeoutMs = permissions.timeoutMs ?? DEFAULT_PERMISSION_TIMEOUT_MS;
    this.emit({
      type: "permission.requested",
      turn,
      tool_use_id: call.id,
      name: call.name,
      timeout_ms: timeoutMs,
    });
    const asking = new AbortController();
    const onAbort = () => asking.abort(this.signal.reason);
    this.signal.addEventListener("abort", onAbort, { once: true });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<PermissionDecision>((resolve) => {
      timer = setTimeout(
        () => resolve({ decision: "timeout", reason: `no decision within ${timeoutMs} ms` }),
        timeoutMs,
      );
    });
    try {
      let decision: PermissionDecision;
      try {
        decision = await raceAbort(
          Promise.race([permissions.asker.ask(call, { signal: asking.signal, timeoutMs }), timedOut]),
          this.signal,
        );
      } catch (error) {
        if (this.signal.aborted) throw error;
        const message = error instanceof Error ? error.message : String(error);
        decision = { decision: "deny", reason: `the permission request failed: ${message}` };
      }
      const resolved: Extract<ForkEventBody, { type: "permission.resolved" }> = {
        type: "permission.resolved",
        turn,
        tool_use_id: call.id,
        decision: decision.decision,
      };
      if (decision.decision !== "allow") resolved.reason = decision.reason;
      this.emit(resolved);
      return decision;
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      this.signal.removeEventListener("abort", onAbort);
      asking.abort();
    }
  }
}
