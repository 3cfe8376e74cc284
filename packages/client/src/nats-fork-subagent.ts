// The parent side over NATS: publishes fork specs, follows their events, aborts them, and fans out
// siblings warm-first so that they read the cache the first one writes instead of all missing.

import {
  computeCacheKey,
  derivedPromptCacheKey,
  type ForkHandle,
  type ForkOutcome,
  type ForkParams,
  type ForkSubagent,
  type Logger,
  newRunId,
  PROMPT_CACHE_KEY_RATE_PER_MINUTE,
  promptCacheShard,
  silentLogger,
} from "@forkd/core";
import { forkOutcomeFromTerminalEvent } from "@forkd/core/internal";
import {
  abortRequestCodec,
  CONTROL_REPEAT_HEADER,
  DEFAULT_CACHE_LEADER_WAIT_MS,
  type ForkEvent,
  type ForkPrefix,
  type ForkSpecInput,
  forkSpecCodec,
  type GroupBudget,
  type GroupSpend,
  groupBudgetCodec,
  groupBudgetKey,
  groupSpendCodec,
  groupSpendKey,
  INLINE_PREFIX_THRESHOLD_BYTES,
  isTerminalRunStatus,
  MAX_CACHE_LEADER_WAIT_MS,
  type PermissionRequest,
  type PermissionResponse,
  PROTOCOL_VERSION,
  type PrefixSource,
  permissionRequestCodec,
  permissionResponseCodec,
  queuedRunState,
  type RunState,
  runStateCodec,
  type StopMode,
  steerReplyCodec,
  steerRequestCodec,
  type ToolHostRef,
} from "@forkd/protocol";
import {
  budgetCapProof,
  controlProof,
  groupToken,
  newSecret,
  ownerToken,
  permissionProof,
  steerProof,
} from "@forkd/protocol/internal";
import type { PubAck } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { context, isSpanContextValid, trace } from "@opentelemetry/api";
import { ClientError } from "./errors.js";
import { readEventLog } from "./event-log.js";
import { ForkGroup } from "./fork-group.js";
import { isStorageFull } from "./jetstream-errors.js";
import { confirmPrefix } from "./prefix-collection.js";
import { encodeStoredPrefix, type StoredPrefixRef } from "./prefix-encoding.js";
import { uploadPrefixBytes } from "./prefix-store.js";
import { PrefixUploads } from "./prefix-uploads.js";
import { DeferredRegistrations } from "./queued-registration.js";
import {
  entriesOfRuns,
  groupIndexKey,
  ofGroup,
  ofParent,
  parentIndexKey,
  runIdsOfGroup,
  runIdsOfParent,
} from "./registry-index.js";
import type { ForkResourceOptions } from "./resource-options.js";
import { ensureForkResources, type ForkResources } from "./resources.js";
import { createRunEntry, getRunState, type RunStateEntry, updateRunState } from "./run-registry.js";
import { SpecWriter } from "./spec-writer.js";
import { awaitTerminalEvent } from "./terminal-event.js";
import { TerminalWatch } from "./terminal-watch.js";

/** A follower's `cache_leader`, as its spec carries it (`wait_ms` left out at its default). */
type SpecCacheLeader = NonNullable<ForkSpecInput["cache_leader"]>;
/** Answers a daemon that asks whether a tool call of one of this parent's forks may run. */
export type PermissionHandler = (
  request: PermissionRequest,
) => Promise<PermissionResponse> | PermissionResponse;

/** A budget entry as stored, or undefined when it does not decode (it is then replaced). */
function safeDecodeBudget(bytes: Uint8Array): GroupBudget | undefined {
  try {
    return groupBudgetCodec.decode(bytes);
  } catch {
    return undefined;
  }
}

/** Runs a subagent remembers for cascades (the registry lists the rest). */
const MAX_KNOWN_RUNS = 10_000;

/**
 * How long a cascade abort waits for its runs to end on the fast path before it writes the registry
 * flag of those that did not (TerminalWatch). Longer than a loaded cluster's slowest ending (a 40-run
 * cascade's p99 was ~200 ms before the flags were held back), short enough that a run which never heard
 * the fast path is flagged within a second. @unit ms
 */
export const CASCADE_SETTLE_MS = 500;

/** Options of {@link NatsForkSubagent}. */
export interface NatsForkSubagentOptions extends ForkResourceOptions {
  /**
   * How the prefix travels. `ref` stores it once in the object store and sends its hash; `inline`
   * puts it in every spec (its bytes encoded and validated once per prefix object); `auto` uses
   * `ref` above `inlineThresholdBytes`, and at or below it sends a prefix inline until it is forked a
   * second time, then stores it in the background and refers to it once stored (prefix-uploads.ts).
   * @default "auto"
   */
  prefixTransport?: "auto" | "inline" | "ref";
  /** @unit bytes @default INLINE_PREFIX_THRESHOLD_BYTES (32 KiB) */
  inlineThresholdBytes?: number;
  /**
   * How long a run whose spec is stored is left to a daemon's claim before this parent registers it as
   * `queued` in the registry itself. A free daemon's claim then registers the run in one round trip;
   * reading the run's state, controlling it, or closing this subagent writes a waiting registration
   * at once. Other processes see an unclaimed run that much later.
   * @unit ms @default QUEUED_REGISTRATION_DELAY_MS (20)
   */
  queuedRegistrationDelayMs?: number;
  /**
   * Answers permission requests of forks launched with `permissions.mode: "ask"`, until the run's
   * outcome is read here (see docs/protocol.md). Without it they time out (deny).
   */
  onPermission?: PermissionHandler;
  /** A tool host (see {@link serveTools}) every fork of this subagent may call. */
  toolHost?: ToolHostRef;
  /**
   * This parent's owner key (64 hex characters). Each spec carries the run's owner token derived
   * from it, and the daemon then accepts an abort or a permission answer for the run only with a
   * proof made from that token: another parent of the account can neither stop the run nor answer
   * for it. Share it (e.g. `FORKD_OWNER_KEY`) between processes that must abort each other's runs.
   * @default a new random key per subagent
   */
  ownerKey?: string;
  logger?: Logger;
}

