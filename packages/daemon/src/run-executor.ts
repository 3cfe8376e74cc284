// Runs one delivered spec: validate, claim, resume from the log if an earlier attempt left one,
// run the core turn loop, publish every event in order, end the run and settle the spec.

import {
  ClientError,
  type ForkResources,
  type LoggedEvent,
  lastLoggedEvent,
  QUEUED_REGISTRATION_DELAY_MS,
  type RunStateEntry,
} from "@forkd/client";
import {
  createRunEntry,
  downloadPrefix,
  isStorageFull,
  type PrefixCache,
  readStoredEvents,
  updateRunState,
} from "@forkd/client/internal";
import type { LlmClient, SteeringMessage, TurnBoundary } from "@forkd/core";
import { sealSharedPrefix, tieVerbatimTexts } from "@forkd/core/internal";
import type { GeminiLlmClient } from "@forkd/llm";
import {
  emptyUsageTotals,
  type ForkEvent,
  type ForkEventBody,
  type ForkPrefix,
  type ForkSpec,
  isTerminalEvent,
  isTerminalEventType,
  isTerminalRunStatus,
  isValidRunId,
  type LlmApi,
  ProtocolError,
  queuedRunState,
  type RunState,
  runStateCodec,
  type SteerReply,
  type SteerRequest,
  type StopMode,
  toWireError,
  type UsageTotals,
} from "@forkd/protocol";
import { controlProof, proofMatches, steerProof } from "@forkd/protocol/internal";
import type { JsMsg } from "@nats-io/jetstream";
import type { CacheLeaderWatch } from "./cache-leader.js";
import type { CallLimits } from "./call-limits.js";
import type { DaemonConfig } from "./config.js";
import type { EndingOrder } from "./ending-order.js";
import { DaemonError } from "./errors.js";
import { type EventLogPosition, RunEventPublisher } from "./event-publisher.js";
import type { HeldRun } from "./failover.js";
import { executeForkRun, type RunToolsFactory } from "./fork-run.js";
import { GroupBudgetGate } from "./group-budget.js";
import type { InlinePrefixCache } from "./inline-prefixes.js";
import type { OpenAiClients } from "./llm-providers.js";
import type { DaemonLogger } from "./logger.js";
import type { DaemonMetrics } from "./metrics.js";
import { priorAttempt, readRunState, registryDisagrees } from "./registry-trust.js";
import { failUnclaimedRun, recordTerminal } from "./run-ending.js";
import { startRunTracing } from "./run-tracing.js";
import type { StorageHealth } from "./storage-health.js";
import { daemonSecrets, type NamedSecret } from "./tools/secrets.js";

/** How long a spec whose run ended with an internal error first waits before it is delivered again. @unit ms */
const INTERNAL_ERROR_RETRY_MS = 1_000;

/** How long a run waits for a referenced prefix that is missing (its parent uploads it again). @unit ms */
const PREFIX_WAIT_MS = 30_000;

/** What the executor needs. */
export interface RunExecutorDeps {
  resources: ForkResources;
  prefixCache: PrefixCache;
  /** Decodes specs, sharing one sealed copy of each inline prefix between the specs that carry it. */
  inlinePrefixes: InlinePrefixCache;
  config: DaemonConfig;
  logger: DaemonLogger;
  llm: LlmClient;
  /** The OpenAI clients, for specs that name an OpenAI API. */
  openai?: OpenAiClients | undefined;
  /** The Gemini client, for specs that name the Gemini API. */
  gemini?: GeminiLlmClient | undefined;
  /** Builds the tool dispatcher of one run (built-in tools, tool host, worktree). */
  tools: RunToolsFactory;
  metrics?: DaemonMetrics;
  /** Told the outcome of every event publish (storage-health.ts). */
  storage?: StorageHealth;
  /** The cluster-wide limits on concurrent model calls (per key, model, tenant), when configured. */
  callLimits?: CallLimits;
  /** Holds a warm-first follower's first model call until its cache leader's response began. */
  cacheLeaders?: CacheLeaderWatch;
  /** The daemon's terminal events in flight: a run's bookkeeping waits for them (ending-order.ts). */
  endings?: EndingOrder;
}

/** One delivery of a spec. */
export interface RunContext {
  message: JsMsg;
  onEnd: () => void;
  /** The run was claimed: the daemon's presence should say so now, not at its next beat. */
  onClaimed?: () => void;
  /** The run paused at a turn boundary (its group's budget is spent) and holds no slot, or goes on. */
  onPaused?: (paused: boolean) => void;
  /**
   * Whether a paused run may go on here: a slot is free. When none is, the run is handed back to the
   * queue for a daemon that has one (a raised cap resumes a group on whichever daemons have capacity).
   */
  mayResume?: () => boolean;
}

/** A run in progress on this daemon. */
export interface ActiveRun {
  readonly runId: string;
  /** Stream sequence of the spec being run. */
  readonly specSeq: number;
  /** Resolves when the run has ended here (whatever the outcome) and its spec is settled. */
  readonly done: Promise<void>;
  /**
   * Stops the run and ends it `aborted` — or, for `mode: "stop"`, lets its current model turn or tool
   * finish and ends it `completed` with `stop: "stopped"` — when the request proves it comes from the
   * run's owner (`abortProof`/`stopProof` of the spec's `owner_token`; any request for a spec without
   * one). Returns false for a refused request, which changes nothing. A request that comes before the
   * spec is decoded is held and judged then (true until it is).
   */
  abort(request: AbortClaim): boolean;
  /**
   * Queues a steering message for the run's next turn boundary, when the request proves it comes from
   * the run's owner (`steerProof`). The reply says whether it was taken.
   */
  steer(request: SteerRequest): Omit<SteerReply, "v">;
  /** Stops the run without ending it: its spec is nak'ed and another daemon resumes it (drain). */
  release(): void;
  /**
   * Stops the run without ending it or touching its spec: this daemon was cut off from NATS long enough
   * for another to have taken the run over (a nak sent when the link comes back could take the spec
   * from its new holder).
   */
  abandon(): void;
  /** Tells JetStream the spec is still being worked on. */
  keepAlive(): void;
  /** Publishes a heartbeat event and refreshes the registry entry; detects a lost claim. */
  heartbeat(): Promise<void>;
  /**
   * What this daemon's presence says of the run: its spec, attempt and the delivery's ack subject, for
   * another daemon to hand it back if this one goes silent. Undefined before the claim and once stopped.
   */
  held(): HeldRun | undefined;
}

