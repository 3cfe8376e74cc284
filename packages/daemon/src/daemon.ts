// The worker: a state machine (starting → running → draining → stopped) that pulls one spec per free
// slot from the shared durable consumer, runs it, keeps its claim alive, obeys aborts, and on drain
// hands unfinished runs to other daemons.

import { hostname } from "node:os";
import { ensureForkResources, type ForkResources } from "@forkd/client";
import { collectUnusedPrefixes, PrefixCache } from "@forkd/client/internal";
import {
  abortRequestCodec,
  CONTROL_REPEAT_HEADER,
  type DaemonInfo,
  type DaemonPresence,
  daemonInfoCodec,
  daemonPresenceCodec,
  decodeSpecOwnership,
  PROTOCOL_VERSION,
  ProtocolError,
  steerReplyCodec,
  steerRequestCodec,
} from "@forkd/protocol";
import type { Consumer, JsMsg } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { CacheLeaderWatch } from "./cache-leader.js";
import { CallLimits, limitsAnything } from "./call-limits.js";
import type { DaemonConfig } from "./config.js";
import { EndingOrder } from "./ending-order.js";
import { type HeldRun, handOffRun } from "./failover.js";
import { KvGeminiCacheLock } from "./gemini-cache-lock.js";
import { InlinePrefixCache } from "./inline-prefixes.js";
import type { DaemonLogger } from "./logger.js";
import { handleMaxDeliveries } from "./max-deliveries.js";
import type { DaemonMetrics } from "./metrics.js";
import { PeerPresence, type SilentPeer } from "./peer-presence.js";
import { endQueuedRun, QUEUED_END_GRACE_MS, type QueuedControlDeps, SpecOwners } from "./queued-control.js";
import { RecentControls } from "./recent-controls.js";
import { RetentionSweeper } from "./retention-sweeper.js";
import {
  type ActiveRun,
  abortAuthorized,
  type RunContext,
  RunExecutor,
  type RunExecutorDeps,
} from "./run-executor.js";
import { StorageHealth, type StorageTransition } from "./storage-health.js";
import { daemonSecrets } from "./tools/secrets.js";
import { warmControlPath } from "./warm-up.js";

/** The daemon's lifecycle. */
export type DaemonState = "starting" | "running" | "draining" | "stopped";

/** What the daemon needs from outside: a connection, a model client, a logger. */
export interface ForkDaemonOptions
  extends Omit<RunExecutorDeps, "resources" | "prefixCache" | "inlinePrefixes" | "config" | "logger"> {
  config: DaemonConfig;
  nc: NatsConnection;
  logger: DaemonLogger;
  metrics?: DaemonMetrics;
  /** Version string advertised in the daemons bucket. */
  version?: string | undefined;
  /**
   * Hash of each provider API's base URL and API key (`providerKeyId`), by API name: the scope of
   * `callLimitPerKey`. An API missing here is counted under a key of its own name.
   */
  providerKeyIds?: Readonly<Record<string, string>> | undefined;
}

const DAEMON_VERSION = "0.1.0";

/**
 * Where parents receive their replies (the client's default inbox prefix): the only subjects a daemon
 * answers a steer request on.
 */
const PARENT_INBOX_PREFIX = "_INBOX.";

/** A daemon that has not heard its own beats for this many times `failoverAfterMs` stops its runs. */
const CUT_OFF_FAILOVER_MULTIPLE = 5;

/**
 * A forkd daemon. `start()` resolves once it is pulling; `shutdown()` drains.
 */