/** One child of a fan-out. */
export interface FanOutChild {
  directive: string;
  forkCall?: ForkParams["forkCall"];
  label?: string | undefined;
  runId?: string;
}

/** Options of {@link NatsForkSubagent.fanOut}. */
export interface FanOutOptions {
  /**
   * Launch one child (the leader) first; the others' first model calls go once its response has
   * begun, so they read the cache entry it writes (an entry is readable only after the writing
   * response has started; N requests fired at once all miss). The others' specs are published as
   * soon as a daemon has claimed the leader, each naming it (`cache_leader`): the daemons claim them
   * and build their requests during the leader's time to first token, and hold only the calls.
   * `false` launches all at once.
   * @default true
   */
  warmFirst?: boolean;
  /**
   * How long the others wait for the leader: to be claimed before their specs are published, then,
   * from each one's claim, for its response to begin; past it they go anyway. @unit ms @default 120000
   */
  warmTimeoutMs?: number;
}

/**
 * W3C trace context of the active OpenTelemetry span, if an SDK is installed. Written in W3C form
 * directly (the spec's field is W3C by definition), whatever propagator the process configured.
 */
function activeTraceContext(): ForkSpecInput["trace"] {
  const span = trace.getSpanContext(context.active());
  if (!span || !isSpanContextValid(span)) return undefined;
  const traceparent = `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
  const tracestate = span.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

/**
 * Runs forks on a forkd cluster. Implements the same {@link ForkSubagent} interface as the in-process fork.
 *
 * @example
 * const forks = await NatsForkSubagent.create(nc);
 * const handle = forks.fork({ prefix, directive: "Audit the codec", parent: { agent_id: "me" } });
 * const outcome = await handle.result();
 */
export class NatsForkSubagent implements ForkSubagent, AsyncDisposable {
  readonly resources: ForkResources;
  readonly #options: NatsForkSubagentOptions;
  readonly #logger: Logger;
  // Encoded prefixes by object identity: N forks of one parent encode, hash and upload once.
  readonly #encodedPrefixes = new WeakMap<ForkPrefix, { bytes: Uint8Array; ref: StoredPrefixRef }>();
  /** Inline specs: each prefix's bytes checked once, spliced into every spec that carries it. */
  readonly #specWriter = new SpecWriter();
  // Uploads by prefix hash (past half the store's TTL the object may be gone by the time a daemon reads
  // it, so the next fork uploads again), and whether a small prefix is stored for its siblings yet.
  readonly #uploads: PrefixUploads;
  // Confirmations of a stored prefix, by hash: the one running, and the one waiting to begin, which
  // every fork whose spec is stored meanwhile joins (see #confirmStored).
  readonly #confirming = new Map<string, Promise<void>>();
  readonly #confirmWaiting = new Map<string, Promise<void>>();
  // Runs forked here under an "ask" permission policy: the runs whose permission requests this parent
  // answers. A run leaves once its outcome is known here (or its launch failed); bounded like #known,
  // oldest first, for runs whose result is never awaited — a run forgotten so gets no answer, and its
  // daemon's ask times out, which denies.
  readonly #permissionRuns = new Set<string>();
  readonly #closers: (() => void)[] = [];
  readonly #ownerKey: string;
  // Runs forked here, oldest first: a cascade over a group or a parent sends them its fast-path
  // requests before it lists the registry (which finds those forked elsewhere too; those not yet
  // registered are only here). A run leaves once its outcome is read here, or a cascade finds it
  // ended; bounded for runs whose result is never awaited: past MAX_KNOWN_RUNS the oldest are
  // forgotten. (A handle keeps its launch and what that holds, ~3 KB: 10,000 ended runs kept were
  // ~30 MB of a long-lived parent's heap.)
  readonly #known = new Map<string, NatsForkHandle>();
  // Queued registrations of runs forked here, each written a moment after its spec is stored.
  readonly #registrations: DeferredRegistrations;
  #lastGroupToken: { groupId: string; token: string } | undefined;
  // Every parent agent id this subagent forked for: what abortParent() cascades over by default.
  readonly #parents = new Set<string>();

  private constructor(resources: ForkResources, options: NatsForkSubagentOptions) {
    this.resources = resources;
    this.#options = options;
    this.#ownerKey = options.ownerKey ?? newSecret();
    this.#logger = options.logger ?? silentLogger;
    this.#registrations = new DeferredRegistrations(options.queuedRegistrationDelayMs);
    this.#uploads = new PrefixUploads((bytes, ref) => uploadPrefixBytes(resources, bytes, ref), {
      staleAfterMs: resources.options.prefixesTtlMs / 2,
      onBackgroundError: (error, ref) =>
        this.#logger.warn(
          { err: error, hash: ref.hash },
          "could not store a small prefix; its forks stay inline",
        ),
    });
    if (options.onPermission) this.#servePermissions(options.onPermission);
  }

  /** Ensures the JetStream resources exist and returns a ready subagent. */
  static async create(nc: NatsConnection, options: NatsForkSubagentOptions = {}): Promise<NatsForkSubagent> {
    return new NatsForkSubagent(await ensureForkResources(nc, options), options);
  }

  /** Starts one child; returns its handle at once (the spec is published in the background). */
  fork(params: ForkParams): NatsForkHandle {
    return this.#fork(params, undefined);
  }

  /**
   * Forks one child per entry from one parent prefix, uploading the prefix once and launching
   * warm-first (see {@link FanOutOptions.warmFirst}). Returns the handles at once, in order.
   */
  fanOut(
    base: Omit<ForkParams, "directive" | "forkCall" | "label" | "runId">,
    children: FanOutChild[],
    options: FanOutOptions = {},
  ): NatsForkHandle[] {
    if (children.length === 0) return [];
    const warmFirst = options.warmFirst ?? true;
    // Every fan-out is a group: its children can be stopped or aborted as one.
    const groupId = base.groupId ?? newRunId();
    const shards = promptCacheShards(base, children.length);
    const paramsOf = (child: FanOutChild, index: number): ForkParams => {
      const params = { ...base, groupId, ...child } as ForkParams;
      const key = shards.keyOf(index);
      if (key !== undefined && params.provider !== undefined)
        params.provider = { ...params.provider, prompt_cache_key: key };
      return params;
    };
    const handles: NatsForkHandle[] = [];
    const waitMs = Math.min(options.warmTimeoutMs ?? DEFAULT_CACHE_LEADER_WAIT_MS, MAX_CACHE_LEADER_WAIT_MS);
    // One leader per shard (one shard unless an OpenAI fan-out exceeds a key's rate): it writes the
    // shard's cache entry, the shard's others are published once it is claimed, and call once its
    // response has begun (their daemons hold the calls: cache-leader.ts). Not before it is claimed:
    // followers holding every slot of the cluster would leave their leader queued behind them.
    let leader: { claimed: Promise<void>; cacheLeader: SpecCacheLeader | undefined } | undefined;
    children.forEach((child, index) => {
      const leads = index % shards.size === 0;
      if (!warmFirst || leads) {
        const handle = this.#fork(paramsOf(child, index), undefined);
        handles.push(handle);
        if (warmFirst)
          leader = {
            claimed: this.#leaderClaimed(handle, waitMs),
            cacheLeader:
              waitMs < 1
                ? undefined
                : // The default is left out: 99 followers' specs carry it (bench #4 counts their bytes).
                  waitMs === DEFAULT_CACHE_LEADER_WAIT_MS
                  ? { run_id: handle.runId }
                  : { run_id: handle.runId, wait_ms: waitMs },
          };
      } else handles.push(this.#fork(paramsOf(child, index), leader!.claimed, leader!.cacheLeader));
    });
    return handles;
  }

  /**
   * A group of forks with one id (new, or `id` to join an existing one): fork into it, fan out into it,
   * and stop or abort all of its runs, queued ones included.
   */
  group(id: string = newRunId()): ForkGroup {
    return new ForkGroup(this, id);
  }

  /**
   * Aborts (or, with `mode: "stop"`, stops gracefully) every run of group `groupId` that has not
   * ended: those the registry lists and those launched here and not yet registered. Runs of another
   * owner key refuse it (their daemons check the proof). Resolves once each run has ended or carries
   * the registry flag; returns the run ids it was sent to.
   */
  async controlGroup(groupId: string, options: { mode?: StopMode; reason?: string } = {}): Promise<string[]> {
    const local = [...this.#known.values()].filter((handle) => handle.groupId === groupId);
    return this.#controlRuns(
      local,
      { ids: () => runIdsOfGroup(this.resources, groupId), keep: (entries) => ofGroup(entries, groupId) },
      options,
    );
  }

  /**
   * Cascade: aborts (or stops) every run of parent `agentId` — by default of every parent agent id
   * this subagent forked for — queued ones included. Resolves once each run has ended or carries the
   * registry flag; returns the run ids it was sent to.
   */
  async abortParent(agentId?: string, options: { mode?: StopMode; reason?: string } = {}): Promise<string[]> {
    const agents = agentId !== undefined ? [agentId] : [...this.#parents];
    const local = [...this.#known.values()].filter((handle) => agents.includes(handle.parentAgentId ?? ""));
    return this.#controlRuns(
      local,
      {
        ids: async () =>
          (await Promise.all(agents.map((agent) => runIdsOfParent(this.resources, agent)))).flat(),
        keep: (entries) => agents.flatMap((agent) => ofParent(entries, agent)),
      },
      options,
    );
  }

  // The fast path to every run first — those known here at once, then those the registry's index lists
  // — then, for an abort, a bounded wait for the runs to end (TerminalWatch), and the registry flag
  // only for the runs that did not. Each run gets its own proof.
  async #controlRuns(
    local: NatsForkHandle[],
    listing: {
      /** The run ids the registry's index lists (one request; entries are read later). */
      ids: () => Promise<string[]>;
      /** Of the listed runs' entries, those that are really of the group or parent. */
      keep: (entries: RunStateEntry[]) => RunStateEntry[];
    },
    options: { mode?: StopMode; reason?: string },
  ): Promise<string[]> {
    const { nc, subjects } = this.resources;
    const mode = options.mode ?? "abort";
    const reason = options.reason ?? (mode === "stop" ? "stopped by parent" : "aborted by parent");
    const requestedAt = Date.now();
    // A graceful stop lets a turn or a tool finish, which may take minutes: its flags are not held back.
    const watch = mode === "abort" ? new TerminalWatch(nc, subjects) : undefined;
    const targets = new Map<string, NatsForkHandle>();
    const send = (handle: NatsForkHandle): void => {
      watch?.follow(handle.runId);
      targets.set(handle.runId, handle);
      handle.publishControl(mode, reason, requestedAt);
    };
    for (const handle of local) send(handle);
    const flushed = nc.flush();
    const listed = new Set(await listing.ids());
    for (const runId of listed) if (!targets.has(runId)) send(this.attach(runId));
    await Promise.all([flushed, nc.flush()]);
    const ended = watch ? await watch.settled(CASCADE_SETTLE_MS) : new Set<string>();
    // Read only now, after the runs' own ending: the listed runs' entries (which of them are really
    // ours) and the entries of the runs still going (the flag's first read).
    const localIds = new Set(local.map((handle) => handle.runId));
    const entries = await entriesOfRuns(
      this.resources,
      [...targets.keys()].filter((runId) => listed.has(runId) || !ended.has(runId)),
    );
    const kept = new Map(
      listing
        .keep(entries.filter((entry) => listed.has(entry.state.run_id)))
        .map((entry) => [entry.state.run_id, entry]),
    );
    for (const entry of entries) if (localIds.has(entry.state.run_id)) kept.set(entry.state.run_id, entry);
    const flags: Promise<void>[] = [];
    for (const [runId, handle] of targets) {
      const entry = kept.get(runId);
      if (!localIds.has(runId) && entry === undefined) {
        targets.delete(runId); // listed under this group or parent by an index key, but not of it
        continue;
      }
      if (ended.has(runId) || (entry !== undefined && isTerminalRunStatus(entry.state.status))) {
        this.#known.delete(runId);
        continue;
      }
      flags.push(handle.control(mode, reason, requestedAt, { fastPathSent: true, known: entry }));
    }
    await Promise.all(flags);
    return [...targets.keys()];
  }

  /**
   * Sets (or raises, or lowers) the budget shared by every run of group `groupId`, on every daemon:
   * at the cap its runs pause at their next turn boundary, and a raised cap resumes them. Keeps what
   * the group spent (the daemons' entry, {@link groupSpend}). Signed with this subagent's owner key: the runs of a group forked with another
   * key pause rather than obey it. Returns the entry as written.
   */
  async setGroupBudget(groupId: string, cap: GroupBudget["cap"]): Promise<GroupBudget> {
    const key = groupBudgetKey(groupId);
    const token = groupToken(this.#ownerKey, groupId);
    for (let attempt = 1; ; attempt++) {
      const entry = await this.resources.runs.get(key);
      const current =
        entry?.operation === "PUT" && entry.length > 0 ? safeDecodeBudget(entry.value) : undefined;
      const unsigned = {
        v: PROTOCOL_VERSION,
        group_id: groupId,
        cap,
        // Above every version a daemon obeyed too: a cap entry replayed by another parent may be older.
        cap_version:
          Math.max(current?.cap_version ?? 0, (await this.groupSpend(groupId))?.cap_version ?? 0) + 1,
        updated_at: Date.now(),
      } as const;
      const next: GroupBudget = { ...unsigned, cap_proof: budgetCapProof(token, unsigned) };
      const bytes = groupBudgetCodec.encode(next);
      try {
        if (entry && entry.operation === "PUT") await this.resources.runs.update(key, bytes, entry.revision);
        else await this.resources.runs.create(key, bytes);
        return next;
      } catch (error) {
        if (attempt >= 20) throw error;
      }
    }
  }

  /** The budget entry of group `groupId`, or null when it has none. */
  async groupBudget(groupId: string): Promise<GroupBudget | null> {
    const entry = await this.resources.runs.get(groupBudgetKey(groupId));
    if (entry?.operation !== "PUT" || entry.length === 0) return null;
    return groupBudgetCodec.decode(entry.value);
  }
  /**
   * What group `groupId` spent, and the reservations of its model calls in flight, as its daemons
   * wrote it; null when no call of the group ran under a cap.
   */
  async groupSpend(groupId: string): Promise<GroupSpend | null> {
    const entry = await this.resources.runs.get(groupSpendKey(groupId));
    if (entry?.operation !== "PUT" || entry.length === 0) return null;
    return groupSpendCodec.decode(entry.value);
  }

  /** A handle on an existing run (a parent that restarted, an observer). */
  attach(runId: string): NatsForkHandle {
    return new NatsForkHandle(this.resources, runId, Promise.resolve(), this.#logger, this.#ownerKey);
  }

  /** Current registry entry of a run (a run forked here and still unclaimed is registered first). */
  async state(runId: string): Promise<RunState | null> {
    await this.#registrations.flush(runId);
    return (await getRunState(this.resources, runId))?.state ?? null;
  }

  /**
   * Writes the `queued` registrations still waiting (see `queuedRegistrationDelayMs`) and stops the
   * permission responder. Does not close the NATS connection: close this first.
   */
  async close(): Promise<void> {
    await this.#registrations.flushAll();
    for (const close of this.#closers.splice(0)) close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // Resolves once a daemon claimed `handle`'s run: its log's first event (`accepted`, or the run's end
  // when it could not run), or at the timeout, or when its spec could not be published.
  async #leaderClaimed(handle: ForkHandle, timeoutMs: number): Promise<void> {
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      for await (const _event of handle.events({ signal: timeout })) return;
    } catch (error) {
      this.#logger.warn(
        { err: error, runId: handle.runId },
        "warm-first: the leader was not claimed in time; publishing its siblings",
      );
    }
  }

  #fork(
    params: ForkParams,
    releaseAfter: Promise<void> | undefined,
    cacheLeader?: SpecCacheLeader,
  ): NatsForkHandle {
    const runId = params.runId ?? newRunId();
    // Until the spec goes out, a run id made here has nothing stored under it (a given one may: a
    // resubmission of a run that already ran).
    let specUnsent = params.runId === undefined;
    // One of the run's events was heard (by result()'s hints): a daemon's claim registered the run.
    // It can be heard before the spec's acknowledgement is handled, and then no registration is made.
    let claimHeard = false;
    // Everything but the prefix is checked before fork() returns (a bad param throws here); the
    // prefix (already validated by createForkPrefix) is encoded and hashed in the background, so
    // fork() returns at once even for the first fork of a 300k-token parent.
    const withoutPrefix = this.#specOf(params, runId, { kind: "none" });
    if (cacheLeader !== undefined) withoutPrefix.cache_leader = cacheLeader;
    // These are also the whole spec's bytes when there is no prefix to carry.
    const withoutPrefixBytes = forkSpecCodec.encode(withoutPrefix);
    if (params.permissions?.mode === "ask") {
      this.#permissionRuns.add(runId);
      if (this.#permissionRuns.size > MAX_KNOWN_RUNS)
        this.#permissionRuns.delete(this.#permissionRuns.values().next().value!);
    }
    this.#parents.add(params.parent.agent_id);
    const launch = (async () => {
      await Promise.resolve();
      const { prefixSource, upload, ref } = this.#prefixSource(params.prefix);
      const spec = { ...withoutPrefix, prefix: prefixSource };
      const bytes =
        prefixSource.kind === "inline"
          ? this.#inlineSpecBytes(withoutPrefix, prefixSource.prefix)
          : ref !== undefined
            ? this.#specWriter.byReference(withoutPrefix, ref)
            : withoutPrefixBytes;
      // Awaited only when there is something to wait for: otherwise the spec is queued in this microtask,
      // the first after fork() (and a result() called at once) returns, and goes out in the same write as
      // that result()'s subscription, which is queued before it — one system call, not two, per fork.
      if (upload !== undefined || releaseAfter !== undefined) await Promise.all([upload, releaseAfter]);
      const h = natsHeaders();
      if (spec.trace) h.set("traceparent", spec.trace.traceparent);
      let ack: PubAck;
      specUnsent = false;
      try {
        ack = await this.resources.js.publish(this.resources.subjects.spec(runId), bytes, {
          msgID: runId,
          headers: h,
        });
      } catch (error) {
        if (isStorageFull(error)) {
          // One code (10077) for both: this run id already has a spec queued, or the stream is full.
          throw new ClientError(
            "spec_refused",
            `JetStream refused the spec of run ${runId}: ${(error as Error).message} (a run id whose spec is still queued belongs to that spec; a full specs stream takes no more)`,
            { cause: error },
          );
        }
        // No answer, or "no responders": no stream leader is reachable from this connection (the
        // cluster lost quorum, or this client's node is cut from the others).
        throw new ClientError(
          "publish_failed",
          `JetStream did not confirm the spec of run ${runId}: ${(error as Error).message} (no stream leader reachable: the cluster may have lost quorum, or this client's NATS node is cut from the others). The spec may or may not be stored; forking again with the same runId is safe, it is deduplicated`,
          { cause: error },
        );
      }
      // Registered after the spec is stored, with its stream sequence: the registry names the spec
      // that owns the run, and no run id is visible before its spec holds it (a moment later: see
      // #registerQueued).
      await this.#registerQueued(spec, ack.seq, claimHeard);
      if (prefixSource.kind === "ref") await this.#confirmStored(params.prefix!, prefixSource);
    })();
    // A run whose outcome was read here, or whose launch failed, needs nothing more of this subagent.
    const forget = () => {
      this.#known.delete(runId);
      this.#permissionRuns.delete(runId);
    };
    const handle = new NatsForkHandle(this.resources, runId, launch, this.#logger, this.#ownerKey, {
      groupId: params.groupId,
      parentAgentId: params.parent.agent_id,
      register: () => this.#registrations.flush(runId),
      registeredByClaim: () => {
        claimHeard = true;
        this.#registrations.skip(runId);
      },
      specUnsent: () => specUnsent,
      ended: forget,
    });
    this.#known.set(runId, handle);
    if (this.#known.size > MAX_KNOWN_RUNS) this.#known.delete(this.#known.keys().next().value!);
    launch.catch(forget);
    return handle;
  }

  // A fan-out's children share one group: its token (an HMAC) is made once, not once per child.
  #groupTokenOf(groupId: string): string {
    if (this.#lastGroupToken?.groupId !== groupId)
      this.#lastGroupToken = { groupId, token: groupToken(this.#ownerKey, groupId) };
    return this.#lastGroupToken.token;
  }

  #specOf(params: ForkParams, runId: string, prefix: PrefixSource): ForkSpecInput {
    const spec: ForkSpecInput = {
      v: PROTOCOL_VERSION,
      run_id: runId,
      parent: { ...params.parent, lineage: params.parent.lineage ?? [] },
      directive: params.directive,
      prefix,
      owner_token: ownerToken(this.#ownerKey, runId),
      created_at: Date.now(),
    };
    if (params.runId === undefined) spec.fresh_run_id = true;
    if (params.label !== undefined) spec.label = params.label;
    if (params.groupId !== undefined) {
      spec.group_id = params.groupId;
      spec.group_token = this.#groupTokenOf(params.groupId);
    }
    if (params.querySource !== undefined) spec.query_source = params.querySource;
    if (params.forkCall !== undefined) spec.fork_call = params.forkCall;
    if (params.toolFilter !== undefined) spec.tool_filter = params.toolFilter;
    if (params.overrides !== undefined) spec.overrides = params.overrides;
    if (params.limits !== undefined) spec.limits = params.limits;
    if (params.isolation !== undefined) spec.isolation = params.isolation;
    if (params.permissions !== undefined) spec.permissions = params.permissions;
    if (params.deadlineAt !== undefined) spec.deadline_at = params.deadlineAt;
    if (params.provider !== undefined) spec.provider = params.provider;
    if (this.#options.toolHost !== undefined) spec.tool_host = this.#options.toolHost;
    const trace = activeTraceContext();
    if (trace) spec.trace = trace;
    return spec;
  }

  /** Where the spec finds `prefix`; `ref` (the encoding cache's object) when it is stored. */
  #prefixSource(prefix: ForkPrefix | null): {
    prefixSource: PrefixSource;
    upload: Promise<void> | undefined;
    ref?: StoredPrefixRef;
  } {
    if (prefix === null) return { prefixSource: { kind: "none" }, upload: undefined };
    const transport = this.#options.prefixTransport ?? "auto";
    if (transport === "inline") return { prefixSource: { kind: "inline", prefix }, upload: undefined };
    const { bytes, ref } = this.#encoded(prefix);
    if (
      transport === "auto" &&
      ref.size <= (this.#options.inlineThresholdBytes ?? INLINE_PREFIX_THRESHOLD_BYTES) &&
      !this.#uploads.storedForReuse(bytes, ref)
    ) {
      return { prefixSource: { kind: "inline", prefix }, upload: undefined };
    }
    return {
      prefixSource: { kind: "ref", hash: ref.hash, size: ref.size },
      upload: this.#uploads.forReference(bytes, ref),
      ref,
    };
  }

  /** A spec with `prefix` inline: its checked bytes spliced into the spec's own (see {@link SpecWriter}). */
  #inlineSpecBytes(withoutPrefix: ForkSpecInput, prefix: ForkPrefix): Uint8Array {
    let prefixBytes: Uint8Array;
    try {
      prefixBytes = this.#encoded(prefix).bytes;
    } catch {
      // A prefix that does not validate: the spec codec says why, at the field's path in the spec.
      return forkSpecCodec.encode({ ...withoutPrefix, prefix: { kind: "inline", prefix } });
    }
    return this.#specWriter.inline(withoutPrefix, prefixBytes);
  }

  /** The prefix's bytes as stored (and as spliced into inline specs), encoded and validated once per prefix object. */
  #encoded(prefix: ForkPrefix): { bytes: Uint8Array; ref: StoredPrefixRef } {
    let encoded = this.#encodedPrefixes.get(prefix);
    if (!encoded) {
      encoded = encodeStoredPrefix(prefix);
      this.#encodedPrefixes.set(prefix, encoded);
    }
    return encoded;
  }

  /**
   * {@link #confirmPrefix} for a fork whose spec is stored, shared with its siblings: a confirmation
   * covers every fork whose spec was stored before it began, so a fork joins the one that has not
   * begun yet, or has the next one wait for the one running. A fan-out of 100 children reads the
   * prefix's metadata a few times instead of 100 (bench #4: ~200 bytes from the parent per fork).
   */
  #confirmStored(prefix: ForkPrefix, ref: StoredPrefixRef): Promise<void> {
    const waiting = this.#confirmWaiting.get(ref.hash);
    if (waiting) return waiting;
    const next = (this.#confirming.get(ref.hash) ?? Promise.resolve()).then(() => {
      // It begins now: a spec stored from here on needs the next one.
      this.#confirmWaiting.delete(ref.hash);
      const running = this.#confirmPrefix(prefix, ref);
      this.#confirming.set(ref.hash, running);
      return running.finally(() => {
        if (this.#confirming.get(ref.hash) === running) this.#confirming.delete(ref.hash);
      });
    });
    this.#confirmWaiting.set(ref.hash, next);
    return next;
  }

  /**
   * After the spec is stored: the prefix it refers to may have been collected meanwhile (or be
   * being collected); upload it again then, so the run finds it (prefix-collection.ts).
   */
  async #confirmPrefix(prefix: ForkPrefix, ref: StoredPrefixRef): Promise<void> {
    const encoded = this.#encoded(prefix);
    try {
      await confirmPrefix(this.resources, ref, {
        touchAfterMs: this.resources.options.prefixRetentionMs / 4,
        upload: () => uploadPrefixBytes(this.resources, encoded.bytes, ref),
      });
    } catch (error) {
      this.#logger.warn({ err: error, hash: ref.hash }, "could not confirm a stored prefix");
    }
  }

  // The run is indexed at once (a listing by parent or group finds it) and registered as queued a
  // moment later: a daemon with a free slot claims it first, in one round trip (queued-registration.ts)
  // — not at all when one of its events was heard already.
  async #registerQueued(spec: ForkSpecInput, specSeq: number, claimHeard: boolean): Promise<void> {
    const runId = spec.run_id;
    if (!claimHeard)
      this.#registrations.schedule(runId, async () => {
        const queued = queuedRunState({
          runId,
          createdAt: spec.created_at,
          now: Date.now(),
          specSeq,
          parentAgentId: spec.parent.agent_id,
          label: spec.label,
          groupId: spec.group_id,
        });
        try {
          await createRunEntry(this.resources, runId, runStateCodec.encode(queued));
        } catch {
          // Already registered: a daemon claimed it first, or an idempotent resubmission. (A run id whose
          // entry was deleted is refused too; its daemon's claim registers it.)
        }
      });
    // The parent index key lets `forkd ps --parent` list this parent's runs without a scan; the
    // retention sweep removes it with the entry. It is not urgent, so it is written on the event
    // loop's next turn: the spec's acknowledgement is read in the same poll as whatever else is ready,
    // such as the spec's delivery to a daemon in this process, and that goes first (bench #2 at 4k:
    // −0.13 to −0.17 ms, A/B in one process).
    await new Promise<void>((resolve) => setImmediate(resolve));
    const indexKeys = [parentIndexKey(spec.parent.agent_id, runId)];
    if (spec.group_id !== undefined) indexKeys.push(groupIndexKey(spec.group_id, runId));
    await Promise.all(
      indexKeys.map((key) =>
        this.resources.runs
          .put(key, new Uint8Array(0))
          .catch((error: unknown) => this.#logger.warn({ err: error, key }, "could not index the run")),
      ),
    );
  }

  #servePermissions(handler: PermissionHandler): void {
    const subscription = this.resources.nc.subscribe(this.resources.subjects.allPermissions, {
      callback: (error, message) => {
        if (error) return;
        void (async () => {
          let request: PermissionRequest;
          try {
            request = permissionRequestCodec.decode(message.data);
          } catch (decodeError) {
            this.#logger.warn({ err: decodeError }, "ignoring a malformed permission request");
            return;
          }
          if (!this.#permissionRuns.has(request.run_id)) return; // another parent's fork
          let response: PermissionResponse;
          try {
            response = await handler(request);
          } catch (handlerError) {
            response = {
              v: PROTOCOL_VERSION,
              decision: "deny",
              reason: `permission handler failed: ${String(handlerError)}`,
            };
          }
          const proof = permissionProof(ownerToken(this.#ownerKey, request.run_id), request);
          let reply: Uint8Array;
          try {
            reply = permissionResponseCodec.encode({ ...response, proof });
          } catch (encodeError) {
            // An answer the protocol cannot carry (a reason over 4,096 characters — one that quotes a
            // hostile model's tool input, say — or no valid decision) is a denial, not an error thrown
            // in this callback, where it would end the parent's process as an unhandled rejection.
            this.#logger.warn(
              { err: encodeError, runId: request.run_id },
              "the permission handler's answer is not a valid response; denying",
            );
            reply = permissionResponseCodec.encode({
              v: PROTOCOL_VERSION,
              decision: "deny",
              reason: "denied: the parent's permission handler gave an answer that is not a valid response",
              proof,
            });
          }
          message.respond(reply);
        })();
      },
    });
    this.#closers.push(() => subscription.unsubscribe());
  }
}

