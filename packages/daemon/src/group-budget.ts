// A budget shared by every run of a group, on every daemon (docs/budgets.md). The group's
// entry `budget.<group_id>` in the runs bucket holds the owner's cap (with its proof) and what the
// group has reserved or spent. Before each model call a run reserves an upper bound of the call's
// cost by compare-and-set, admitted only while the spent total is under the cap; after the call it
// replaces the reservation with the real cost. So the group's real spend ends at most one call's
// bound over the cap, whatever the number of daemons. At the cap the run pauses at that boundary —
// event `paused`, registry status `paused`, its slot given back — and goes on when a raised cap (or a
// released reservation) admits it.
import type { ForkResources } from "@forkd/client";
import { isWrongLastSequence, updateRunState } from "@forkd/client/internal";
import { costOfTokens, defaultPricingTable, type TurnAdmission, tokenCountsOf } from "@forkd/core";
import {
  type ForkEventBody,
  type GroupBudget,
  groupBudgetCodec,
  groupBudgetKey,
  type ProviderUsage,
} from "@forkd/protocol";
import { budgetCapProof, proofMatches } from "@forkd/protocol/internal";
import type { DaemonLogger } from "./logger.js";

/** How often a paused run reads its group's entry again. @unit ms */
const PAUSED_POLL_MS = 250;

/** A call's reservation: an upper bound of its cost. */
interface Reservation {
  usd: number;
  tokens: number;
}

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
  stopRequested(): string | undefined;
  logger: DaemonLogger;
}

/** An upper bound of one call's cost: every input token at the full input price, `max_tokens` of output. */
export function estimateCall(request: TurnAdmission["request"], model: string): Reservation {
  // About 3 characters per token or more for JSON-heavy prompts: dividing by 3 bounds the count from above.
  const promptChars = JSON.stringify([
    request.system ?? null,
    request.tools ?? null,
    request.messages,
  ]).length;
  const input = Math.ceil(promptChars / 3);
  const output = request.max_tokens;
  const price = defaultPricingTable.lookup(model);
  const usd = price
    ? costOfTokens(price, {
        input_tokens: input,
        cache_write_5m_tokens: 0,
        cache_write_1h_tokens: 0,
        cache_read_tokens: 0,
        output_tokens: output,
      })
    : 0;
  return { usd, tokens: input + output };
}

/** What a call cost. */
export function costOfCall(usage: ProviderUsage, model: string): Reservation {
  const counts = tokenCountsOf(usage);
  const price = defaultPricingTable.lookup(model);
  return {
    usd: price ? costOfTokens(price, counts) : 0,
    tokens:
      counts.input_tokens +
      counts.cache_write_5m_tokens +
      counts.cache_write_1h_tokens +
      counts.cache_read_tokens +
      counts.output_tokens,
  };
}

/** Why the group may not spend now, or undefined when it may. */
export function budgetRefusal(budget: GroupBudget, groupToken: string): string | undefined {
  if (!proofMatches(budgetCapProof(groupToken, budget), budget.cap_proof))
    return "the group's budget cap does not carry its owner's proof";
  const { cap, spent } = budget;
  if (cap.max_cost_usd !== undefined && spent.cost_usd >= cap.max_cost_usd)
    return `the group spent $${spent.cost_usd.toFixed(4)} of its $${cap.max_cost_usd} budget`;
  if (cap.max_tokens !== undefined && spent.tokens >= cap.max_tokens)
    return `the group used ${spent.tokens} of its ${cap.max_tokens} tokens`;
  return undefined;
}

/** One run's gate on its group's budget: admitTurn and settleTurn of its turn boundary. */
export class GroupBudgetGate {
  readonly #options: GroupBudgetGateOptions;
  readonly #key: string;
  readonly #reservations = new Map<number, Reservation>();
  #pausedAt: number | undefined;

  constructor(options: GroupBudgetGateOptions) {
    this.#options = options;
    this.#key = groupBudgetKey(options.groupId);
  }

