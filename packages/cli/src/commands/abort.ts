// `forkd abort RUN_ID`: the abort through NatsForkSubagent (fast path and registry flag), then a wait
// for the run's terminal event so the user learns how it ended.
import { getRunState, lastLoggedEvent } from "@forkd/client";
import { isTerminalEvent, isValidRunId } from "@forkd/protocol";
import type { CommandContext } from "../context.js";
import { CliError, UsageError } from "../errors.js";
import { formatElapsed } from "../format.js";
import { writeLine } from "../io.js";
import { connectTarget, loadOwnerKey, NATS_FLAGS, natsTarget, openSubagent } from "../nats.js";
import { COMMON_FLAGS, expectPositionals, parseCommandLine, parseDuration } from "../options.js";
import { describeEvent } from "../run-tracker.js";

const OPTIONS = {
  ...COMMON_FLAGS,
  ...NATS_FLAGS,
  reason: { type: "string" },
  timeout: { type: "string" },
  "no-wait": { type: "boolean" },
} as const;

const DEFAULT_REASON = "aborted with forkd abort";

/** Aborts one run. */
export async function run(args: string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine("abort", args, OPTIONS);
  expectPositionals("abort", positionals, { min: 1, max: 1, names: "RUN_ID" });
  const runId = positionals[0]!;
  if (!isValidRunId(runId)) throw new UsageError(`${JSON.stringify(runId)} is not a run id`);
  const reason = values.reason ?? DEFAULT_REASON;
  const timeoutMs = values.timeout === undefined ? 10_000 : parseDuration("timeout", values.timeout);
  const target = natsTarget(values, context.io.env);
  const out = context.io.stdout;
  const nc = await connectTarget(target, { name: "forkd-abort" });
  try {
    const forks = await openSubagent(nc, target.prefix, await loadOwnerKey(context.io.env));
    const resources = forks.resources;
    const [state, last] = await Promise.all([
      getRunState(resources, runId),
      lastLoggedEvent(resources, runId),
    ]);
    if (state === null && last === null) {
      throw new CliError("not_found", `no run ${runId} in the registry or the event log`);
    }
    if (last !== null && isTerminalEvent(last.event)) {
      writeLine(out, `run ${runId} had already ended: ${last.event.type} ${describeEvent(last.event)}`);
      return 0;
    }
    const handle = forks.attach(runId);
    const sentAt = Date.now();
    await handle.abort(reason);
    writeLine(out, `abort sent to run ${runId} (${state?.state.status ?? "unregistered"}): ${reason}`);
    if (values["no-wait"]) return 0;
    const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), context.interruption.signal]);
    try {
      const outcome = await handle.result({ signal });
      const how = outcome.status === "killed" ? `killed: ${outcome.reason}` : outcome.status;
      writeLine(out, `run ${runId} ended after ${formatElapsed(Date.now() - sentAt)}: ${how}`);
    } catch {
      if (context.interruption.interrupted) return 130;
      const now = await getRunState(resources, runId);
      writeLine(
        out,
        `run ${runId} has not ended within ${formatElapsed(timeoutMs)} (status ${now?.state.status ?? "unknown"}); ` +
          "it stops when a daemon sees the abort (a queued run is dropped when picked up)",
      );
    }
    return 0;
  } finally {
    await nc.close();
  }
}
