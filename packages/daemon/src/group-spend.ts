// The rules of a group's shared budget, as pure functions of the owner's cap entry and the daemons'
// spend entry (docs/budgets.md): when a model call may start, when the group pauses, and what a
// reservation and its settlement write. The gate (group-budget.ts) does the reads and the
// compare-and-set writes; everything it decides is here, so it can be tested at its boundaries.
import { costOfTokens, defaultPricingTable, type LlmRequest, tokenCountsOf } from "@forkd/core";
import { type GroupBudget, type GroupSpend, PROTOCOL_VERSION, type ProviderUsage } from "@forkd/protocol";
import { budgetCapProof, proofMatches } from "@forkd/protocol/internal";

/**
 * How long a reservation may stay unsettled before any admission charges it as spent: longer than
 * any model call, so only a call whose daemon died (and whose run was never resumed) reaches it.
 * @unit ms
 */
export const RESERVATION_LEASE_MS = 15 * 60_000;

/** An amount of money and tokens. */
export interface Amount {
  usd: number;
  tokens: number;
}

/** The call a run wants to make: who makes it and an upper bound of its cost. */
export interface CallToAdmit {
  groupId: string;
  runId: string;
  attempt: number;
  turn: number;
  /**
   * An upper bound of its cost. A function: it serialises the whole request, which only a call of a
   * group with a budget needs (every fan-out is a group; few have budgets).
   */
  bound: () => Amount;
}

/** What the group's entries say of a call about to start. */
export type Admission =
  /** No cap and nothing spent under one: the group has no budget. */
  | { kind: "unbudgeted" }
  /** Admitted: write `next` (by compare-and-set) and call. */
  | { kind: "go"; next: GroupSpend }
  /**
   * The cap is reached (or cannot be trusted): the run pauses until the owner writes a new cap.
   * `record`: the entry with the cap's version as obeyed, to write so that an older cap replayed
   * later is refused.
   */
  | { kind: "pause"; reason: string; record?: GroupSpend }
  /** Under the cap, but the calls in flight may reach it: wait for them to settle, holding the slot. */
  | { kind: "wait"; record?: GroupSpend };

