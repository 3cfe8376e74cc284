// A budget shared by every run of a group, on every daemon (docs/budgets.md). Two entries in the runs
// bucket: the owner's cap `budget.<group_id>` (with its proof) and the daemons' `spend.<group_id>`
// (what the group spent, and a reservation per call in flight; parents may not write it). Before each
// model call a run reserves an upper bound of the call's cost by compare-and-set, admitted only while
// spent plus reserved is under the cap; after the call it replaces the reservation with the real
// cost. So the group's real spend ends at most one call's cost over the cap, whatever the number of
// daemons. At the cap the run pauses at that boundary — event `paused`, registry status `paused`, its
// slot given back — and goes on when a raised cap admits it. The rules are group-spend.ts's.
import type { ForkResources } from "@forkd/client";
import { isWrongLastSequence, updateRunState } from "@forkd/client/internal";
import type { TurnAdmission } from "@forkd/core";
import {
  type ForkEventBody,
  type GroupBudget,
  type GroupSpend,
  groupBudgetCodec,
  groupBudgetKey,
  groupSpendCodec,
  groupSpendKey,
  PROTOCOL_VERSION,
  type ProviderUsage,
} from "@forkd/protocol";
import { admit, costOfCall, emptySpend, estimateCall, settle } from "./group-spend.js";
import type { DaemonLogger } from "./logger.js";

/** How often a run held at its group's budget reads the entries again. @unit ms */
const HELD_POLL_MS = 250;

/** What the gate needs from its run. */
export interface GroupBudgetGateOptions {
  resources: ForkResources;
  runId: string;
  groupId: string;
  /** The spec's `group_token`: the cap must carry its proof. */
  groupToken: string;
  /** The run's attempt: its registry status is changed only while it holds the claim. */
  attempt: number;
  emit(body: ForkEventBody): void;
  /** The run paused (true: give its slot back) or goes on (false). */
  onPause(paused: boolean): void;
  /** Whether this daemon has a slot for the run, paused, to go on in. */
  mayResume(): boolean;
  /** Hands the run back to the queue (its signal aborts), for a daemon with a free slot. */
  handOff(): void;
  /** When the run paused, if it is still paused from an earlier attempt (its log says so). @unit epoch ms */
  pausedSince?: number | undefined;
  stopRequested(): string | undefined;
  logger: DaemonLogger;
}

interface Entries {
  cap: GroupBudget | null;
  spend: GroupSpend | null;
  /** The spend entry's revision (0: none yet). */
  revision: number;
}

/** One run's gate on its group's budget: admitTurn and settleTurn of its turn boundary. */
export class GroupBudgetGate {
  readonly #options: GroupBudgetGateOptions;
  readonly #capKey: string;
  readonly #spendKey: string;
  /** The turns whose call holds a reservation. */
  readonly #reserved = new Set<number>();
  /** When this attempt paused (and gave its slot back), while it is paused. */
  #pausedAt: number | undefined;
  /** When the run paused, in an earlier attempt or this one, until it resumes. */
  #pausedSince: number | undefined;

  constructor(options: GroupBudgetGateOptions) {
    this.#options = options;
    this.#capKey = groupBudgetKey(options.groupId);
    this.#spendKey = groupSpendKey(options.groupId);
    this.#pausedSince = options.pausedSince;
  }