/**
 * How many controls a run holds before its spec is decoded (a few milliseconds): enough for every
 * honest one, bounded against a flood.
 */
const MAX_HELD_CONTROLS = 8;

/** What an abort says, from the abort subject or the registry's flag. */
export interface AbortClaim {
  reason: string;
  requested_at?: number | undefined;
  proof?: string | undefined;
  /** `stop`: graceful; absent or `abort`: cut now. */
  mode?: StopMode | undefined;
}

/**
 * Whether an abort may stop a run: a spec without an owner token (an older parent) may be aborted by
 * any parent of the account; otherwise only with the owner's proof. Unknown yet (spec not decoded):
 * refused here (a running run holds such a request until its spec is decoded, and the registry flag,
 * read at the claim and on every heartbeat, decides too).
 */
export function abortAuthorized(
  token: string | null | undefined,
  runId: string,
  proof: string | undefined,
  mode?: StopMode,
): boolean {
  if (token === undefined) return false;
  if (token === null) return true;
  return proofMatches(controlProof(token, runId, mode), proof);
}

type StopReason =
  | { kind: "abort"; reason: string; requestedAt: number | undefined }
  | { kind: "release" }
  /** A first delivery ran ahead of its claim, and the claim was refused (see `#claimAhead`). */
  | { kind: "claim_refused" }
  | { kind: "fenced" }
  /** The daemon ends the run `failed` with this error (an event too large to publish). */
  | { kind: "failed"; error: DaemonError };

/** Starts runs; one instance per daemon. */
export class RunExecutor {
  readonly #deps: RunExecutorDeps;
  // Read once, at the first run: reading every variable of process.env costs ~0.1 ms, once per run
  // it was a measurable part of a dispatch (bench #2's profile). The environment and the
  // configuration's secrets are set before a daemon runs anything (startDaemon registers them first).
  #secrets: readonly NamedSecret[] | undefined;

  constructor(deps: RunExecutorDeps) {
    this.#deps = deps;
  }

