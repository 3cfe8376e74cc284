// Forks that run in this process: the same request building and turn loop a daemon runs, with the
// event log kept in memory so a handle can replay it from seq 1 and then follow it live.
import {
  type CacheSafeParams,
  emptyUsageTotals,
  type ForkEvent,
  type ForkEventBody,
  type ForkPrefix,
  type Isolation,
  isTerminalEvent,
  isValidRunId,
  type TerminalForkEvent,
  toWireError,
} from "@forkd/protocol";
import { describeAbortReason, raceAbort } from "./abort.js";
import { type Clock, systemClock } from "./clock.js";
import type { WorktreeMapping } from "./directive.js";
import { InvalidForkParamsError, WorkspaceError } from "./errors.js";
import { type DeltaBatchOptions, EventSequencer } from "./events.js";
import { prepareForkRun } from "./fork-run-plan.js";
import type { ForkHandle, ForkOutcome, ForkParams, ForkSubagent } from "./fork-subagent.js";
import type { LlmClient } from "./llm-client.js";
import { type Logger, silentLogger } from "./logger.js";
import type { PricingTable } from "./pricing.js";
import { assertMayFork } from "./recursion-guard.js";
import { newRunId } from "./run-id.js";
import { forkOutcomeFromTerminalEvent, outcomeToTerminalEvent } from "./terminal.js";
import type { PermissionAsker, ToolDispatcher } from "./tool-dispatcher.js";
import { toolFilterFromSpec } from "./tools/tool-filter.js";
import { runTurnLoop, type TurnLoopPermissions } from "./turn-loop.js";

/** What a dispatcher factory is told about the run it serves. */
export interface DispatcherContext {
  runId: string;
  /** The run's working directory (its worktree, when it has one). */
  cwd: string;
  params: ForkParams;
  /** Aborts when the run ends or is aborted. */
  signal: AbortSignal;
}

/** Makes the tool dispatcher of one run. */
export type ToolDispatcherFactory = (context: DispatcherContext) => ToolDispatcher;

/** Creates a git worktree for a run that asks for isolation. */
export type WorktreeFactory = (context: {
  runId: string;
  isolation: Isolation;
  /** The parent's working directory. */
  parentCwd: string;
  signal: AbortSignal;
}) => Promise<{ path: string }>;

/** What a fork without a prefix is sent instead of its parent's request. */
export type DefaultForkRequest = Pick<CacheSafeParams, "model"> &
  Partial<Pick<CacheSafeParams, "max_tokens" | "system" | "tools" | "tool_choice" | "thinking">>;

/** Options of {@link InProcessForkSubagent}. */
export interface InProcessForkOptions {
  llm: LlmClient;
  dispatcherFactory: ToolDispatcherFactory;
  /** Working directory of the runs (the parent's). Absolute. @default process.cwd() */
  cwd?: string;
  /** Model, system prompt and tools of a fork whose parent has no prefix yet (`prefix: null`). */
  defaultRequest?: DefaultForkRequest;
  /** Asks for approval under a permission policy of mode `ask`; also says which calls need it under `deny`. */
  permissionAsker?: PermissionAsker;
  /** Needed by runs that ask for a worktree. */
  createWorktree?: WorktreeFactory;
  /** @default DEFAULT_FORK_TOOL_NAMES */
  forkToolNames?: readonly string[];
  /** See `BuildForkedRequestOptions.strictAlternation`. @default false */
  strictAlternation?: boolean;
  /** @default defaultPricingTable */
  pricing?: PricingTable;
  /** @default systemClock */
  clock?: Clock;
  /** @default silentLogger */
  logger?: Logger;
  deltaBatch?: DeltaBatchOptions;
}

// The in-memory event log of one run, readable from seq 1 by any number of readers.
class EventLog {
  readonly events: ForkEvent[] = [];
  #ended = false;
  #wake: { promise: Promise<void>; resolve: () => void } = EventLog.#deferred();

  static #deferred() {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => {
      resolve = r;
    });
    return { promise, resolve };
  }

  get ended(): boolean {
    return this.#ended;
  }

  append(event: ForkEvent): void {
    this.events.push(event);
    if (isTerminalEvent(event)) this.#ended = true;
    const wake = this.#wake;
    this.#wake = EventLog.#deferred();
    wake.resolve();
  }

  async *read(signal?: AbortSignal): AsyncGenerator<ForkEvent> {
    let index = 0;
    for (;;) {
      while (index < this.events.length) yield this.events[index++]!;
      if (this.#ended) return;
      const next = this.#wake.promise;
      await (signal === undefined ? next : raceAbort(next, signal));
    }
  }
}