export class ForkDaemon {
  #state: DaemonState = "starting";
  readonly #options: ForkDaemonOptions;
  readonly #config: DaemonConfig;
  readonly #logger: DaemonLogger;
  readonly #active = new Map<string, ActiveRun>();
  /** The other daemons' presence (set once the daemon runs): which runs they hold. */
  #peers: PeerPresence | undefined;
  /** Controls heard for runs not held here: a run that starts here meets them at once. */
  readonly #recentControls = new RecentControls();
  /** Terminal events in flight: bookkeeping of runs that ended waits for them (ending-order.ts). */
  readonly #endings = new EndingOrder();
  /** What ending a queued run needs; built at the first (the secrets are registered by then). */
  #queuedControlDeps: QueuedControlDeps | undefined;
  // Runs paused at a turn boundary by their group's budget: they hold no slot while they wait.
  readonly #paused = new Set<string>();
  readonly #stateListeners = new Set<(state: DaemonState) => void>();
  #resources: ForkResources | undefined;
  #executor: RunExecutor | undefined;
  #subscriptions: Subscription[] = [];
  #timers: NodeJS.Timeout[] = [];
  #pullLoop: Promise<void> | undefined;
  #sweeper: RetentionSweeper | undefined;
  #callLimits: CallLimits | undefined;
  #cacheLeaders: CacheLeaderWatch | undefined;
  #slotFreed: (() => void) | undefined;
  #stopPulling = new AbortController();
  readonly #startedAt = Date.now();
  /** When this daemon's open pull request expires. @unit ms since epoch */
  #pullUntil = 0;
  /** A beat is scheduled for the claims of this turn of the event loop ({@link #beatSoon}). */
  #beatPending = false;
  /** Whether JetStream stores this daemon's writes; said in the log and the metrics when it changes. */
  readonly #storage = new StorageHealth((transition) => this.#onStorageChange(transition));

  constructor(options: ForkDaemonOptions) {
    this.#options = options;
    this.#config = options.config;
    this.#logger = options.logger;
  }

  get state(): DaemonState {
    return this.#state;
  }

  get id(): string {
    return this.#config.daemonId;
  }

  /** Runs in progress on this daemon. */
  get load(): number {
    return this.#active.size;
  }

