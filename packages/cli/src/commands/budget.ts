// `forkd budget GROUP [--usd N] [--tokens N]`: shows a group's shared budget, or sets (raises) its
// cap; a raised cap resumes the group's paused runs on whichever daemons hold them.
import { isValidRunId } from "@forkd/protocol";
import { describeBudget } from "../budget-text.js";
import type { CommandContext } from "../context.js";
import { CliError, UsageError } from "../errors.js";
import { writeLine } from "../io.js";
import { connectTarget, loadOwnerKey, NATS_FLAGS, natsTarget, openSubagent } from "../nats.js";
import { COMMON_FLAGS, expectPositionals, parseCommandLine } from "../options.js";

const OPTIONS = {
  ...COMMON_FLAGS,
  ...NATS_FLAGS,
  usd: { type: "string" },
  tokens: { type: "string" },
  json: { type: "boolean" },
} as const;

function nonNegative(name: string, value: string | undefined, integer: boolean): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (value.trim() === "" || !Number.isFinite(number) || number < 0 || (integer && !Number.isInteger(number)))
    throw new UsageError(
      `--${name} needs a ${integer ? "whole " : ""}number ≥ 0, got ${JSON.stringify(value)}`,
    );
  return number;
}

/** Shows or sets a group's budget. */
export async function run(args: string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine("budget", args, OPTIONS);
  expectPositionals("budget", positionals, { min: 1, max: 1, names: "GROUP_ID" });
  const groupId = positionals[0]!;
  if (!isValidRunId(groupId)) throw new UsageError(`${JSON.stringify(groupId)} is not a group id`);
  const usd = nonNegative("usd", values.usd, false);
  const tokens = nonNegative("tokens", values.tokens, true);
  const target = natsTarget(values, context.io.env);
  const out = context.io.stdout;
  const nc = await connectTarget(target, { name: "forkd-budget" });
  try {
    const forks = await openSubagent(nc, target.prefix, await loadOwnerKey(context.io.env));
    let budget = await forks.groupBudget(groupId);
    if (usd !== undefined || tokens !== undefined) {
      const cap = {
        ...(usd !== undefined
          ? { max_cost_usd: usd }
          : budget?.cap.max_cost_usd !== undefined
            ? { max_cost_usd: budget.cap.max_cost_usd }
            : {}),
        ...(tokens !== undefined
          ? { max_tokens: tokens }
          : budget?.cap.max_tokens !== undefined
            ? { max_tokens: budget.cap.max_tokens }
            : {}),
      };
      budget = await forks.setGroupBudget(groupId, cap);
    } else if (budget === null) {
      throw new CliError("not_found", `group ${groupId} has no budget`, {
        hint: "set one: forkd budget GROUP --usd 5",
      });
    }
    const spend = await forks.groupSpend(groupId);
    if (values.json) {
      writeLine(out, JSON.stringify({ budget, spend }));
      return 0;
    }
    writeLine(out, `group ${groupId}: ${describeBudget(budget, spend)} (cap version ${budget!.cap_version})`);
    return 0;
  } finally {
    await nc.close();
  }
}
