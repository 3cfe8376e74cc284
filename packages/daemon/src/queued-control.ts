// An abort or a stop of a run that no daemon runs yet: its spec waits in the work queue, perhaps
// behind hundreds of others. Rather than leave the run queued until a daemon has a free slot (the
// registry flag then ends it at pickup), one daemon — the abort subject's queue-group member — ends it
// now: it publishes the run's terminal event, fenced on the log as it read it (empty, for a run never
// claimed), records it and removes the spec. The fenced publish is the claim: a daemon that pulled the
// spec meanwhile and published first keeps the run (ours is refused), and one that publishes after us
// is fenced and stops (docs/protocol.md, "Stopping a queued run"). No registry compare-and-set comes
// before the event: in a cascade every request of every run waits behind the others on the server.
import { type ForkResources, lastLoggedEvent } from "@forkd/client";
import { readStoredSpec } from "@forkd/client/internal";
import {
  type AbortRequest,
  decodeSpecOwnership,
  emptyUsageTotals,
  type ForkEventBody,
  type ForkSpecOwnership,
  isTerminalEvent,
} from "@forkd/protocol";
import type { EndingOrder } from "./ending-order.js";
import { DaemonError } from "./errors.js";
import { RunEventPublisher } from "./event-publisher.js";
import type { DaemonLogger } from "./logger.js";
import type { DaemonMetrics } from "./metrics.js";
import { readRunState } from "./registry-trust.js";
import { recordTerminal } from "./run-ending.js";
import { abortAuthorized } from "./run-executor.js";
import type { NamedSecret } from "./tools/secrets.js";

/**
 * How long a daemon that pulled the spec of a run being ended where it waits puts it back for: time for
 * the queue-group member to end it and remove the spec (a few round trips; tens of milliseconds, a few
 * hundred on a loaded machine). A run still there after it starts as usual and meets the control at its
 * claim, so a run that no member ends (its registry entry missing) ends this much later, not never.
 * @unit ms
 */
export const QUEUED_END_GRACE_MS = 500;

/**
 * How long the owner read from a queued run's stored spec answers for further controls of that run
 * without a proof of that owner. @unit ms
 */
export const SPEC_OWNER_TTL_MS = 5_000;
/** The most runs whose spec owner is kept: a flood over many run ids costs bounded memory. */
export const MAX_SPEC_OWNERS = 4_096;
/**
 * The most spec reads a daemon has in flight for controls of queued runs: a spec may be 4 MiB, and
 * the server cuts off a client it holds more than 64 MiB of replies for. One forged abort for each
 * of 80 queued specs of ~900 KB did, read all at once.
 */
export const MAX_SPEC_READS_IN_FLIGHT = 4;

/** A stored spec's owner, and the spec's stream sequence. */
export type StoredOwnership = { spec: ForkSpecOwnership; seq: number };

/**
 * The owners of stored specs read lately, by run id, reads in flight included. Judging a control's
 * proof needs the spec's owner token, and a spec — an inline conversation, hundreds of kilobytes — was
 * read and parsed again for every control: a few hundred forged aborts of one queued run, each a
 * hundred bytes, had the server push so many copies at once that it cut the daemon off as a slow
 * consumer, and the owner's own abort among them was lost. The owner a stored spec names never changes,
 * so a control that does not carry its proof is refused from here; one that does still reads the spec
 * anew before ending the run.
 */
export class SpecOwners {
  readonly #byRun = new Map<string, { at: number; read: Promise<StoredOwnership | null> }>();
  readonly #readOwner: (runId: string) => Promise<StoredOwnership | null>;
  readonly #now: () => number;
  #readsInFlight = 0;
  /** Reads waiting for one in flight to end, oldest first; each is handed that read's place. */
  readonly #waiting: (() => void)[] = [];

  /**
   * @param readOwner reads the owner of a run's stored spec (null: none stored, or not readable).
   * @param now the clock of {@link SPEC_OWNER_TTL_MS}.
   */
  constructor(readOwner: (runId: string) => Promise<StoredOwnership | null>, now: () => number = Date.now) {
    this.#readOwner = readOwner;
    this.#now = now;
  }

  /** Owners read from `resources`' specs stream. */
  static of(resources: ForkResources): SpecOwners {
    return new SpecOwners((runId) => storedSpec(resources, runId));
  }

  /** The owner read for `runId` within {@link SPEC_OWNER_TTL_MS}, or in flight; undefined when none. */
  recent(runId: string): Promise<StoredOwnership | null> | undefined {
    const known = this.#byRun.get(runId);
    return known !== undefined && this.#now() - known.at <= SPEC_OWNER_TTL_MS ? known.read : undefined;
  }