  /** Starts running the spec in `context.message`; returns at once. */
  start(context: RunContext): ActiveRun {
    const deps = this.#deps;
    const message = context.message;
    // A subject that is no run's (the consumer's filter makes it impossible) is refused below like an
    // invalid run id.
    const runId = deps.resources.subjects.runIdOf(message.subject) ?? "";
    const controller = new AbortController();
    let stop: StopReason | undefined;
    let publisher: RunEventPublisher | undefined;
    let attempt = 0;
    let turn = 0;
    let ownerToken: string | null | undefined;
    // The run's registry entry as this attempt last wrote it (claim, heartbeats): the ending's
    // compare-and-set starts from it instead of a read; were it stale, the write reads and retries.
    let entry: RunStateEntry | undefined;
    let refusedAborts = 0;
    // A graceful stop's reason, once one was accepted; the turn loop ends at its next boundary, and a
    // call still waiting for a cluster-wide slot is not sent (`stopping`).
    let gracefulStop: string | undefined;
    const stopping = new AbortController();
    const steering: SteeringMessage[] = [];
    const steerIds = new Set<string>();
    const boundary: TurnBoundary = {
      stopRequested: () => gracefulStop,
      takeSteering: () => steering.splice(0),
    };
    // Controls that came before the spec told whose run this is: judged once it has.
    const heldControls: AbortClaim[] = [];
    const requestAbort = (request: AbortClaim): boolean => {
      if (ownerToken === undefined) {
        if (heldControls.length < MAX_HELD_CONTROLS) heldControls.push(request);
        return true;
      }
      const mode = request.mode ?? "abort";
      if (!abortAuthorized(ownerToken, runId, request.proof, mode)) {
        // Logged once per run: a forged registry flag would otherwise be logged on every heartbeat.
        if (refusedAborts++ === 0)
          logger.warn({ code: `${mode}_refused` }, `a ${mode} without the owner's proof: the run goes on`);
        deps.metrics?.refusedControls.inc({ kind: mode });
        return false;
      }
      if (mode === "stop") {
        gracefulStop ??= request.reason;
        stopping.abort(request.reason);
      } else stopWith({ kind: "abort", reason: request.reason, requestedAt: request.requested_at });
      return true;
    };
    const requestSteer = (request: SteerRequest): Omit<SteerReply, "v"> => {
      if (ownerToken === undefined || !publisher || stop || publisher.ended)
        return { accepted: false, code: "not_running", message: `run ${runId} is not running here` };
      if (ownerToken !== null && !proofMatches(steerProof(ownerToken, request), request.proof)) {
        deps.metrics?.refusedControls.inc({ kind: "steer" });
        logger.warn({ code: "steer_refused" }, "a steering message without the owner's proof: ignored");
        return {
          accepted: false,
          code: "steer_refused",
          message: "the request does not carry the run owner's proof",
        };
      }
      if (gracefulStop !== undefined)
        return { accepted: false, code: "run_ending", message: `run ${runId} is being stopped` };
      if (!steerIds.has(request.steer_id)) {
        steerIds.add(request.steer_id);
        steering.push({ id: request.steer_id, text: request.text, by: request.by });
      }
      return { accepted: true };
    };
    const stopWith = (reason: StopReason) => {
      if (stop) return;
      stop = reason;
      // The loop reports an abort's reason as the run's; a release or a lost claim ends nothing.
      controller.abort(reason.kind === "abort" ? reason.reason : new Error(`run stopped: ${reason.kind}`));
    };
    const logger = deps.logger.child({ runId });

    const done = (async () => {
      try {
        await this.#run(runId, message, controller.signal, {
          onSpec: (spec) => {
            ownerToken = spec.owner_token ?? null;
            for (const held of heldControls.splice(0)) requestAbort(held);
          },
          abortAuthorized: (proof, mode) => abortAuthorized(ownerToken, runId, proof, mode),
          requestStop: (claim) => requestAbort({ ...claim, mode: "stop" }),
          boundary,
          onPaused: (paused) => context.onPaused?.(paused),
          mayResume: () => context.mayResume?.() ?? true,
          handOff: () => stopWith({ kind: "release" }),
          claimRefused: () => {
            // Whatever stopped the run meanwhile, this attempt owns nothing to end: a redelivery does.
            stop = { kind: "claim_refused" };
            controller.abort(new Error("run stopped: claim_refused"));
          },
          onPriorSteers: (ids) => {
            for (const id of ids) steerIds.add(id);
          },
          onClaimed: (claimedAttempt, claimedPublisher, claimedEntry) => {
            attempt = claimedAttempt;
            publisher = claimedPublisher;
            entry = claimedEntry;
            context.onClaimed?.();
          },
          onTurn: (current) => {
            turn = current;
          },
          onPublishError: (error) => {
            if (error instanceof DaemonError && error.code === "event_too_large") {
              // The event was not stored and the log is intact: the run fails, saying why.
              logger.warn({ err: error }, "an event of the run is too large to publish: failing the run");
              stopWith({ kind: "failed", error });
              return;
            }
            // Fenced, or JetStream unreachable for the whole publish timeout: either way this attempt
            // can no longer write the log, so it stops and leaves the spec to its redelivery.
            logger.warn({ err: error }, "cannot publish the run's events: stopping this attempt");
            stopWith({ kind: "fenced" });
          },
          stopReason: () => stop,
          registryEntry: () => entry,
          stopping: stopping.signal,
          logger,
        });
      } catch (error) {
        logger.error({ err: error }, "run ended with an internal error");
        // Not left to ack_wait (30 s) while JetStream stores: a passing failure — a request that
        // timed out while the cluster routes around a lost node — is retried soon, by whichever
        // daemon, a second later and twice as long each time; a lasting one ends at max_deliver (a
        // failed event, see max-deliveries.ts). While JetStream does not store (no quorum), the spec is
        // left to ack_wait: quick retries would only spend its deliveries before the cluster is back.
        // A fenced attempt leaves the spec to the attempt that owns it now.
        const storing = deps.storage?.available ?? true;
        if (stop?.kind !== "fenced" && !publisher?.fenced && storing) {
          const retryMs = INTERNAL_ERROR_RETRY_MS * 2 ** Math.max(0, message.info.deliveryCount - 1);
          message.nak(Math.min(retryMs, deps.config.ackWaitMs));
        }
      } finally {
        context.onEnd();
      }
    })();

    return {
      runId,
      specSeq: message.seq,
      done,
      abort: requestAbort,
      steer: requestSteer,
      release: () => stopWith({ kind: "release" }),
      abandon: () => stopWith({ kind: "fenced" }),
      keepAlive: () => {
        if (!stop) message.working();
      },
      held: () => {
        const ack = ackSubjectOf(message);
        if (ack === undefined || attempt === 0 || stop !== undefined || !publisher) return undefined;
        if (publisher.fenced || publisher.ended) return undefined;
        return { run_id: runId, spec_seq: message.seq, attempt, ack };
      },
      heartbeat: async () => {
        // After the terminal event nothing more: a heartbeat must not follow `completed` in the log.
        if (!publisher || stop || publisher.fenced || publisher.ended) return;
        try {
          await publisher.publish({ type: "heartbeat", daemon_id: deps.config.daemonId, turn });
          const now = Date.now();
          const seen = await updateRunState(deps.resources, runId, (current) => {
            if (!current || current.attempt !== attempt || isTerminalRunStatus(current.status))
              return "unchanged";
            return { ...current, heartbeat_at: now, updated_at: now, last_seq: publisher!.lastSeq, turn };
          });
          if (seen?.state.attempt === attempt) entry = seen;
          // A higher attempt in the registry alone does not stop this one: every parent of the
          // account can write that entry. A newer attempt that really claimed the run publishes in
          // its log, and this attempt's next publish is then fenced (the catch below).
          if (seen?.state.abort && !isTerminalRunStatus(seen.state.status)) requestAbort(seen.state.abort);
        } catch (error) {
          if (error instanceof DaemonError && error.code === "fenced") stopWith({ kind: "fenced" });
          else logger.warn({ err: error }, "run heartbeat failed");
        }
      },
    };
  }

  async #run(
    runId: string,
    message: JsMsg,
    signal: AbortSignal,
    hooks: {
      onSpec: (spec: ForkSpec) => void;
      abortAuthorized: (proof: string | undefined, mode?: StopMode) => boolean;
      /** Applies a graceful stop read from the registry flag. */
      requestStop: (claim: AbortClaim) => void;
      boundary: TurnBoundary;
      onPaused: (paused: boolean) => void;
      mayResume: () => boolean;
      handOff: () => void;
      /** The claim a first delivery ran ahead of was refused: stop, publishing nothing. */
      claimRefused: () => void;
      /** Ids of the steering messages an earlier attempt already added (a replayed request is ignored). */
      onPriorSteers: (ids: string[]) => void;
      onClaimed: (attempt: number, publisher: RunEventPublisher, claimed: RunStateEntry) => void;
      onTurn: (turn: number) => void;
      onPublishError: (error: unknown) => void;
      stopReason: () => StopReason | undefined;
      /** The run's registry entry as this attempt last wrote it. */
      registryEntry: () => RunStateEntry | undefined;
      /** Aborts when a graceful stop is accepted: a call waiting for a slot is then not sent. */
      stopping: AbortSignal;
      logger: DaemonLogger;
    },
  ): Promise<void> {
    const deps = this.#deps;
    const { resources, config, metrics } = deps;
    const logger = hooks.logger;
    const delivery = message.info.deliveryCount;
    if (delivery > 1) metrics?.redeliveries.inc();

    let spec: ForkSpec;
    let last: LoggedEvent | null = null;
    let claim: { claimed: RunStateEntry; now: number } | null;
    const firstSpec =
      delivery === 1 ? decodeSpecQuietly(runId, message, this.#deps.inlinePrefixes) : undefined;
    const ahead = firstSpec
      ? this.#claimAhead(runId, message, firstSpec, hooks.claimRefused, logger)
      : undefined;
    const firstClaim =
      ahead?.assumed ?? (firstSpec ? await this.#claimUnregistered(runId, message, firstSpec) : undefined);
    if (firstSpec && firstClaim?.claimed) {
      spec = firstSpec;
      hooks.onSpec(spec);
      last = firstClaim.last;
      if (last && isTerminalEvent(last.event)) {
        // The log had already ended (a run whose registry entry is gone): as in #claim.
        await recordTerminal(resources, runId, last.event, last.event.attempt);
        await message.ackAck().catch(() => false);
        return;
      }
      claim = firstClaim.claimed;
    } else {
      const admitted = await this.#admit(runId, message, logger, firstSpec, firstClaim?.read);
      if (admitted === null) return;
      spec = admitted.spec;
      last = admitted.last;
      hooks.onSpec(spec);
      claim = await this.#claim(runId, message, spec, admitted.registered, last, logger);
    }
    if (claim === null) return;
    const { claimed, now } = claim;
    const attempt = claimed.state.attempt;
    const position: EventLogPosition = { lastSeq: last?.event.seq ?? 0, lastStreamSeq: last?.streamSeq ?? 0 };
    this.#secrets ??= daemonSecrets();
    const publisher: RunEventPublisher = new RunEventPublisher({
      js: resources.js,
      subjects: resources.subjects,
      runId,
      attempt,
      position,
      groupId: spec.group_id,
      secrets: this.#secrets,
      // The run's first model request goes out in this turn of the event loop; its events follow (and
      // follow the claim, when the run did not wait for it: the claim is then this attempt's when
      // stored, before any of its events is).
      startAfter: ahead
        ? ahead.confirmed.then((stored) => hooks.onClaimed(attempt, publisher, stored))
        : new Promise((resolveTurn) => setImmediate(resolveTurn)),
      ...(this.#deps.storage ? { storage: this.#deps.storage } : {}),
    });
    if (!ahead) hooks.onClaimed(attempt, publisher, claimed);
    const priorEvents: ForkEvent[] =
      position.lastSeq > 0 ? (await readStoredEvents(resources, runId)).map((l) => l.event) : [];
    const resumed = priorEvents.length > 0;
    hooks.onPriorSteers(priorEvents.flatMap((event) => (event.type === "steered" ? [event.steer_id] : [])));
    const queueWaitMs = Math.max(0, now - spec.created_at);
    metrics?.queueWait.observe(queueWaitMs / 1000);

    const tracing = startRunTracing(spec, {
      attempt,
      daemonId: config.daemonId,
      headerTraceparent: message.headers?.get("traceparent") || undefined,
    });
    let traced = "unknown";
    let tracedError: string | undefined;
    const publish = (body: ForkEventBody) => {
      tracing.observe(body);
      if (isTerminalEventType(body.type)) traced = body.type;
      if (body.type === "failed") tracedError = body.error.message;
      return publisher.publish(body);
    };
    let usage: UsageTotals = emptyUsageTotals();
    try {
      // Not awaited: the request is built meanwhile, and the turn loop's durability barrier waits
      // for it (and for `started`) before the first model call.
      publish({
        type: "accepted",
        daemon_id: config.daemonId,
        queue_wait_ms: queueWaitMs,
        delivery,
        resumed,
      }).catch((error: unknown) => hooks.onPublishError(error));
      const abortFlag = claimed.state.abort;
      // A stop flag lets the loop end at its first boundary with what the log already holds.
      if (abortFlag?.mode === "stop") hooks.requestStop(abortFlag);
      else if (abortFlag && hooks.abortAuthorized(abortFlag.proof)) {
        await this.#end(
          publish,
          runId,
          { type: "aborted", reason: abortFlag.reason, usage },
          attempt,
          message,
          logger,
          hooks.registryEntry(),
        );
        return;
      }
      if (spec.deadline_at !== undefined && Date.now() > spec.deadline_at) {
        throw new DaemonError("deadline_exceeded", "the spec's deadline passed before it could start");
      }
      const prefix = await this.#loadPrefix(spec);
      // A grouped run of a spec with a group token obeys its group's shared budget, if it has one.
      const groupId = spec.group_id;
      const groupToken = spec.group_token;
      const gate =
        groupId !== undefined && groupToken !== undefined
          ? new GroupBudgetGate({
              resources,
              runId,
              groupId,
              groupToken,
              attempt,
              emit: (body) => {
                publish(body).catch((error: unknown) => hooks.onPublishError(error));
              },
              onPause: hooks.onPaused,
              mayResume: hooks.mayResume,
              handOff: hooks.handOff,
              pausedSince: pausedSince(priorEvents),
              stopRequested: hooks.boundary.stopRequested,
              logger,
            })
          : undefined;
      const boundary: TurnBoundary = gate
        ? {
            ...hooks.boundary,
            admitTurn: (turn, signal) => gate.admitTurn(turn, signal),
            settleTurn: (turn, model, usage) => gate.settleTurn(turn, model, usage),
          }
        : hooks.boundary;
      const result = await executeForkRun({
        spec,
        prefix,
        attempt,
        priorEvents,
        llm: deps.llm,
        openai: deps.openai,
        wrapClient: this.#wrapClient(spec, hooks.stopping, logger),
        gemini: deps.gemini,
        tools: deps.tools,
        config,
        signal,
        boundary,
        emit: (body) => {
          if (body.type === "llm.request") hooks.onTurn(body.turn);
          publish(body).catch((error: unknown) => hooks.onPublishError(error));
        },
        durable: () => publisher.flush(),
        nats: { nc: resources.nc, subjects: resources.subjects },
        runDeadlineAt: (claimed.state.started_at ?? now) + config.ceilings.maxRunMs,
        onUsage: (totals) => {
          usage = totals;
        },
        ...(metrics ? { metrics } : {}),
        logger,
      });
      await publisher.flush();
      const stop = hooks.stopReason();
      if (stop && stop.kind !== "abort") throw new RunStopped(stop);
      await this.#end(publish, runId, result, attempt, message, logger, hooks.registryEntry());
      if (stop?.requestedAt !== undefined)
        metrics?.abortLatency.observe(Math.max(0, Date.now() - stop.requestedAt) / 1000);
    } catch (error) {
      const stop = hooks.stopReason() ?? (error instanceof RunStopped ? error.stop : undefined);
      if (stop?.kind === "claim_refused") {
        // Nothing of this attempt was stored; the full path of the next delivery settles the spec
        // (another owner's run, an abort flag, a log that is not empty, a claim that failed).
        message.nak();
        traced = "claim_refused";
        metrics?.runsEnded.inc({ outcome: "claim_refused" });
        logger.info({}, "the claim a first delivery ran ahead of was refused: spec handed back");
        return;
      }
      if (stop?.kind === "release") {
        await publisher.flush().catch(() => undefined);
        message.nak();
        traced = "released";
        metrics?.runsEnded.inc({ outcome: "released" });
        logger.info({}, "run released to another daemon");
        return;
      }
      if (
        stop?.kind === "fenced" ||
        (error instanceof DaemonError && error.code === "fenced") ||
        publisher.fenced
      ) {
        traced = "fenced";
        metrics?.runsEnded.inc({ outcome: "fenced" });
        logger.warn({}, "claim lost to another attempt: publishing nothing more");
        return; // the attempt that superseded us owns the spec: no ack from here
      }
      if (stop?.kind === "failed") {
        await this.#end(
          publish,
          runId,
          { type: "failed", error: toWireError(stop.error), usage },
          attempt,
          message,
          logger,
          hooks.registryEntry(),
        ).catch((endError) => logger.error({ err: endError }, "could not publish the run's failure"));
        return;
      }
      if (stop?.kind === "abort") {
        await this.#end(
          publish,
          runId,
          { type: "aborted", reason: stop.reason, usage },
          attempt,
          message,
          logger,
          hooks.registryEntry(),
        );
        if (stop.requestedAt !== undefined)
          metrics?.abortLatency.observe(Math.max(0, Date.now() - stop.requestedAt) / 1000);
        return;
      }
      const wire = toWireError(error);
      logger.error({ err: error }, "run failed");
      await this.#end(
        publish,
        runId,
        { type: "failed", error: wire, usage },
        attempt,
        message,
        logger,
        hooks.registryEntry(),
      ).catch((endError) => logger.error({ err: endError }, "could not publish the run's failure"));
    } finally {
      tracing.end(traced, tracedError);
    }
  }

  /**
   * Step 3: claims the run for this attempt, recording this spec as its owner (compare-and-set on the
   * registry). Returns null when the delivery ends here: the log had already ended, JetStream had no
   * room for the claim (the run fails visibly), or another spec became the owner.
   */
  async #claim(
    runId: string,
    message: JsMsg,
    spec: ForkSpec,
    registered: RunStateEntry | null,
    last: LoggedEvent | null,
    logger: DaemonLogger,
  ): Promise<{ claimed: RunStateEntry; now: number } | null> {
    const { resources, metrics } = this.#deps;
    // 3. Claim, recording this spec as the run's owner. An aborted run ends `aborted` without running.
    if (last && isTerminalEvent(last.event)) {
      await recordTerminal(resources, runId, last.event, last.event.attempt);
      await message.ackAck().catch(() => false);
      return null;
    }
    const now = Date.now();
    let claimed: Awaited<ReturnType<typeof updateRunState>>;
    try {
      claimed = await updateRunState(
        resources,
        runId,
        (current) => {
          // Another spec became the owner between the read and this write (only on a stream that
          // can hold two specs for one run: otherwise the spec in hand is the owner, see #admit).
          if (
            !resources.specsOnePerRun &&
            current?.spec_seq !== undefined &&
            current.spec_seq !== message.seq
          )
            return "unchanged";
          return this.#claimedState(current, runId, message, spec, now, last);
        },
        { known: registered },
      );
    } catch (error) {
      if (!isStorageFull(error)) throw error;
      // JetStream has no room for the claim: rather than wait in the queue until max_deliver and stay
      // there, the run fails now, visibly (the events stream makes room by dropping its oldest events).
      logger.error(
        { err: error, code: "storage_full" },
        "JetStream cannot store the run's claim: failing it",
      );
      await failUnclaimedRun(
        resources,
        runId,
        {
          code: "storage_full",
          message: `JetStream cannot store the run's claim: ${(error as Error).message}`,
          retryable: true,
        },
        { specSeq: message.seq, deliveries: message.info.deliveryCount },
        logger,
      ).catch((failure: unknown) => logger.error({ err: failure }, "could not record the storage failure"));
      await removeSpec(resources, message);
      metrics?.runsEnded.inc({ outcome: "failed" });
      return null;
    }
    if (claimed?.state.spec_seq !== message.seq) {
      await this.refuseSpec(message, claimed?.state.spec_seq, logger);
      return null;
    }
    return { claimed, now };
  }

  /** The registry entry of this attempt's claim, from the entry it replaces (null: none yet). */
  #claimedState(
    current: RunState | null,
    runId: string,
    message: JsMsg,
    spec: ForkSpec,
    now: number,
    /** The log's last event (null: none). */
    last: LoggedEvent | null,
  ): RunState {
    return {
      ...(current ??
        queuedRunState({
          runId,
          createdAt: spec.created_at,
          now,
          parentAgentId: spec.parent.agent_id,
          label: spec.label,
          groupId: spec.group_id,
        })),
      // A claim ends a handoff (failover.ts): the run is someone's again. An end the entry claims
      // without a terminal event in the log (#admit) is not carried into the running run.
      handoff: undefined,
      ended_at: undefined,
      usage: undefined,
      error: undefined,
      spec_seq: message.seq,
      status: "running",
      attempt: priorAttempt(current?.attempt ?? 0, message.info.deliveryCount, last) + 1,
      daemon_id: this.#deps.config.daemonId,
      updated_at: now,
      heartbeat_at: now,
      started_at: current?.started_at ?? now,
    };
  }

  /**
   * A first delivery's claim, sent while the run goes on (`callAheadOfClaim`): its first model request leaves
   * without waiting for the answer (a round trip, and the CPU to read it on a busy daemon: bench #2), and
   * before the claim itself, which goes out on the event loop's next turn. Only where the claim is all but
   * certain and nothing the run does before it is stored can be seen: a run id its parent made for this spec
   * (`fresh_run_id`: no log, no other owner; a resubmitted one is claimed first, so a run that ended is never
   * called again), taken from the queue before its parent registers it (so the create finds no entry: no
   * abort flag); not a group's run (its budget reserves spend before each call: a refused claim would leave
   * the reservation), not a Gemini child (its explicit cache is made at the provider before the call), and
   * not while JetStream does not store (a spec handed back at once would spend its deliveries). Until the
   * claim is stored the run's events wait (`startAfter`), and so do its tools (the turn loop's durability
   * barrier waits for its events). A refused claim — or one that failed — stops the run (its model request
   * is aborted, or its answer dropped), publishes nothing and hands the spec back at once: the next
   * delivery takes the full path.
   *
   * Returns the claim as it will be stored, or undefined when the run must wait for its claim.
   */
  #claimAhead(
    runId: string,
    message: JsMsg,
    spec: ForkSpec,
    refused: () => void,
    logger: DaemonLogger,
  ):
    | {
        assumed: { claimed: { claimed: RunStateEntry; now: number }; last: null; read?: undefined };
        confirmed: Promise<RunStateEntry>;
      }
    | undefined {
    const { config, storage } = this.#deps;
    const now = Date.now();
    if (
      !config.callAheadOfClaim ||
      spec.fresh_run_id !== true ||
      spec.group_id !== undefined ||
      spec.provider?.api === "gemini" ||
      storage?.available === false ||
      likelyRegistered(message, now)
    )
      return undefined;
    const state = this.#claimedState(null, runId, message, spec, now, null);
    // Sent on the event loop's next turn: the run's first model request is written in this one. On a
    // daemon whose one thread does both, sending the claim first put its encoding and writes (~0.3 ms)
    // ahead of the request (bench #2 at 4k).
    const nextTurn = new Promise<void>((resolve) => setImmediate(resolve));
    const confirmed = nextTurn.then(async () => {
      const outcome = await this.#claimUnregistered(runId, message, spec, { state, now });
      if (outcome?.claimed !== undefined && outcome.last === null) return outcome.claimed.claimed;
      if (outcome?.read !== undefined && outcome.read.last === null) {
        const taken = await this.#claimOverRegistration(runId, message, spec, outcome.read.registered, state);
        if (taken !== undefined) return taken;
      }
      throw new DaemonError("claim_refused", `the claim of run ${runId}'s first delivery was refused`);
    });
    confirmed.catch((error: unknown) => {
      logger.info({ err: error }, "a run that called ahead of its claim stops: the claim did not hold");
      refused();
    });
    // The revision is the stored claim's; nothing reads it before the claim is stored (`confirmed`).
    return { assumed: { claimed: { claimed: { state, revision: 0 }, now }, last: null }, confirmed };
  }

  /**
   * The claim of a run that called ahead, when its parent's `queued` registration got there first: it is
   * written a moment after the spec is stored, and a loaded daemon's create can arrive later still. As
   * the full path does, the claim takes it over by compare-and-set — while it is still that registration
   * (never claimed, no abort flag, this spec's or naming none) and the claim gives the attempt the run
   * already publishes as (`assumed`). Undefined otherwise: the claim is refused, and the full path of the
   * next delivery decides.
   */
  async #claimOverRegistration(
    runId: string,
    message: JsMsg,
    spec: ForkSpec,
    registered: RunStateEntry,
    assumed: RunState,
  ): Promise<RunStateEntry | undefined> {
    const untouched = (entry: RunState | null): entry is RunState =>
      entry?.status === "queued" &&
      entry.attempt === 0 &&
      entry.abort === undefined &&
      (entry.spec_seq === undefined || entry.spec_seq === message.seq);
    if (!untouched(registered.state)) return undefined;
    let written: RunState | undefined;
    const claimed = await updateRunState(
      this.#deps.resources,
      runId,
      (current) => {
        if (!untouched(current)) return "unchanged";
        written = this.#claimedState(current, runId, message, spec, Date.now(), null);
        return written;
      },
      { known: registered },
    );
    return claimed !== null && claimed.state === written && written.attempt === assumed.attempt
      ? claimed
      : undefined;
  }

  /**
   * The claim of a first delivery in one round trip: create the run's registry entry, claimed, while
   * the log's last event is read alongside. The create succeeds only while the run has no entry at all
   * (its parent has not registered it yet; nobody claimed, aborted or ended it), which is exactly the
   * case where the full path would have read nothing from the registry before creating the same entry:
   * no other owner, no abort flag. The log read is the full path's too (a run whose entry is gone may
   * still have a log).
   *
   * When the entry exists (the parent's `queued` registration, written once the run waited a moment
   * in the queue; a control flag) the registry is read — beside the create when the spec waited that
   * moment already, after the refusal otherwise: returned as `read`, it is the full path's first read,
   * and the compare-and-set after it is the full path's (a change in between fails the compare and is
   * read again). Undefined on any other outcome (the read found nothing: the entry was deleted in
   * between; an error): the caller then reads the registry and the log itself.
   */
  async #claimUnregistered(
    runId: string,
    message: JsMsg,
    spec: ForkSpec,
    ahead?: { state: RunState; now: number },
  ): Promise<
    | { claimed: { claimed: RunStateEntry; now: number }; last: LoggedEvent | null; read?: undefined }
    | { claimed?: undefined; read: { registered: RunStateEntry; last: LoggedEvent | null } }
    | undefined
  > {
    const { resources } = this.#deps;
    const now = ahead?.now ?? Date.now();
    const state = ahead?.state ?? this.#claimedState(null, runId, message, spec, now, null);
    const readBeside = !ahead && likelyRegistered(message, now);
    const [created, last, readAlongside] = await Promise.allSettled([
      createRunEntry(resources, runId, runStateCodec.encode(state)),
      lastLoggedEvent(resources, runId),
      readBeside ? readRunState(resources, runId, this.#deps.logger) : Promise.resolve(undefined),
    ]);
    if (created.status === "rejected") {
      if (last.status === "rejected" || readAlongside.status === "rejected") return undefined;
      const registered =
        readAlongside.value ?? (await readRunState(resources, runId, this.#deps.logger).catch(() => null));
      if (registered === null) return undefined;
      return { read: { registered, last: last.value } };
    }
    if (last.status === "rejected") {
      // Claimed, but the log's position is unknown: without it no event can be published. Leave the
      // claim to a redelivery, which takes the full path (it finds this claim, and supersedes it).
      throw last.reason;
    }
    return { claimed: { claimed: { state, revision: created.value }, now }, last: last.value };
  }

  /**
   * Steps 0–2 of a delivery: a valid run id, the spec that owns the run, a spec that decodes. Returns
   * null when the delivery ends here (refused, removed, already ended, or failed as malformed).
   */
  async #admit(
    runId: string,
    message: JsMsg,
    logger: DaemonLogger,
    /** The spec, when it was decoded already (a first delivery whose one-round-trip claim failed). */
    decoded?: ForkSpec,
    /** The registry entry and the log's last event, when that claim read them already. */
    read?: { registered: RunStateEntry | null; last: LoggedEvent | null },
  ): Promise<{ spec: ForkSpec; registered: RunStateEntry | null; last: LoggedEvent | null } | null> {
    const { resources, metrics } = this.#deps;
    // 0. A subject token that is not a run id has no event subject and no registry key: nothing can
    // be published for it, so the spec is refused where it is, and leaves the queue for good.
    if (!isValidRunId(runId)) {
      logger.warn(
        { code: "invalid_run_id", subject: message.subject },
        "spec on a subject that is not a valid run id: removed from the queue",
      );
      await removeSpec(resources, message);
      metrics?.runsEnded.inc({ outcome: "refused" });
      return null;
    }

    // 1. Ownership. A run belongs to the first spec stored for its id: any other spec for that id,
    // valid or not, is refused and removed, and never fails, fences or resumes the run. An ended run
    // is not run again.
    const [registered, last] = read
      ? [read.registered, read.last]
      : await Promise.all([readRunState(resources, runId, logger), lastLoggedEvent(resources, runId)]);
    if (resources.specsOnePerRun) {
      // The server stores one spec per run id at a time: the spec in hand is the run's owner, and
      // only the run's log (the daemons' alone) says it ended (#claim reads it). The registry is every
      // parent's to write: an entry that names another spec or an end the log does not hold was
      // forged (docs/security.md), and must not make this daemon drop another parent's run.
      if (registered && registryDisagrees(registered.state, message.seq, last))
        logger.warn(
          { code: "registry_disagrees", specSeq: message.seq, registered: registered.state },
          "the run's registry entry names another spec or an end its log does not hold: ignored",
        );
    } else {
      // A specs stream made before the one-spec guard: the registry names the owning spec by its
      // stream sequence, and its end.
      if (registered && isTerminalRunStatus(registered.state.status)) {
        await message.ackAck().catch(() => false);
        return null;
      }
      const ownerSeq = registered?.state.spec_seq;
      if (ownerSeq !== undefined && ownerSeq !== message.seq) {
        await this.refuseSpec(message, ownerSeq, logger);
        return null;
      }
    }

    // 2. Validate. A malformed spec fails its own run, never the daemon.
    let spec: ForkSpec;
    try {
      spec = decoded ?? this.#deps.inlinePrefixes.decodeSpec(message.data);
      if (spec.run_id !== runId) {
        throw new ProtocolError(
          "invalid_spec",
          `spec run_id ${spec.run_id} does not match its subject's ${runId}`,
          {
            path: ["run_id"],
          },
        );
      }
    } catch (error) {
      const wire = toWireError(error);
      logger.warn({ err: error }, "malformed spec: failing its run");
      await failUnclaimedRun(
        resources,
        runId,
        wire,
        { specSeq: message.seq, deliveries: message.info.deliveryCount },
        logger,
      );
      message.term();
      metrics?.runsEnded.inc({ outcome: "failed" });
      return null;
    }

    return { spec, registered, last };
  }

  /** Refuses a spec for a run that another spec owns: recorded (log, metric) and removed, the run untouched. */
  async refuseSpec(message: JsMsg, ownerSeq: number | undefined, logger: DaemonLogger): Promise<void> {
    logger.warn(
      { code: "spec_refused", specSeq: message.seq, ownerSeq },
      "a second spec for a run that belongs to another: refused and removed, the run is untouched",
    );
    await removeSpec(this.#deps.resources, message);
    this.#deps.metrics?.runsEnded.inc({ outcome: "refused" });
  }

  /**
   * What a run's model calls go through: its cache leader's gate (a warm-first follower's first call
   * waits for the leader's response to begin, before it asks for a call slot), then the cluster-wide
   * call limits.
   */
  #wrapClient(
    spec: ForkSpec,
    stopping: AbortSignal,
    logger: DaemonLogger,
  ): ((llm: LlmClient, api: LlmApi) => LlmClient) | undefined {
    const { callLimits, cacheLeaders } = this.#deps;
    const leader = spec.cache_leader;
    if (callLimits === undefined && (leader === undefined || cacheLeaders === undefined)) return undefined;
    return (llm, api) => {
      const limited = callLimits
        ? callLimits.wrap(llm, {
            api,
            parent: spec.parent.agent_id,
            runId: spec.run_id,
            stopSignal: stopping,
          })
        : llm;
      return leader && cacheLeaders
        ? cacheLeaders.gate(limited, leader, { runId: spec.run_id, stopSignal: stopping, logger })
        : limited;
    };
  }

  // A prefix with the parent's text for values JavaScript writes differently has those texts tied to
  // their values (a text that is not its value fails the run, `invalid_prefix`), so that the child's
  // request sends them as the parent did.
  async #loadPrefix(spec: ForkSpec): Promise<ForkPrefix | null> {
    const source = spec.prefix;
    switch (source.kind) {
      case "inline":
        return tieVerbatimTexts(source.prefix);
      case "none":
        return null;
      case "ref": {
        let prefix: ForkPrefix;
        try {
          // Sealed (frozen) as it enters the cache: every run of this daemon that forks from it shares
          // the one copy, and its bytes are serialised once for all of their requests.
          prefix = await this.#deps.prefixCache.get(source, async (ref) =>
            sealSharedPrefix(await this.#downloadPrefixWhenStored(ref)),
          );
        } catch (error) {
          throw new DaemonError(
            "prefix_unavailable",
            `stored prefix ${source.hash}: ${(error as Error).message}`,
            {
              cause: error,
            },
          );
        }
        return tieVerbatimTexts(prefix);
      }
      default: {
        const unreachable: never = source;
        throw new Error(`unknown prefix kind ${String(unreachable)}`);
      }
    }
  }

  /**
   * Downloads a stored prefix, waiting up to {@link PREFIX_WAIT_MS} while it is missing or cut short:
   * a prefix collected while its fork was published is uploaded again by the fork's parent
   * (prefix-collection.ts in @forkd/client), and the run goes on with those bytes.
   */
  async #downloadPrefixWhenStored(ref: { hash: string; size: number }): Promise<ForkPrefix> {
    const deadline = Date.now() + PREFIX_WAIT_MS;
    for (let attempt = 0; ; attempt++) {
      try {
        return await downloadPrefix(this.#deps.resources, ref, {
          maxBytes: this.#deps.config.maxPrefixBytes,
        });
      } catch (error) {
        // Only a missing object is waited for: one that is there and wrong will not become right.
        const missing = !(error instanceof ClientError) || error.code === "run_not_found";
        if (!missing || Date.now() >= deadline) throw error;
        await new Promise((resolveDelay) => setTimeout(resolveDelay, Math.min(2_000, 100 * 2 ** attempt)));
      }
    }
  }

  async #end(
    publish: (body: ForkEventBody) => Promise<ForkEvent>,
    runId: string,
    terminal: ForkEventBody & { type: "completed" | "failed" | "aborted" },
    attempt: number,
    message: JsMsg,
    logger: DaemonLogger,
    known?: RunStateEntry,
  ): Promise<void> {
    const endings = this.#deps.endings;
    const event = endings ? await endings.ending(() => publish(terminal)) : await publish(terminal);
    // Endings by a control come in bursts (a cascade): theirs waits for the burst's events. A run that
    // completed or failed frees its slot at once.
    if (endedByControl(terminal)) await endings?.quiet();
    await recordTerminal(this.#deps.resources, runId, event, attempt, undefined, known);
    await message.ackAck().catch((error) => logger.warn({ err: error }, "ack of a finished spec failed"));
    this.#deps.metrics?.runsEnded.inc({ outcome: terminal.type });
    logger.info({ outcome: terminal.type, seq: event.seq }, "run ended");
  }
}