  /** Ids of the runs in progress. */
  activeRunIds(): string[] {
    return [...this.#active.keys()];
  }

  /** Calls `listener` on every state change; returns the unsubscribe function. */
  onStateChange(listener: (state: DaemonState) => void): () => void {
    this.#stateListeners.add(listener);
    return () => this.#stateListeners.delete(listener);
  }

  /** Creates the JetStream resources if needed, subscribes to aborts and starts pulling. */
  async start(): Promise<void> {
    if (this.#state !== "starting") throw new Error(`cannot start a daemon in state ${this.#state}`);
    const config = this.#config;
    warmControlPath();
    this.#resources = await ensureForkResources(this.#options.nc, {
      prefix: config.prefix,
      replicas: config.replicas,
      ackWaitMs: config.ackWaitMs,
      maxDeliver: config.maxDeliver,
      retentionMs: config.retentionMs,
      prefixRetentionMs: config.prefixRetentionMs,
    });
    this.#options.metrics?.storageAvailable.set(1); // it just stored the resources
    const resources = this.#resources;
    const settings = {
      perKey: config.callLimitPerKey,
      perModel: config.callLimitPerModel,
      models: config.callLimitModels,
      perTenant: config.callLimitPerTenant,
      tenant: config.tenant,
      leaseMs: config.callLimitLeaseMs,
    };
    const keyIds = this.#options.providerKeyIds ?? {};
    // Siblings on several daemons make one explicit cache per fan-out, and renew it once per TTL.
    this.#options.gemini?.coordinate(
      new KvGeminiCacheLock({
        kv: resources.daemons,
        daemonId: this.id,
        keyId: keyIds.gemini ?? "gemini",
        logger: this.#logger,
      }),
    );
    this.#callLimits = limitsAnything(settings)
      ? new CallLimits({
          kv: resources.daemons,
          daemonId: this.id,
          logger: this.#logger,
          metrics: this.#options.metrics,
          settings,
          keyIdOf: (api) => keyIds[api],
        })
      : undefined;
    this.#cacheLeaders = new CacheLeaderWatch({ resources, logger: this.#logger });
    this.#executor = new RunExecutor({
      ...this.#options,
      endings: this.#endings,
      cacheLeaders: this.#cacheLeaders,
      ...(this.#callLimits ? { callLimits: this.#callLimits } : {}),
      resources,
      prefixCache: new PrefixCache(),
      inlinePrefixes: new InlinePrefixCache(undefined, (how) =>
        this.#options.metrics?.inlinePrefixSpecs.inc({ decoded: how }),
      ),
      config,
      logger: this.#logger,
      storage: this.#storage,
    });
    this.#subscriptions.push(
      this.#options.nc.subscribe(resources.subjects.allAborts, {
        callback: (error, message) => {
          if (error) return;
          try {
            const request = abortRequestCodec.decode(message.data);
            const active = this.#active.get(request.run_id);
            if (active) active.abort(request);
            else this.#recentControls.remember(request.run_id, request);
          } catch (decodeError) {
            this.#refuseMalformed(decodeError, message.subject, "abort request");
          }
        },
      }),
      // The same aborts and stops once more, to one daemon of the queue group: it ends the run at once
      // if it is still queued (queued-control.ts). Malformed ones were counted above.
      this.#options.nc.subscribe(resources.subjects.allAborts, {
        queue: `${resources.subjects.specsConsumer}_queued_controls`,
        callback: (error, message) => {
          if (error) return;
          let request: ReturnType<typeof abortRequestCodec.decode>;
          try {
            request = abortRequestCodec.decode(message.data);
          } catch {
            return;
          }
          // A run that a daemon holds is not queued: its holder obeys the request. A repeat (sent after
          // the registry flag) is for a holder that claimed the run meanwhile, not for the queue.
          if (this.#active.has(request.run_id) || this.#peers?.holds(request.run_id)) return;
          if (message.headers?.get(CONTROL_REPEAT_HEADER)) return;
          this.#queuedControlDeps ??= {
            resources,
            owners: SpecOwners.of(resources),
            logger: this.#logger,
            metrics: this.#options.metrics,
            secrets: daemonSecrets(),
            endings: this.#endings,
          };
          void endQueuedRun(this.#queuedControlDeps, request).catch((failure: unknown) =>
            this.#logger.warn({ err: failure, runId: request.run_id }, "could not end a queued run"),
          );
        },
      }),
      // Steering: the daemon running the run answers; the others stay silent.
      this.#options.nc.subscribe(resources.subjects.allSteers, {
        callback: (error, message) => {
          if (error) return;
          // The reply goes where the request says, published with the daemon's own rights: a reply
          // subject of `$JS.API.STREAM.PURGE.KV_agent_fork_runs` had any parent purge the run
          // registry, one of a run's events subject put a reply in its log. Only a parent's inbox is
          // answered, and a request that names anything else is refused whole.
          if (!message.reply?.startsWith(PARENT_INBOX_PREFIX)) {
            this.#options.metrics?.refusedControls.inc({ kind: "invalid_reply" });
            this.#logger.warn(
              { code: "invalid_reply", subject: message.subject },
              "ignoring a steer request whose reply subject is no inbox",
            );
            return;
          }
          try {
            const request = steerRequestCodec.decode(message.data);
            const active = this.#active.get(request.run_id);
            if (active === undefined) return;
            message.respond(steerReplyCodec.encode({ v: PROTOCOL_VERSION, ...active.steer(request) }));
          } catch (decodeError) {
            this.#refuseMalformed(decodeError, message.subject, "steer request");
          }
        },
      }),
    );
    this.#subscriptions.push(
      this.#options.nc.subscribe(
        `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${resources.subjects.streams.specs}.${resources.subjects.specsConsumer}`,
        {
          queue: `${resources.subjects.specsConsumer}_advisories`,
          callback: (error, message) => {
            if (error) return;
            void handleMaxDeliveries(resources, message.data, {
              daemonId: this.id,
              logger: this.#logger,
            }).catch((failure: unknown) => {
              if (failure instanceof ProtocolError) {
                this.#options.metrics?.refusedControls.inc({ kind: failure.code });
                this.#logger.warn({ code: failure.code }, "ignoring a malformed max-deliveries advisory");
              } else this.#logger.error({ err: failure }, "could not fail a run that exhausted max_deliver");
            });
          },
        },
      ),
    );
    this.#followPresence();
    const keepAliveMs = Math.max(250, Math.min(config.heartbeatMs, Math.floor(config.ackWaitMs / 3)));
    this.#timers.push(setInterval(() => this.#keepClaimsAlive(), keepAliveMs).unref());
    this.#timers.push(setInterval(() => void this.#heartbeat(), config.heartbeatMs).unref());
    this.#setState("running");
    await this.#heartbeat();
    this.#pullLoop = this.#pull();
    this.#sweeper = new RetentionSweeper({
      resources,
      daemonId: this.id,
      retentionMs: config.retentionMs,
      prefixRetentionMs: config.prefixRetentionMs,
      logger: this.#logger,
      collectPrefixes: () => collectUnusedPrefixes(resources, { retentionMs: config.prefixRetentionMs }),
    });
    this.#sweeper.start();
    this.#logger.info(
      {
        daemonId: this.id,
        concurrency: config.concurrency,
        prefix: config.prefix,
        // Retention is a sweep on every version (docs/operations.md, "Retention"): said once, with the server's version.
        natsServer: this.#options.nc.info?.version,
        retentionMs: config.retentionMs,
        prefixRetentionMs: config.prefixRetentionMs,
      },
      "daemon running",
    );
  }

  /** Counts and logs a control message that does not decode; it changes nothing. */
  #refuseMalformed(decodeError: unknown, subject: string, what: string): void {
    const code = decodeError instanceof ProtocolError ? decodeError.code : "internal";
    this.#options.metrics?.refusedControls.inc({ kind: code });
    this.#logger.warn({ code, subject }, `ignoring a malformed ${what}`);
  }

  /**
   * Drains: stops pulling, lets in-flight runs finish within `graceMs`, then releases the rest to
   * other daemons (their specs are nak'ed and resume elsewhere from their event logs), and stops.
   */
  async shutdown(options: { graceMs?: number } = {}): Promise<void> {
    if (this.#state === "stopped" || this.#state === "draining") return this.#waitForState("stopped");
    const graceMs = options.graceMs ?? this.#config.drainGraceMs;
    this.#setState("draining");
    this.#stopPulling.abort();
    this.#slotFreed?.();
    void this.#heartbeat();
    await this.#pullLoop?.catch(() => undefined);
    if (this.#active.size > 0) {
      this.#logger.info({ runs: this.activeRunIds(), graceMs }, "draining: waiting for runs in flight");
      const drained = this.#whenIdle();
      const timer = setTimeout(() => {
        for (const run of this.#active.values()) run.release();
      }, graceMs);
      await drained;
      clearTimeout(timer);
    }
    for (const timer of this.#timers.splice(0)) clearInterval(timer);
    await this.#sweeper?.stop();
    this.#callLimits?.close();
    this.#cacheLeaders?.close();
    // The last beat holds no runs: the others have nothing of this daemon to hand back when it falls silent.
    this.#beat([]);
    for (const subscription of this.#subscriptions.splice(0)) subscription.unsubscribe();
    if (this.#resources) await this.#resources.daemons.delete(this.id).catch(() => undefined);
    this.#setState("stopped");
    this.#logger.info({ daemonId: this.id }, "daemon stopped");
  }

  #setState(state: DaemonState): void {
    this.#state = state;
    for (const listener of this.#stateListeners) listener(state);
  }

  #waitForState(state: DaemonState): Promise<void> {
    if (this.#state === state) return Promise.resolve();
    return new Promise((resolveState) => {
      const off = this.onStateChange((current) => {
        if (current === state) {
          off();
          resolveState();
        }
      });
    });
  }

  #idleWaiters: (() => void)[] = [];

  #whenIdle(): Promise<void> {
    if (this.#active.size === 0) return Promise.resolve();
    return new Promise((resolveIdle) => this.#idleWaiters.push(resolveIdle));
  }

  async #pull(): Promise<void> {
    const resources = this.#resources!;
    // Looked up inside the loop, and again after a failure: the lookup is a JetStream API request, and
    // one that fails (the server stalled or restarting, a cluster electing a leader) must not end the
    // pulling of a daemon that goes on beating as if it had free slots.
    let consumer: Consumer | undefined;
    const stop = this.#stopPulling.signal;
    while (!stop.aborted) {
      const free = this.#config.concurrency - (this.#active.size - this.#paused.size);
      if (free <= 0) {
        await new Promise<void>((resolveSlot) => {
          this.#slotFreed = resolveSlot;
        });
        continue;
      }
      try {
        consumer ??= await resources.js.consumers.get(
          resources.subjects.streams.specs,
          resources.subjects.specsConsumer,
        );
        // Exactly as many as there are free slots: a prefetched spec would wait in a buffer past ack_wait.
        // Short pull requests: the server keeps a dead daemon's open pull request until it expires
        // and may hand it a redelivered spec, which then waits one more ack_wait. Well under
        // ack_wait, the request of a daemon that died has expired by the time its specs come back.
        // With failover on, a second at most (nats.js's floor): a frozen daemon's open request could
        // otherwise catch the spec handed back from it; the beat after each request says until when
        // it is open, and a handoff waits that long (failover.ts).
        const expires =
          this.#config.failoverAfterMs > 0
            ? 1_000
            : Math.min(5_000, Math.max(1_000, Math.floor(this.#config.ackWaitMs / 4)));
        const batch = await consumer.fetch({ max_messages: free, expires });
        this.#pullUntil = Date.now() + expires;
        this.#beat();
        const stopBatch = () => batch.stop();
        stop.addEventListener("abort", stopBatch, { once: true });
        try {
          for await (const message of batch) this.#accept(message);
        } finally {
          stop.removeEventListener("abort", stopBatch);
        }
      } catch (error) {
        if (stop.aborted) break;
        if (isLostPullRequest(error)) {
          // The server sent nothing for this request, not even its idle heartbeats: it no longer holds
          // it (seen on nats-server 2.9, rarely, with the daemon and the server both well). Specs may
          // be waiting for exactly this daemon's slots (the others full), so it asks again at once;
          // the delay below is for a fetch that fails as it starts, where asking at once would spin.
          this.#logger.debug({ err: error }, "a pull request went unanswered; pulling again");
          continue;
        }
        this.#logger.warn({ err: error }, "pulling specs failed; retrying");
        await new Promise((resolveDelay) => setTimeout(resolveDelay, 500));
      }
    }
  }

  // A spec pulled for a run whose owner asked, moments ago, to end it while it was queued: a cascade
  // that aborts a parent's runs frees slots in which daemons pull the very runs the queue-group member is
  // ending (queued-control.ts). Claiming one here would do that work twice (a full spec decode, a claim,
  // a fenced event) on every daemon with a free slot; put it back instead, once, after the grace in
  // which the member ends it and removes the spec. Only a control with the owner's proof does this —
  // a forged one must not hold a run back — and a run put back once then starts as usual and meets
  // the control at its claim.
  #leaveToQueuedEnd(message: JsMsg, runId: string): boolean {
    const controls = this.#recentControls.deferOnce(runId);
    if (controls.length === 0) return false;
    let owner: ReturnType<typeof decodeSpecOwnership>;
    try {
      owner = decodeSpecOwnership(message.data);
    } catch {
      return false; // the full path fails the malformed spec
    }
    if (owner.run_id !== runId) return false;
    const authorized = controls.some((control) =>
      abortAuthorized(owner.owner_token ?? null, runId, control.proof, control.mode),
    );
    if (!authorized) return false;
    message.nak(QUEUED_END_GRACE_MS);
    this.#logger.info(
      { runId, graceMs: QUEUED_END_GRACE_MS },
      "spec put back: its owner is ending the queued run",
    );
    return true;
  }

  #accept(message: JsMsg): void {
    if (this.#state !== "running") {
      message.nak(); // arrived while draining: another daemon takes it at once
      return;
    }
    const runId = this.#resources?.subjects.runIdOf(message.subject) ?? "";
    const active = this.#active.get(runId);
    if (active) {
      if (message.seq === active.specSeq) {
        // The same spec redelivered while this daemon still runs it: keep the claim, drop the copy.
        message.working();
      } else if (message.seq > active.specSeq) {
        // Another spec for a run this daemon runs (a specs stream without the one-per-subject guard):
        // the spec stored first owns the run.
        void this.#executor!.refuseSpec(message, active.specSeq, this.#logger.child({ runId })).catch(
          (error: unknown) => this.#logger.warn({ err: error, runId }, "could not remove a refused spec"),
        );
      } else {
        message.nak(1_000); // stored before the one running here: let the claim in progress settle first
      }
      return;
    }
    if (this.#leaveToQueuedEnd(message, runId)) return;
    const context: RunContext = {
      message,
      onEnd: () => undefined,
      onClaimed: () => this.#beatSoon(),
      onPaused: (paused) => {
        if (paused) {
          this.#paused.add(runId);
          this.#slotFreed?.();
          this.#slotFreed = undefined;
        } else this.#paused.delete(runId);
      },
      // Asked by a paused run (not counted in the slots in use) before it goes on.
      mayResume: () => this.#config.concurrency - (this.#active.size - this.#paused.size) > 0,
    };
    const run = this.#executor!.start(context);
    this.#active.set(run.runId, run);
    for (const control of this.#recentControls.take(run.runId)) run.abort(control);
    this.#options.metrics?.runsActive.set(this.#active.size);
    void run.done.finally(() => {
      this.#paused.delete(run.runId);
      this.#active.delete(run.runId);
      this.#options.metrics?.runsActive.set(this.#active.size);
      this.#slotFreed?.();
      this.#slotFreed = undefined;
      if (this.#active.size === 0) for (const resolveIdle of this.#idleWaiters.splice(0)) resolveIdle();
    });
  }

  /**
   * Beats this daemon's presence and follows the others': a daemon silent for `failoverAfterMs` is
   * gone, and its runs are handed back to the queue at once (failover.ts) instead of after ack_wait.
   */
  #followPresence(): void {
    const config = this.#config;
    const resources = this.#resources!;
    // Silence is judged more often than beats are sent, so that a death is acted on close to
    // `failoverAfterMs` after the last beat, not up to a beat later.
    const sweepMs = Math.max(25, Math.min(100, config.presenceMs));
    const peers = new PeerPresence({
      selfId: this.id,
      intervalMs: sweepMs,
      silentAfterMs: config.failoverAfterMs,
    });
    this.#peers = peers;
    // This daemon hears its own beats too: when it has not for a while, it is cut off from NATS, the
    // others cannot hear it either, and they have taken its runs (see #abandonRunsIfCutOff).
    let selfHeardAt = Date.now();
    this.#subscriptions.push(
      this.#options.nc.subscribe(resources.subjects.allPresence, {
        callback: (error, message) => {
          if (error) return;
          try {
            const presence = daemonPresenceCodec.decode(message.data);
            // A beat speaks for the daemon its subject names, no other.
            if (message.subject !== resources.subjects.presence(presence.daemon_id)) {
              throw new ProtocolError("invalid_message", "a presence beat on another daemon's subject");
            }
            if (presence.daemon_id === this.id) selfHeardAt = Date.now();
            peers.observe(presence, Date.now());
          } catch (decodeError) {
            const code = decodeError instanceof ProtocolError ? decodeError.code : "internal";
            this.#options.metrics?.refusedControls.inc({ kind: code });
          }
        },
      }),
    );
    // Cut off from NATS, this daemon heard nobody: nobody is judged on that.
    void (async () => {
      for await (const status of this.#options.nc.status()) {
        if (status.type === "reconnect" || status.type === "disconnect") peers.refreshAll(Date.now());
      }
    })().catch(() => undefined);
    this.#timers.push(setInterval(() => this.#beat(), config.presenceMs).unref());
    if (config.failoverAfterMs > 0) {
      let lastSweepAt = Date.now();
      this.#timers.push(
        setInterval(() => {
          const now = Date.now();
          const late = now - lastSweepAt > 2 * sweepMs;
          lastSweepAt = now;
          // After this daemon's own stall, its own beats are still queued: it was not cut off.
          if (late) selfHeardAt = now;
          const gone = peers.sweep(now);
          if (this.#state === "running") this.#handOffSilentPeers(gone);
          this.#abandonRunsIfCutOff(Math.max(now - selfHeardAt, this.#storage.unavailableForMs(now)));
        }, sweepMs).unref(),
      );
    }
    this.#beat();
  }

  // The claims of a burst (a fan-out's specs pulled together) share one beat, sent once the claims
  // already answered have run on: each beat lists every run held here, so a beat per claim would cost
  // the square of the burst on this daemon and on every peer that decodes them.
  #beatSoon(): void {
    if (this.#beatPending) return;
    this.#beatPending = true;
    setImmediate(() => {
      this.#beatPending = false;
      this.#beat();
    });
  }

  #beat(runs?: HeldRun[]): void {
    const resources = this.#resources;
    if (!resources) return;
    const now = Date.now();
    const presence: DaemonPresence = {
      v: PROTOCOL_VERSION,
      daemon_id: this.id,
      at: now,
      runs: runs ?? [...this.#active.values()].flatMap((run) => run.held() ?? []),
    };
    if (this.#pullUntil > now) presence.pull_ms = Math.min(60_000, this.#pullUntil - now);
    try {
      this.#options.nc.publish(resources.subjects.presence(this.id), daemonPresenceCodec.encode(presence));
    } catch (error) {
      this.#logger.debug({ err: error }, "presence beat not sent");
    }
  }

  /**
   * Cut off from NATS — or from JetStream's storage: no quorum, or its node cut from the others — for
   * `CUT_OFF_FAILOVER_MULTIPLE × failoverAfterMs`, this daemon stops its runs without ending them or
   * touching their specs: the others took them over long ago, or nobody can record them (every model
   * call it still streams is paid twice, or for nothing). Shorter cuts (a NATS node restarting, a
   * leader election) leave the runs going: their events are published when the link is back. Runs
   * nobody took over are redelivered after `ack_wait` once JetStream stores again.
   */
  #abandonRunsIfCutOff(silentForMs: number): void {
    if (silentForMs < CUT_OFF_FAILOVER_MULTIPLE * this.#config.failoverAfterMs || this.#active.size === 0)
      return;
    const runs = [...this.#active.values()].filter((run) => run.held() !== undefined);
    if (runs.length === 0) return;
    this.#logger.warn(
      { silentForMs, runs: runs.map((run) => run.runId) },
      "cut off from NATS or from JetStream's storage: these runs are taken over or cannot be recorded; stopping them here",
    );
    for (const run of runs) run.abandon();
  }

  #handOffSilentPeers(gone: readonly SilentPeer[]): void {
    const context = { resources: this.#resources!, daemonId: this.id, logger: this.#logger };
    for (const presence of gone) {
      this.#logger.warn({ silent: presence.daemon_id, runs: presence.runs.length }, "a daemon went silent");
      for (const run of presence.runs) {
        void handOffRun(context, presence, run)
          .then((handed) => {
            if (handed) this.#options.metrics?.handoffs.inc();
          })
          .catch((error: unknown) =>
            this.#logger.warn({ err: error, runId: run.run_id }, "handing a run back failed"),
          );
      }
    }
  }

  #onStorageChange(transition: StorageTransition): void {
    this.#options.metrics?.storageAvailable.set(transition.kind === "available" ? 1 : 0);
    if (transition.kind === "unavailable") {
      this.#logger.error(
        { err: transition.error },
        "JetStream is not storing this daemon's writes (no quorum, or this daemon's NATS node is cut from the others): taking no new work; runs stop after the cut-off time",
      );
    } else {
      this.#logger.warn({ unavailableForMs: transition.unavailableForMs }, "JetStream stores again");
    }
  }

  /** False while JetStream does not store this daemon's writes (see {@link StorageHealth}). */
  get storageAvailable(): boolean {
    return this.#storage.available;
  }

  #keepClaimsAlive(): void {
    for (const run of this.#active.values()) run.keepAlive();
  }

  async #heartbeat(): Promise<void> {
    const resources = this.#resources;
    if (!resources || this.#state === "stopped") return;
    const now = Date.now();
    const info: DaemonInfo = {
      v: PROTOCOL_VERSION,
      daemon_id: this.id,
      host: hostname(),
      pid: process.pid,
      version: this.#options.version ?? DAEMON_VERSION,
      protocol: PROTOCOL_VERSION,
      state: this.#state,
      capacity: this.#config.concurrency,
      load: this.#active.size,
      started_at: this.#startedAt,
      heartbeat_at: now,
    };
    if (this.#options.metrics?.url) info.metrics_url = this.#options.metrics.url;
    try {
      await resources.daemons.put(this.id, daemonInfoCodec.encode(info));
      this.#storage.succeeded(Date.now());
    } catch (error) {
      this.#storage.failed(Date.now(), error);
      this.#logger.warn({ err: error }, "daemon heartbeat failed");
    }
    for (const run of this.#active.values()) void run.heartbeat();
  }
}

/**
 * Whether a fetch ended because its pull request went unanswered: nats.js ends a fetch that heard
 * neither a message nor an idle heartbeat for two heartbeat intervals with this error.
 */
function isLostPullRequest(error: unknown): boolean {
  return error instanceof Error && error.name === "JetStreamError" && error.message === "heartbeats missed";
}