  /** Reads the owner of `runId`'s stored spec now, and keeps the read for the controls that follow. */
  read(runId: string): Promise<StoredOwnership | null> {
    const now = this.#now();
    for (const [known, entry] of this.#byRun) {
      if (now - entry.at <= SPEC_OWNER_TTL_MS && this.#byRun.size < MAX_SPEC_OWNERS) break;
      this.#byRun.delete(known); // insertion order is age order: the oldest go first
    }
    const read = this.#readInTurn(runId);
    this.#byRun.delete(runId);
    this.#byRun.set(runId, { at: now, read });
    return read;
  }

  async #readInTurn(runId: string): Promise<StoredOwnership | null> {
    if (this.#readsInFlight < MAX_SPEC_READS_IN_FLIGHT) this.#readsInFlight++;
    // A flood past this many waiting: read as not stored, so the run is left to its registry flag.
    else if (this.#waiting.length >= MAX_SPEC_OWNERS) return null;
    else await new Promise<void>((resolveTurn) => this.#waiting.push(resolveTurn));
    try {
      return await this.#readOwner(runId);
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#readsInFlight--;
    }
  }
}

/** What {@link endQueuedRun} needs. */
export interface QueuedControlDeps {
  resources: ForkResources;
  /** The owners of stored specs read lately: forged controls are refused without another read. */
  owners?: SpecOwners;
  logger: DaemonLogger;
  /** The daemon's secrets, scrubbed from the event (read once per daemon, not per run). */
  secrets: readonly NamedSecret[];
  /** The daemon's terminal events in flight: the ending's bookkeeping waits for them. */
  endings?: EndingOrder;
  metrics?: DaemonMetrics | undefined;
}

/**
 * Whose run the stored spec is: the last message on the run's subject (a work queue holds one per live
 * run), read without its conversation.
 */
async function storedSpec(resources: ForkResources, runId: string): Promise<StoredOwnership | null> {
  const stored = await readStoredSpec(resources, runId).catch(() => null);
  if (stored === null) return null;
  try {
    const spec = decodeSpecOwnership(stored.data);
    return spec.run_id === runId ? { spec, seq: stored.seq } : null;
  } catch {
    return null; // a malformed spec fails its run at pickup
  }
}

/**
 * Ends a queued run that `request` (an abort or a stop with the owner's proof) names: `aborted`, or
 * `completed` with `stop: "stopped"` and nothing done. Returns false, changing nothing, when the run is
 * not queued (a daemon runs it and obeys the request itself), its spec is not stored yet (the registry
 * flag ends it at pickup), the proof is wrong, or another writer won the race.
 */
export async function endQueuedRun(deps: QueuedControlDeps, request: AbortRequest): Promise<boolean> {
  const { resources } = deps;
  const runId = request.run_id;
  const mode = request.mode ?? "abort";
  const refuse = (): false => {
    deps.metrics?.refusedControls.inc({ kind: mode });
    deps.logger.warn(
      { runId, code: `${mode}_refused` },
      `a ${mode} without the owner's proof: the queued run stays`,
    );
    return false;
  };
  // Looked up and, when missing, read in the same turn: the controls of a burst arrive together, and
  // each must find the read the first one started.
  const recent = deps.owners?.recent(runId);
  const known = recent === undefined ? undefined : await recent;
  if (known && !abortAuthorized(known.spec.owner_token ?? null, runId, request.proof, mode)) return refuse();
  // The reads in one round trip.
  const [registered, stored] = await Promise.all([
    readRunState(resources, runId, deps.logger),
    deps.owners ? deps.owners.read(runId) : storedSpec(resources, runId),
  ]);
  if (stored === null) return false;
  // Only the spec that owns the run speaks for it: the stored one where the stream keeps one spec
  // per run (the registry is every parent's to write), the one the registry names otherwise.
  const specSeq = resources.specsOnePerRun ? stored.seq : (registered?.state.spec_seq ?? stored.seq);
  if (specSeq !== stored.seq) return false;
  const spec = stored.spec;
  if (!abortAuthorized(spec.owner_token ?? null, runId, request.proof, mode)) return refuse();
  // The entry is any parent's to write: one that stopped saying `queued` (or was deleted) made this
  // path give up, and with the fast path's memory of the run filled by forged aborts, the owner's
  // abort of a queued run went unheard. What it says is taken only when it says queued; otherwise the
  // log decides: a run that never published anything has started nowhere, and is ended here all the
  // same (fenced on the empty log: a daemon that claimed it and published first keeps it and obeys).
  const queued = registered?.state.status === "queued";
  // A run never claimed has no log; one handed back to the queue has one to append to (read only for
  // its owner's request: its last event may be a megabyte).
  const last = queued && registered.state.attempt === 0 ? null : await lastLoggedEvent(resources, runId);
  if (!queued && last !== null) return false; // started: its daemon obeys the request itself
  if (last && isTerminalEvent(last.event)) return false;
  const attempt = (queued ? registered.state.attempt : 0) + 1;
  const publisher = new RunEventPublisher({
    js: resources.js,
    subjects: resources.subjects,
    runId,
    attempt,
    position: { lastSeq: last?.event.seq ?? 0, lastStreamSeq: last?.streamSeq ?? 0 },
    groupId: spec.group_id,
    secrets: deps.secrets,
  });
  const terminal: ForkEventBody =
    mode === "stop"
      ? {
          type: "completed",
          result: {
            final_text: "",
            usage: emptyUsageTotals(),
            turns: 0,
            tool_uses: 0,
            duration_ms: 0,
            cache_shared: spec.prefix.kind !== "none",
            stop: "stopped",
            stop_reason: request.reason,
          },
        }
      : { type: "aborted", reason: request.reason, usage: emptyUsageTotals() };
  let event: Awaited<ReturnType<RunEventPublisher["publish"]>>;
  try {
    event = deps.endings
      ? await deps.endings.ending(() => publisher.publish(terminal))
      : await publisher.publish(terminal);
  } catch (error) {
    // A daemon claimed the run and published first: it runs the run, and obeys the control itself.
    if (error instanceof DaemonError && error.code === "fenced") return false;
    throw error;
  }
  await deps.endings?.quiet();
  await Promise.all([
    // From the entry read above: a daemon that claimed the run since is fenced, and its claim is
    // overwritten by the ending (same attempt); the parent's flag, if written meanwhile, is kept.
    recordTerminal(resources, runId, event, attempt, undefined, registered ?? undefined),
    resources.jsm.streams.deleteMessage(resources.subjects.streams.specs, specSeq).catch(() => false),
  ]);
  deps.metrics?.runsEnded.inc({ outcome: event.type });
  deps.metrics?.abortLatency.observe(Math.max(0, Date.now() - request.requested_at) / 1000);
  deps.logger.info({ runId, outcome: event.type }, "queued run ended before any daemon ran it");
  return true;
}