/** The handle of an in-process fork. */
export class InProcessForkHandle implements ForkHandle {
  readonly runId: string;
  readonly #log: EventLog;
  readonly #controller: AbortController;
  readonly #settled: Promise<ForkOutcome>;
  #awaited = false;

  /** @internal Made by {@link InProcessForkSubagent.fork}. */
  constructor(runId: string, log: EventLog, controller: AbortController, settled: Promise<ForkOutcome>) {
    this.runId = runId;
    this.#log = log;
    this.#controller = controller;
    this.#settled = settled;
  }

  /** The run's events from seq 1, then live until the terminal event. Each call replays anew. */
  events(options: { signal?: AbortSignal } = {}): AsyncIterable<ForkEvent> {
    return this.#log.read(options.signal);
  }

  /**
   * Resolves with the outcome when the run ends; never rejects for the run's own failure. `signal`
   * stops the waiting (rejecting with its reason), not the run.
   */
  result(options: { signal?: AbortSignal } = {}): Promise<ForkOutcome> {
    this.#awaited = true;
    return options.signal === undefined ? this.#settled : raceAbort(this.#settled, options.signal);
  }

  /** Stops the run; it ends `killed` with `reason`. */
  async abort(reason = "aborted by parent"): Promise<void> {
    this.#controller.abort(reason);
  }

  /** Aborts the run when nobody called {@link result} (a forgotten fork must not run on), then waits for its end. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#log.ended || this.#awaited) return;
    this.#controller.abort("disposed before its result was awaited");
    await this.#settled;
  }
}

interface CompiledParams {
  runId: string;
  prefix: ForkPrefix;
  cacheShared: boolean;
  permissions: TurnLoopPermissions | undefined;
  isolation: Isolation | undefined;
}

/**
 * Runs forks in this process. {@link fork} returns a handle at once (the run starts on the next turn
 * of the event loop) — the fork-and-forget mode; {@link forkAndWait} resolves with the outcome — the
 * wait mode.
 */
export class InProcessForkSubagent implements ForkSubagent {
  readonly #options: InProcessForkOptions;
  readonly #clock: Clock;
  readonly #logger: Logger;

  constructor(options: InProcessForkOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
  }