/** A run on the cluster, seen from the parent: a {@link ForkHandle} that also says when its spec is out. */
export class NatsForkHandle implements ForkHandle {
  readonly runId: string;
  readonly #resources: ForkResources;
  readonly #launch: Promise<void>;
  readonly #logger: Logger;
  readonly #ownerKey: string;
  /** The run's group, when it was forked into one here. */
  readonly groupId: string | undefined;
  /** The parent agent id of the run, when it was forked here. */
  readonly parentAgentId: string | undefined;
  // Writes the run's queued registration now if it still waits (a run forked here), so that a control
  // flag lands on the entry its parent registers rather than on one it makes up.
  readonly #register: () => Promise<void>;
  // Drops that registration: the run's claim registered it (one of its events was heard).
  readonly #registeredByClaim: () => void;
  // Whether the run's spec has yet to go out (and nothing can be stored under its id before it does).
  readonly #specUnsent: () => boolean;
  // Told once the run's outcome is known here (its terminal event read).
  readonly #ended: () => void;
  #result: Promise<ForkOutcome> | undefined;
  #settled = false;
  #launched = false;

  /** @internal Made by {@link NatsForkSubagent}. */
  constructor(
    resources: ForkResources,
    runId: string,
    launch: Promise<void>,
    logger: Logger,
    ownerKey: string,
    origin: {
      groupId?: string | undefined;
      parentAgentId?: string | undefined;
      register?: () => Promise<void>;
      registeredByClaim?: () => void;
      specUnsent?: () => boolean;
      ended?: () => void;
    } = {},
  ) {
    this.groupId = origin.groupId;
    this.parentAgentId = origin.parentAgentId;
    this.#register = origin.register ?? (() => Promise.resolve());
    this.#registeredByClaim = origin.registeredByClaim ?? (() => undefined);
    this.#specUnsent = origin.specUnsent ?? (() => false);
    this.#ended = origin.ended ?? (() => undefined);
    launch.then(
      () => {
        this.#launched = true;
      },
      () => undefined,
    );
    this.#resources = resources;
    this.#ownerKey = ownerKey;
    this.runId = runId;
    this.#launch = launch;
    this.#logger = logger;
    launch.catch((error) => logger.warn({ err: error, runId }, "fork launch failed"));
  }