  async #read(): Promise<{ budget: GroupBudget; revision: number } | null> {
    const entry = await this.#options.resources.runs.get(this.#key);
    if (entry?.operation !== "PUT" || entry.length === 0) return null;
    try {
      return { budget: groupBudgetCodec.decode(entry.value), revision: entry.revision };
    } catch {
      // Unreadable: treated like a cap without proof (the group waits until its owner writes it again).
      return {
        budget: {
          v: 1,
          group_id: this.#options.groupId,
          cap: { max_cost_usd: 0 },
          cap_version: 1,
          cap_proof: "0".repeat(64),
          spent: { cost_usd: 0, tokens: 0 },
          updated_at: 0,
        },
        revision: entry.revision,
      };
    }
  }

  /** Adds `delta` to the group's spent totals by compare-and-set; false when `admit` refuses the entry as it is. */
  async #add(
    delta: Reservation,
    admit: (budget: GroupBudget) => boolean,
  ): Promise<GroupBudget | "refused" | null> {
    for (;;) {
      const read = await this.#read();
      if (read === null) return null;
      if (!admit(read.budget)) return "refused";
      const next: GroupBudget = {
        ...read.budget,
        spent: {
          cost_usd: Math.round((read.budget.spent.cost_usd + delta.usd) * 1e8) / 1e8,
          tokens: read.budget.spent.tokens + delta.tokens,
        },
        updated_at: Date.now(),
      };
      try {
        await this.#options.resources.runs.update(this.#key, groupBudgetCodec.encode(next), read.revision);
        return next;
      } catch (error) {
        if (!isWrongLastSequence(error)) throw error;
      }
    }
  }

  /** See {@link TurnBoundary.admitTurn}. */
  async admitTurn(turn: TurnAdmission, signal: AbortSignal): Promise<"go" | "stop"> {
    const { groupToken } = this.#options;
    const reservation = estimateCall(turn.request, turn.model);
    for (;;) {
      signal.throwIfAborted();
      const added = await this.#add(reservation, (budget) => budgetRefusal(budget, groupToken) === undefined);
      if (added !== "refused") {
        // Reserved (or the group has no budget entry: nothing to enforce).
        if (added !== null) this.#reservations.set(turn.turn, reservation);
        await this.#resume(turn.turn);
        return "go";
      }
      if (this.#options.stopRequested() !== undefined) return "stop";
      if (this.#pausedAt === undefined) await this.#pause(turn.turn);
      await new Promise<void>((resolveWait, rejectWait) => {
        const timer = setTimeout(() => {
          signal.removeEventListener("abort", onAbort);
          resolveWait();
        }, PAUSED_POLL_MS);
        const onAbort = () => {
          clearTimeout(timer);
          rejectWait(signal.reason);
        };
        signal.addEventListener("abort", onAbort, { once: true });
      });
    }
  }

  /** See {@link TurnBoundary.settleTurn}. */
  async settleTurn(turn: number, model: string, usage: ProviderUsage | null): Promise<void> {
    const reservation = this.#reservations.get(turn);
    if (reservation === undefined) return;
    this.#reservations.delete(turn);
    const spent = usage === null ? { usd: 0, tokens: 0 } : costOfCall(usage, model);
    await this.#add(
      { usd: spent.usd - reservation.usd, tokens: spent.tokens - reservation.tokens },
      () => true,
    );
  }

  async #pause(turn: number): Promise<void> {
    this.#pausedAt = Date.now();
    const read = await this.#read();
    const budget = read?.budget;
    const reason = budget ? (budgetRefusal(budget, this.#options.groupToken) ?? "budget") : "budget";
    this.#options.emit({
      type: "paused",
      turn,
      reason,
      ...(budget?.cap.max_cost_usd !== undefined
        ? { spent_usd: budget.spent.cost_usd, cap_usd: budget.cap.max_cost_usd }
        : {}),
      ...(budget?.cap.max_tokens !== undefined
        ? { spent_tokens: budget.spent.tokens, cap_tokens: budget.cap.max_tokens }
        : {}),
    });
    this.#options.onPause(true);
    await this.#setStatus("paused");
    this.#options.logger.info({ turn, reason }, "run paused: its group's budget is spent");
  }

  async #resume(turn: number): Promise<void> {
    if (this.#pausedAt === undefined) return;
    const pausedMs = Date.now() - this.#pausedAt;
    this.#pausedAt = undefined;
    this.#options.onPause(false);
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