  async #read(): Promise<Entries> {
    const { runs } = this.#options.resources;
    const [capEntry, spendEntry] = await Promise.all([runs.get(this.#capKey), runs.get(this.#spendKey)]);
    const present = (entry: typeof capEntry): entry is NonNullable<typeof capEntry> =>
      entry?.operation === "PUT" && entry.length > 0;
    return {
      cap: present(capEntry) ? decodeOr(groupBudgetCodec, capEntry.value, UNREADABLE_CAP) : null,
      // An unreadable spend entry is treated as spent to the limit: a run never spends on a guess.
      spend: present(spendEntry)
        ? decodeOr(groupSpendCodec, spendEntry.value, unreadableSpend(this.#options.groupId))
        : null,
      revision: spendEntry?.revision ?? 0,
    };
  }

  /** Writes the spend entry by compare-and-set; false when another write came first. */
  async #write(next: GroupSpend, revision: number): Promise<boolean> {
    const { runs } = this.#options.resources;
    const bytes = groupSpendCodec.encode(next);
    try {
      if (revision === 0) await runs.create(this.#spendKey, bytes);
      else await runs.update(this.#spendKey, bytes, revision);
      return true;
    } catch (error) {
      if (isWrongLastSequence(error)) return false;
      throw error;
    }
  }

  /** See {@link TurnBoundary.admitTurn}. */
  async admitTurn(turn: TurnAdmission, signal: AbortSignal): Promise<"go" | "stop"> {
    const { runId, attempt, groupId, groupToken } = this.#options;
    let bound: ReturnType<typeof estimateCall> | undefined;
    const call = {
      groupId,
      runId,
      attempt,
      turn: turn.turn,
      bound: () => (bound ??= estimateCall(turn.request, turn.model)),
    };
    for (;;) {
      signal.throwIfAborted();
      const entries = await this.#read();
      const admission = admit(entries.cap, entries.spend, groupToken, call, Date.now());
      if (admission.kind === "unbudgeted") {
        await this.#resume(turn.turn);
        return "go";
      }
      if (admission.kind === "go") {
        if (this.#pausedAt !== undefined && !this.#options.mayResume()) {
          // Paused, this run gave its slot away: with none free here, another daemon resumes it.
          this.#options.logger.info(
            { turn: turn.turn },
            "run handed off: its group may spend again, no slot here",
          );
          this.#options.handOff();
          signal.throwIfAborted();
        }
        if (!(await this.#write(admission.next, entries.revision))) continue;
        this.#reserved.add(turn.turn);
        await this.#resume(turn.turn);
        return "go";
      }
      if (admission.record !== undefined && !(await this.#write(admission.record, entries.revision)))
        continue;
      if (this.#options.stopRequested() !== undefined) return "stop";
      if (admission.kind === "pause" && this.#pausedAt === undefined)
        await this.#pause(turn.turn, admission.reason, entries);
      await heldFor(HELD_POLL_MS, signal);
    }
  }

  /** See {@link TurnBoundary.settleTurn}. */
  async settleTurn(turn: number, model: string, usage: ProviderUsage | null): Promise<void> {
    if (!this.#reserved.delete(turn)) return;
    const { runId, attempt } = this.#options;
    const cost = usage === null ? { usd: 0, tokens: 0 } : costOfCall(usage, model);
    for (;;) {
      const entries = await this.#read();
      if (entries.spend === null) return;
      const next = settle(entries.spend, { runId, attempt, turn }, cost, Date.now());
      if (next === undefined || (await this.#write(next, entries.revision))) return;
    }
  }

  async #pause(turn: number, reason: string, { cap, spend }: Entries): Promise<void> {
    this.#pausedAt = Date.now();
    this.#pausedSince ??= this.#pausedAt;
    const spent = spend?.spent ?? { cost_usd: 0, tokens: 0 };
    this.#options.emit({
      type: "paused",
      turn,
      reason,
      ...(cap?.cap.max_cost_usd !== undefined
        ? { spent_usd: spent.cost_usd, cap_usd: cap.cap.max_cost_usd }
        : {}),
      ...(cap?.cap.max_tokens !== undefined
        ? { spent_tokens: spent.tokens, cap_tokens: cap.cap.max_tokens }
        : {}),
    });
    this.#options.onPause(true);
    await this.#setStatus("paused");
    this.#options.logger.info({ turn, reason }, "run paused at its group's budget");
  }

  async #resume(turn: number): Promise<void> {
    const since = this.#pausedSince;
    if (since === undefined) return;
    const pausedMs = Date.now() - since;
    // An attempt that took over a paused run holds its slot from its claim: only one that paused gives
    // it back, and takes it again here.
    if (this.#pausedAt !== undefined) this.#options.onPause(false);
    this.#pausedAt = undefined;
    this.#pausedSince = undefined;
    this.#options.emit({ type: "resumed", turn, paused_ms: pausedMs });
    await this.#setStatus("running");
    this.#options.logger.info({ turn, pausedMs }, "run resumed");
  }

  async #setStatus(status: "paused" | "running"): Promise<void> {
    const { resources, runId, attempt } = this.#options;
    await updateRunState(resources, runId, (current) => {
      if (
        !current ||
        current.attempt !== attempt ||
        (current.status !== "running" && current.status !== "paused")
      )
        return "unchanged";
      return { ...current, status, updated_at: Date.now() };
    }).catch((error: unknown) =>
      this.#options.logger.warn({ err: error }, "could not record the run's pause"),
    );
  }
}

/** A cap that cannot be read pauses the group, like a cap without its proof. */
const UNREADABLE_CAP: GroupBudget = {
  v: PROTOCOL_VERSION,
  group_id: "unreadable",
  cap: { max_cost_usd: 0 },
  cap_version: 1,
  cap_proof: "0".repeat(64),
  updated_at: 0,
};

function unreadableSpend(groupId: string): GroupSpend {
  return {
    ...emptySpend(groupId, 0),
    spent: { cost_usd: Number.MAX_VALUE, tokens: Number.MAX_SAFE_INTEGER },
  };
}

function decodeOr<T>(codec: { decode(bytes: Uint8Array): T }, bytes: Uint8Array, fallback: T): T {
  try {
    return codec.decode(bytes);
  } catch {
    return fallback;
  }
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
function heldFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolveWait, rejectWait) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolveWait();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      rejectWait(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
