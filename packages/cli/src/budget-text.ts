// One line for a group's budget, shared by `forkd budget` and the groups of `forkd ps`.
import type { GroupBudget, GroupSpend } from "@forkd/protocol";

/**
 * `$0.0123 of $5 (+$0.0040 reserved), 12000 of 50000 tokens`, `no cap` for a cap entry with no bound,
 * or `-` without a budget.
 */
export function describeBudget(budget: GroupBudget | null, spend: GroupSpend | null): string {
  if (budget === null) return "-";
  const spent = spend?.spent ?? { cost_usd: 0, tokens: 0 };
  let reservedUsd = 0;
  let reservedTokens = 0;
  for (const reservation of spend?.reservations ?? []) {
    reservedUsd += reservation.cost_usd;
    reservedTokens += reservation.tokens;
  }
  const parts = [
    budget.cap.max_cost_usd !== undefined
      ? `$${spent.cost_usd.toFixed(4)} of $${budget.cap.max_cost_usd}` +
        (reservedUsd > 0 ? ` (+$${reservedUsd.toFixed(4)} reserved)` : "")
      : undefined,
    budget.cap.max_tokens !== undefined
      ? `${spent.tokens} of ${budget.cap.max_tokens} tokens` +
        (reservedTokens > 0 ? ` (+${reservedTokens} reserved)` : "")
      : undefined,
  ].filter((part) => part !== undefined);
  return parts.join(", ") || "no cap";
}