  /**
   * Resolves once the spec is stored in JetStream (after a warm-first sibling's release, and the
   * prefix upload); rejects when it could not be published. For a handle from {@link NatsForkSubagent.attach}, at once.
   */
  published(): Promise<void> {
    return this.#launch;
  }

  events(options: { signal?: AbortSignal } = {}): AsyncIterable<ForkEvent> {
    const resources = this.#resources;
    const runId = this.runId;
    const launch = this.#launch;
    return {
      async *[Symbol.asyncIterator]() {
        // A launch failure would leave the log empty forever: surface it instead of waiting.
        const failed = new AbortController();
        launch.catch(() => failed.abort());
        const signal = options.signal ? AbortSignal.any([options.signal, failed.signal]) : failed.signal;
        try {
          for await (const logged of readEventLog(resources, runId, { follow: true, signal }))
            yield logged.event;
        } catch (error) {
          if (failed.signal.aborted) await launch; // rethrows the launch error
          throw error;
        }
      },
    };
  }

  /**
   * Resolves with the run's outcome once its terminal event is stored (see {@link awaitTerminalEvent}:
   * no consumer while the run is young); rejects when the spec could not be launched, or with the
   * signal's reason.
   */
  result(options: { signal?: AbortSignal } = {}): Promise<ForkOutcome> {
    if (options.signal) return this.#awaitTerminal(options.signal);
    this.#result ??= this.#awaitTerminal(undefined).finally(() => {
      this.#settled = true;
    });
    return this.#result;
  }

  // Only the terminal event, as stored: no consumer of the whole log in a young run (terminal-event.ts).
  async #awaitTerminal(signal: AbortSignal | undefined): Promise<ForkOutcome> {
    // A launch failure would leave the log empty forever: surface it instead of waiting.
    const failed = new AbortController();
    this.#launch.catch(() => failed.abort());
    try {
      const terminal = await awaitTerminalEvent(this.#resources, this.runId, {
        signal: signal ? AbortSignal.any([signal, failed.signal]) : failed.signal,
        readAfter: this.#launch,
        // Subscribed before the spec went out, on the same connection: every event will be heard.
        readFirst: !this.#specUnsent(),
        onHeard: this.#registeredByClaim,
      });
      this.#ended();
      return forkOutcomeFromTerminalEvent(terminal.event);
    } catch (error) {
      if (failed.signal.aborted && !signal?.aborted) await this.#launch; // rethrows the launch error
      throw error;
    }
  }

  async abort(reason = "aborted by parent"): Promise<void> {
    await this.control("abort", reason);
  }

  /**
   * Graceful stop: the run's current model turn or tool finishes, nothing new starts, and the run ends
   * `completed` with what it has (`result.stop: "stopped"`, `result.stop_reason`). A queued run ends
   * at once without running.
   */
  async stop(reason = "stopped by parent"): Promise<void> {
    await this.control("stop", reason);
  }

  /**
   * Steers the running child: `text` becomes a user message at its next turn boundary (a `steered`
   * event, kept in the log). Resolves once the daemon running it took the message; rejects with
   * `run_not_running` when no daemon runs it (queued or ended) and `steer_refused` when the daemon
   * refused it (a run of another owner, a run being stopped).
   */
  async send(text: string, options: { by?: string; timeoutMs?: number } = {}): Promise<void> {
    const resources = this.#resources;
    const request = {
      v: PROTOCOL_VERSION,
      run_id: this.runId,
      steer_id: newRunId(),
      text,
      requested_at: Date.now(),
      ...(options.by !== undefined ? { by: options.by } : {}),
    } as const;
    const proof = steerProof(ownerToken(this.#ownerKey, this.runId), request);
    const bytes = steerRequestCodec.encode({ ...request, proof });
    let replyData: Uint8Array;
    try {
      const reply = await resources.nc.request(resources.subjects.steer(this.runId), bytes, {
        timeout: options.timeoutMs ?? 5_000,
      });
      replyData = reply.data;
    } catch (error) {
      throw new ClientError(
        "run_not_running",
        `no daemon runs ${this.runId} now (queued, ended or unknown): the message was not delivered`,
        { cause: error, retryable: true },
      );
    }
    const reply = steerReplyCodec.decode(replyData);
    if (!reply.accepted) {
      throw new ClientError(
        reply.code === "not_running" ? "run_not_running" : "steer_refused",
        `run ${this.runId} refused the message: ${reply.message ?? reply.code ?? "no reason given"}`,
      );
    }
  }

  #controlRequest(mode: StopMode, reason: string, requestedAt: number): { bytes: Uint8Array; proof: string } {
    const proof = controlProof(ownerToken(this.#ownerKey, this.runId), this.runId, mode);
    const bytes = abortRequestCodec.encode({
      v: PROTOCOL_VERSION,
      run_id: this.runId,
      reason,
      requested_at: requestedAt,
      proof,
      ...(mode === "stop" ? { mode } : {}),
    });
    return { bytes, proof };
  }

  /** @internal The fast path of an abort or a stop alone (core NATS, not flushed): cascades send it to every run first. */
  publishControl(mode: StopMode, reason: string, requestedAt: number): void {
    const { bytes } = this.#controlRequest(mode, reason, requestedAt);
    this.#resources.nc.publish(this.#resources.subjects.abort(this.runId), bytes);
  }

  /** @internal An abort or a stop, with the proof of its mode; used by groups and cascades too. */
  async control(
    mode: StopMode,
    reason: string,
    requestedAt = Date.now(),
    options: {
      fastPathSent?: boolean;
      /** The run's registry entry as just read, to save the flag's first read. */
      known?: RunStateEntry | undefined;
    } = {},
  ): Promise<void> {
    const resources = this.#resources;
    const { bytes, proof } = this.#controlRequest(mode, reason, requestedAt);
    const subject = resources.subjects.abort(this.runId);
    // Fast path first (unless a cascade sent it already): a daemon running the run stops within
    // milliseconds.
    if (!options.fastPathSent) resources.nc.publish(subject, bytes);
    // Then the registry flag, for a spec picked up or redelivered later — on the entry the parent
    // registers (written now if it still waits), once the fast path has left for the socket.
    await new Promise((resolveTurn) => setImmediate(resolveTurn));
    await this.#register();
    await updateRunState(
      resources,
      this.runId,
      (current) => {
        if (current && isTerminalRunStatus(current.status)) {
          return "unchanged";
        }
        // A stop never softens an abort already asked for.
        if (mode === "stop" && current?.abort !== undefined && current.abort.mode !== "stop")
          return "unchanged";
        const now = Date.now();
        const base = current ?? queuedRunState({ runId: this.runId, createdAt: now, now });
        const flag = { reason, requested_at: requestedAt, proof, ...(mode === "stop" ? { mode } : {}) };
        return { ...base, updated_at: now, abort: flag };
      },
      options.known !== undefined ? { known: options.known } : {},
    );
    // Again, for a daemon that claimed the run between the first publish and the flag (marked: the
    // queue group's member that ends queued runs had the first).
    const repeat = natsHeaders();
    repeat.set(CONTROL_REPEAT_HEADER, "1");
    resources.nc.publish(subject, bytes, { headers: repeat });
    await resources.nc.flush();
    // A spec still being launched (a warm-first sibling): once stored, a queued run is ended at once.
    // By then the parent may have closed its connection (a Ctrl-C mid fan-out): the registry flag
    // written above already ends the run, so the repeat is dropped, never thrown where no one awaits.
    if (!this.#launched)
      void this.#launch.then(
        () => {
          try {
            resources.nc.publish(subject, bytes);
          } catch (error) {
            this.#logger.debug(
              { err: error, runId: this.runId },
              "abort after launch not sent: connection closed",
            );
          }
        },
        () => undefined,
      );
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#result === undefined && !this.#settled) {
      try {
        await this.abort("handle disposed before its result was awaited");
      } catch (error) {
        this.#logger.warn({ err: error, runId: this.runId }, "abort on dispose failed");
      }
    }
  }
}

/**
 * How an OpenAI fan-out splits its `prompt_cache_key`: shards of
 * {@link PROMPT_CACHE_KEY_RATE_PER_MINUTE} children, the first with the key the parent's params say
 * (or the daemon's derived one), each further one with the prefix's derived key of its shard. Any
 * other provider is one shard with no key.
 */
function promptCacheShards(
  base: Pick<ForkParams, "prefix" | "provider">,
  count: number,
): { size: number; keyOf(index: number): string | undefined } {
  const api = base.provider?.api;
  if (
    api === undefined ||
    api === "anthropic" ||
    base.prefix === null ||
    count <= PROMPT_CACHE_KEY_RATE_PER_MINUTE
  )
    return { size: Number.POSITIVE_INFINITY, keyOf: () => undefined };
  const hash = computeCacheKey(base.prefix.params, base.prefix.betas).hash;
  return {
    size: PROMPT_CACHE_KEY_RATE_PER_MINUTE,
    keyOf: (index) => {
      const shard = promptCacheShard(index);
      return shard === 0 ? base.provider?.prompt_cache_key : derivedPromptCacheKey(hash, shard);
    },
  };
}
