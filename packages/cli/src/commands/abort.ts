// `forkd abort RUN_ID`: the abort through NatsForkSubagent (fast path and registry flag), then a wait
// for the run's terminal event so the user learns how it ended. `--group G` / `--parent P` cascade
// over every run of a group or a parent (queued ones included); `--stop` stops gracefully instead.
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
  group: { type: "string" },
  parent: { type: "string" },
  stop: { type: "boolean" },
} as const;

const DEFAULT_REASON = "aborted with forkd abort";

/** Aborts (or stops) one run, a group's runs or a parent's runs. */
export async function run(args: string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine("abort", args, OPTIONS);
  if (values.group !== undefined || values.parent !== undefined) return cascade(values, positionals, context);
  if (values.stop)
    throw new UsageError("--stop needs --group or --parent (stop one run with: forkd abort --group …)");
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

/** `--group G` or `--parent P`: every run of it that has not ended, queued ones included, each with its own proof. */
async function cascade(
  values: ReturnType<typeof parseCommandLine<typeof OPTIONS>>["values"],
  positionals: string[],
  context: CommandContext,
): Promise<number> {
  expectPositionals("abort", positionals, { min: 0, max: 0, names: "" });
  if (values.group !== undefined && values.parent !== undefined)
    throw new UsageError("give --group or --parent, not both");
  if (values.group !== undefined && !isValidRunId(values.group))
    throw new UsageError(`${JSON.stringify(values.group)} is not a group id`);
  const mode = values.stop ? "stop" : "abort";
  const reason = values.reason ?? (mode === "stop" ? "stopped with forkd abort --stop" : DEFAULT_REASON);
  const timeoutMs = values.timeout === undefined ? 10_000 : parseDuration("timeout", values.timeout);
  const target = natsTarget(values, context.io.env);
  const out = context.io.stdout;
  const nc = await connectTarget(target, { name: "forkd-abort" });
  try {
    const forks = await openSubagent(nc, target.prefix, await loadOwnerKey(context.io.env));
    const what = values.group !== undefined ? `group ${values.group}` : `parent ${values.parent}`;
    const sentAt = Date.now();
    const runIds =
      values.group !== undefined
        ? await forks.controlGroup(values.group, { mode, reason })
        : await forks.abortParent(values.parent!, { mode, reason });
    writeLine(
      out,
      `${mode} sent to ${runIds.length} run${runIds.length === 1 ? "" : "s"} of ${what}: ${reason}`,
    );
    if (runIds.length === 0) return 0;
    if (values["no-wait"]) return 0;
    const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), context.interruption.signal]);
    const outcomes = await Promise.allSettled(runIds.map((runId) => forks.attach(runId).result({ signal })));
    if (context.interruption.interrupted) return 130;
    const ended = outcomes.filter((outcome) => outcome.status === "fulfilled").length;
    const counts = new Map<string, number>();
    for (const outcome of outcomes)
      if (outcome.status === "fulfilled")
        counts.set(outcome.value.status, (counts.get(outcome.value.status) ?? 0) + 1);
    const summary = [...counts].map(([status, count]) => `${count} ${status}`).join(", ");
    writeLine(
      out,
      `${ended} of ${runIds.length} ended after ${formatElapsed(Date.now() - sentAt)}${summary ? `: ${summary}` : ""}` +
        (ended < runIds.length
          ? ` (the others did not obey: another owner's runs refuse this key's proof)`
          : ""),
    );
    return 0;
  } finally {
    await nc.close();
  }
}
