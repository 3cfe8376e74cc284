// `forkd steer RUN_ID "text"`: a user message for a running child, added at its next turn boundary
// (a `steered` event); waits for that event unless --no-wait.
import { ClientError } from "@forkd/client";
import { isValidRunId } from "@forkd/protocol";
import type { CommandContext } from "../context.js";
import { CliError, UsageError } from "../errors.js";
import { formatElapsed } from "../format.js";
import { writeLine } from "../io.js";
import { connectTarget, loadOwnerKey, NATS_FLAGS, natsTarget, openSubagent } from "../nats.js";
import { COMMON_FLAGS, expectPositionals, parseCommandLine, parseDuration } from "../options.js";

const OPTIONS = {
  ...COMMON_FLAGS,
  ...NATS_FLAGS,
  by: { type: "string" },
  timeout: { type: "string" },
  "no-wait": { type: "boolean" },
} as const;

/** Steers one running run. */
export async function run(args: string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine("steer", args, OPTIONS);
  expectPositionals("steer", positionals, { min: 2, max: 2, names: "RUN_ID TEXT" });
  const [runId, text] = positionals as [string, string];
  if (!isValidRunId(runId)) throw new UsageError(`${JSON.stringify(runId)} is not a run id`);
  if (text.trim() === "") throw new UsageError("the message is empty");
  const timeoutMs = values.timeout === undefined ? 60_000 : parseDuration("timeout", values.timeout);
  const target = natsTarget(values, context.io.env);
  const out = context.io.stdout;
  const nc = await connectTarget(target, { name: "forkd-steer" });
  try {
    const forks = await openSubagent(nc, target.prefix, await loadOwnerKey(context.io.env));
    const handle = forks.attach(runId);
    const sentAt = Date.now();
    try {
      await handle.send(text, { by: values.by ?? "cli" });
    } catch (error) {
      if (error instanceof ClientError && error.code === "run_not_running")
        throw new CliError("not_found", `no daemon runs ${runId} now (queued, ended or unknown)`, {
          hint: "steering reaches a running run only; see forkd ps",
        });
      if (error instanceof ClientError && error.code === "steer_refused")
        throw new CliError("usage", error.message, { hint: "is FORKD_OWNER_KEY the key that forked it?" });
      throw error;
    }
    writeLine(out, `message taken by the daemon running ${runId}; it is added at the next turn boundary`);
    if (values["no-wait"]) return 0;
    const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), context.interruption.signal]);
    try {
      for await (const event of handle.events({ signal })) {
        if (event.type === "steered" && event.text === text) {
          writeLine(
            out,
            `steered before turn ${event.turn}, ${formatElapsed(Date.now() - sentAt)} after sending`,
          );
          return 0;
        }
        if (event.type === "completed" || event.type === "failed" || event.type === "aborted") {
          writeLine(out, `the run ended (${event.type}) before its next turn: the message was not added`);
          return 1;
        }
      }
    } catch {
      if (context.interruption.interrupted) return 130;
    }
    writeLine(
      out,
      `not added within ${formatElapsed(timeoutMs)}: the run has not reached a turn boundary yet`,
    );
    return 0;
  } finally {
    await nc.close();
  }
}