  /**
   * Starts a child and returns its handle at once. `params.prefix` is not copied: build it with
   * `createForkPrefix`, which is already a snapshot isolated from the parent's objects.
   *
   * @throws {@link InvalidForkParamsError} for invalid params, {@link RecursionGuardError} when the
   * parent is itself a fork.
   */
  fork(params: ForkParams): InProcessForkHandle {
    const compiled = this.#compile(params);
    const log = new EventLog();
    const controller = new AbortController();
    const settled = new Promise<ForkOutcome>((resolve) => {
      setImmediate(() => {
        this.#run(params, compiled, log, controller.signal).then(resolve, (error: unknown) => {
          // #run turns every failure into a terminal event; this is a last line of defence.
          this.#logger.error({ err: error, run_id: compiled.runId }, "in-process fork crashed");
          resolve({
            status: "failed",
            runId: compiled.runId,
            error: toWireError(error),
            usage: emptyUsageTotals(),
          });
        });
      });
    });
    return new InProcessForkHandle(compiled.runId, log, controller, settled);
  }

  /** Starts a child and waits for its outcome. `signal` aborts the run, which then ends `killed`. */
  async forkAndWait(params: ForkParams, options: { signal?: AbortSignal } = {}): Promise<ForkOutcome> {
    const handle = this.fork(params);
    const signal = options.signal;
    const onAbort = () => void handle.abort(describeAbortReason(signal?.reason, "aborted by parent"));
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    try {
      return await handle.result();
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  #compile(params: ForkParams): CompiledParams {
    if (typeof params.directive !== "string" || params.directive.trim() === "") {
      throw new InvalidForkParamsError("directive", "the directive is empty");
    }
    if (params.runId !== undefined && !isValidRunId(params.runId)) {
      throw new InvalidForkParamsError(
        "runId",
        `run id ${JSON.stringify(params.runId)} is not a single NATS token`,
      );
    }
    if (!params.parent?.agent_id) throw new InvalidForkParamsError("parent", "parent.agent_id is required");
    const maxTurns = params.limits?.max_turns;
    if (maxTurns !== undefined && !(Number.isInteger(maxTurns) && maxTurns >= 0)) {
      throw new InvalidForkParamsError("limits", "limits.max_turns must be a non-negative integer");
    }
    const timeoutMs = params.limits?.timeout_ms;
    if (timeoutMs !== undefined && !(timeoutMs > 0)) {
      throw new InvalidForkParamsError("limits", "limits.timeout_ms must be positive");
    }
    let prefix: ForkPrefix;
    if (params.prefix !== null) {
      prefix = params.prefix;
    } else if (this.#options.defaultRequest !== undefined) {
      prefix = { params: { ...this.#options.defaultRequest, messages: [] } };
    } else {
      throw new InvalidForkParamsError("prefix", "the prefix is null and no defaultRequest is configured");
    }
    assertMayFork({ querySource: params.querySource ?? "agent", messages: prefix.params.messages });
    const isolation =
      params.isolation?.worktree === true
        ? ({ worktree: true, ...params.isolation } as Isolation)
        : undefined;
    if (isolation !== undefined && this.#options.createWorktree === undefined) {
      throw new InvalidForkParamsError(
        "isolation",
        "a worktree was asked for, but no createWorktree is configured",
      );
    }
    return {
      runId: params.runId ?? newRunId(this.#clock.now()),
      prefix,
      cacheShared: params.prefix !== null,
      permissions: this.#permissions(params),
      isolation,
    };
  }

  #permissions(params: ForkParams): TurnLoopPermissions | undefined {
    const mode = params.permissions?.mode ?? "allow";
    const timeoutMs = params.permissions?.timeout_ms;
    const asker = this.#options.permissionAsker;
    if (mode === "allow") return undefined;
    if (mode === "ask") {
      if (asker === undefined) {
        throw new InvalidForkParamsError("permissions", "permission mode 'ask' needs a permissionAsker");
      }
      return timeoutMs === undefined ? { asker } : { asker, timeoutMs };
    }
    return {
      asker: {
        needsApproval: (call) => asker?.needsApproval(call) ?? false,
        ask: async () => ({
          decision: "deny",
          reason: "the run's permission policy denies calls that need approval",
        }),
      },
    };
  }

  async #run(
    params: ForkParams,
    compiled: CompiledParams,
    log: EventLog,
    signal: AbortSignal,
  ): Promise<ForkOutcome> {
    const { runId, prefix } = compiled;
    const sequencer = new EventSequencer({ runId, clock: this.#clock });
    const emit = (body: ForkEventBody) => log.append(sequencer.stamp(body));
    const finish = (body: Extract<ForkEventBody, { type: "completed" | "failed" | "aborted" }>) => {
      const event = sequencer.stamp(body) as TerminalForkEvent;
      log.append(event);
      return forkOutcomeFromTerminalEvent(event);
    };
    const runController = new AbortController();
    const onAbort = () => runController.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) onAbort();
    try {
      const parentCwd = this.#options.cwd ?? process.cwd();
      let cwd = parentCwd;
      let worktree: WorktreeMapping | undefined;
      if (compiled.isolation !== undefined) {
        try {
          const created = await this.#options.createWorktree!({
            runId,
            isolation: compiled.isolation,
            parentCwd,
            signal: runController.signal,
          });
          cwd = created.path;
          worktree = { parentCwd, worktreePath: created.path };
        } catch (cause) {
          if (signal.aborted) throw cause;
          throw new WorkspaceError(`the worktree could not be created: ${(cause as Error).message}`, {
            cause,
          });
        }
      }
      const plan = prepareForkRun({
        runId,
        prefix,
        cacheShared: compiled.cacheShared,
        directive: params.directive,
        forkCall: params.forkCall,
        worktree,
        overrides: params.overrides,
        strictAlternation: this.#options.strictAlternation,
      });
      const outcome = await runTurnLoop({
        ...plan,
        runId,
        llm: this.#options.llm,
        dispatcher: this.#options.dispatcherFactory({ runId, cwd, params, signal: runController.signal }),
        cwd,
        toolFilter: toolFilterFromSpec(params.toolFilter ?? { kind: "all" }),
        permissions: compiled.permissions,
        limits: params.limits ?? {},
        deadlineAt: params.deadlineAt,
        forkToolNames: this.#options.forkToolNames,
        signal: runController.signal,
        emit,
        pricing: this.#options.pricing,
        clock: this.#clock,
        logger: this.#logger,
        deltaBatch: this.#options.deltaBatch,
      });
      return finish(outcomeToTerminalEvent(outcome, { cacheShared: compiled.cacheShared }));
    } catch (error) {
      if (signal.aborted) {
        return finish({
          type: "aborted",
          reason: describeAbortReason(signal.reason),
          usage: emptyUsageTotals(),
        });
      }
      this.#logger.warn({ err: error, run_id: runId }, "in-process fork failed before its turn loop");
      return finish({ type: "failed", error: toWireError(error), usage: emptyUsageTotals() });
    } finally {
      signal.removeEventListener("abort", onAbort);
      runController.abort("run ended");
    }
  }
}