/** Whether an ending is an abort's or a graceful stop's. */
function endedByControl(terminal: ForkEventBody): boolean {
  return terminal.type === "aborted" || (terminal.type === "completed" && terminal.result.stop === "stopped");
}

/**
 * The spec of a delivery when it decodes and names its subject's run; undefined otherwise (the full
 * path then refuses or fails it, after checking which spec owns the run).
 */
function decodeSpecQuietly(
  runId: string,
  message: JsMsg,
  inlinePrefixes: InlinePrefixCache,
): ForkSpec | undefined {
  if (!isValidRunId(runId)) return undefined;
  try {
    const spec = inlinePrefixes.decodeSpec(message.data);
    return spec.run_id === runId ? spec : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether the parent has most likely registered the run of a spec taken only now. A parent registers
 * its run a moment after the spec is stored (client: queued-registration.ts): a spec taken sooner than
 * that is claimed by a create, and a registry read beside it would be one more request ahead of the
 * run's first model call. A spec that waited longer most likely has the parent's entry: the create will
 * be refused, and a read beside it saves a round trip. (The stored time is the server's clock: a skew
 * costs a round trip, never a wrong claim.)
 */
function likelyRegistered(message: JsMsg, now: number): boolean {
  return now - message.info.timestampNanos / 1e6 >= QUEUED_REGISTRATION_DELAY_MS;
}

/**
 * Takes a spec out of the work queue without running it: `term()` stops its redelivery, and the
 * delete removes it from the stream (a terminated message may otherwise stay in a work-queue stream).
 */
async function removeSpec(resources: ForkResources, message: JsMsg): Promise<void> {
  message.term();
  await resources.jsm.streams.deleteMessage(resources.subjects.streams.specs, message.seq).catch(() => false);
}

/**
 * The ack subject of a delivery. nats.js keeps it on the message (`reply`) without declaring it on
 * `JsMsg`; without it the run is left to JetStream's redelivery after ack_wait.
 */
function ackSubjectOf(message: JsMsg): string | undefined {
  const reply = (message as JsMsg & { reply?: unknown }).reply;
  return typeof reply === "string" && reply.startsWith("$JS.ACK.") ? reply : undefined;
}

/** When the run paused, if its log's last pause has not ended (a run handed off, or resumed after a crash, while paused). */
function pausedSince(events: readonly ForkEvent[]): number | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!;
    if (event.type === "resumed") return undefined;
    if (event.type === "paused") return event.ts;
  }
  return undefined;
}

/** Unwinds a run whose stop reason (release, fence, failure) was set while it ran. */
class RunStopped extends Error {
  constructor(readonly stop: StopReason) {
    super(`run stopped: ${stop.kind}`);
  }
}