/** An upper bound of one call's cost: every input token at the full input price, `max_tokens` of output. */
export function estimateCall(request: LlmRequest, model: string): Amount {
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

/** What a call cost, as its usage says. */
export function costOfCall(usage: ProviderUsage, model: string): Amount {
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

/** Rounds a dollar amount to 10⁻⁸, so that sums of many calls do not drift in the last bits. */
function roundUsd(usd: number): number {
  return Math.round(usd * 1e8) / 1e8;
}

/** An empty spend entry of group `groupId`. */
export function emptySpend(groupId: string, now: number): GroupSpend {
  return {
    v: PROTOCOL_VERSION,
    group_id: groupId,
    spent: { cost_usd: 0, tokens: 0 },
    reservations: [],
    cap_version: 0,
    updated_at: now,
  };
}

/**
 * The entry with every reservation that can no longer settle charged as spent (its upper bound: the
 * call may have been billed): one of an earlier attempt of `runId` (its daemon died or was fenced;
 * this attempt replays the turn), or one older than {@link RESERVATION_LEASE_MS}.
 */
export function chargeAbandoned(spend: GroupSpend, runId: string, attempt: number, now: number): GroupSpend {
  const kept: GroupSpend["reservations"] = [];
  let { cost_usd, tokens } = spend.spent;
  for (const reservation of spend.reservations) {
    const abandoned =
      (reservation.run_id === runId && reservation.attempt < attempt) ||
      now - reservation.at > RESERVATION_LEASE_MS;
    if (abandoned) {
      cost_usd += reservation.cost_usd;
      tokens += reservation.tokens;
    } else kept.push(reservation);
  }
  if (kept.length === spend.reservations.length) return spend;
  return { ...spend, spent: { cost_usd: roundUsd(cost_usd), tokens }, reservations: kept };
}

/** Why cap entry `cap` cannot be obeyed (gone, unsigned, replayed), or undefined when it can. */
export function capDistrust(
  cap: GroupBudget | null,
  spend: GroupSpend | null,
  groupToken: string,
): string | undefined {
  if (cap === null) return "the group's cap entry is gone: only its owner can write a new one";
  if (!proofMatches(budgetCapProof(groupToken, cap), cap.cap_proof))
    return "the group's budget cap does not carry its owner's proof";
  if (spend !== null && cap.cap_version < spend.cap_version)
    return `the group's cap is version ${cap.cap_version}, older than version ${spend.cap_version} already obeyed`;
  return undefined;
}

/** Why a trusted cap refuses every call: what was spent reached it. */
export function capReached(cap: GroupBudget, spend: GroupSpend | null): string | undefined {
  const spent = spend?.spent ?? { cost_usd: 0, tokens: 0 };
  if (cap.cap.max_cost_usd !== undefined && spent.cost_usd >= cap.cap.max_cost_usd)
    return `the group spent $${spent.cost_usd.toFixed(4)} of its $${cap.cap.max_cost_usd} budget`;
  if (cap.cap.max_tokens !== undefined && spent.tokens >= cap.cap.max_tokens)
    return `the group used ${spent.tokens} of its ${cap.cap.max_tokens} tokens`;
  return undefined;
}

/**
 * Whether `call` may start. It may when what the group spent plus what its calls in flight reserved
 * is under the cap: so the real spend ends at most one call's cost over the cap (a call is admitted
 * only while the others' bounds fit under it). At the cap the group pauses; under it, with the calls
 * in flight able to reach it, the call waits for them.
 */
export function admit(
  cap: GroupBudget | null,
  current: GroupSpend | null,
  groupToken: string,
  call: CallToAdmit,
  now: number,
): Admission {
  if (cap === null && current === null) return { kind: "unbudgeted" };
  const spend =
    current === null
      ? emptySpend(call.groupId, now)
      : chargeAbandoned(current, call.runId, call.attempt, now);
  const distrust = capDistrust(cap, spend, groupToken);
  if (distrust !== undefined) return { kind: "pause", reason: distrust };
  const trusted = cap!;
  // Record the version obeyed, so that this cap's predecessors, replayed, are refused.
  const record =
    trusted.cap_version > spend.cap_version
      ? { ...spend, cap_version: trusted.cap_version, updated_at: now }
      : undefined;
  const reached = capReached(trusted, spend);
  if (reached !== undefined) return { kind: "pause", reason: reached, ...(record ? { record } : {}) };
  const { max_cost_usd, max_tokens } = trusted.cap;
  let reservedUsd = spend.spent.cost_usd;
  let reservedTokens = spend.spent.tokens;
  for (const reservation of spend.reservations) {
    reservedUsd += reservation.cost_usd;
    reservedTokens += reservation.tokens;
  }
  if (
    (max_cost_usd !== undefined && reservedUsd >= max_cost_usd) ||
    (max_tokens !== undefined && reservedTokens >= max_tokens)
  )
    return { kind: "wait", ...(record ? { record } : {}) };
  const bound = call.bound();
  const others = spend.reservations.filter(
    (reservation) =>
      !(
        reservation.run_id === call.runId &&
        reservation.attempt === call.attempt &&
        reservation.turn === call.turn
      ),
  );
  return {
    kind: "go",
    next: {
      ...spend,
      cap_version: trusted.cap_version,
      reservations: [
        ...others,
        {
          run_id: call.runId,
          attempt: call.attempt,
          turn: call.turn,
          cost_usd: roundUsd(bound.usd),
          tokens: bound.tokens,
          at: now,
        },
      ],
      updated_at: now,
    },
  };
}

/**
 * The entry once the call of `runId`'s `attempt` at `turn` ended and cost `cost`: its reservation
 * replaced by the cost. Undefined when the reservation is not there (already charged as abandoned:
 * it is not charged twice).
 */
export function settle(
  spend: GroupSpend,
  call: { runId: string; attempt: number; turn: number },
  cost: Amount,
  now: number,
): GroupSpend | undefined {
  const index = spend.reservations.findIndex(
    (reservation) =>
      reservation.run_id === call.runId &&
      reservation.attempt === call.attempt &&
      reservation.turn === call.turn,
  );
  if (index < 0) return undefined;
  return {
    ...spend,
    spent: {
      cost_usd: roundUsd(spend.spent.cost_usd + cost.usd),
      tokens: spend.spent.tokens + cost.tokens,
    },
    reservations: spend.reservations.filter((_, i) => i !== index),
    updated_at: now,
  };
}
