// What a daemon believes of a run's registry entry. Every parent of an account may write the runs
// bucket (it registers its own runs there), so an entry may be forged: the specs stream (one spec per
// run id, where it has that guard) and the run's log (the daemons' alone) are what a daemon trusts,
// and the entry may add to them (a proven abort flag, the attempt to fence) but never overrule them.
import { type ForkResources, getRunState, type LoggedEvent, type RunStateEntry } from "@forkd/client";
import { isTerminalEvent, isTerminalRunStatus, ProtocolError, type RunState } from "@forkd/protocol";
import type { DaemonLogger } from "./logger.js";

/**
 * How far a registry's attempt may run ahead of a spec's deliveries before it is taken for forged.
 * Every claim is one delivery, so a real attempt never exceeds the deliveries so far; the margin
 * leaves room for what this reasoning may have missed, and still keeps `attempt + 1` a safe integer.
 */
export const ATTEMPT_MARGIN = 1_000;

/**
 * The run's registry entry, or null when there is none or it does not decode (written by no forkd
 * component; logged). A compare-and-set on the key replaces such an entry (`updateRunState`).
 */
export async function readRunState(
  resources: ForkResources,
  runId: string,
  logger: DaemonLogger,
): Promise<RunStateEntry | null> {
  try {
    return await getRunState(resources, runId);
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    logger.warn(
      { err: error, code: "registry_unreadable", runId },
      "the run's registry entry does not decode: ignored",
    );
    return null;
  }
}

/**
 * True when a run's registry entry contradicts what the specs stream and the log say: while the log
 * has not ended, it names a spec other than `specSeq` (the only one stored for the run) or an end.
 */
export function registryDisagrees(state: RunState, specSeq: number, last: LoggedEvent | null): boolean {
  if (last && isTerminalEvent(last.event)) return false; // ended indeed: the claim acks the spec
  return (state.spec_seq !== undefined && state.spec_seq !== specSeq) || isTerminalRunStatus(state.status);
}

/**
 * The highest attempt that may have claimed a run before this delivery: the registry's, unless it runs
 * further ahead of the spec's `deliveries` than any claim can (a forged entry, which would otherwise
 * push the next attempt past a safe integer), then the log's last attempt.
 */
export function priorAttempt(registered: number, deliveries: number, last: LoggedEvent | null): number {
  const logged = last?.event.attempt ?? 0;
  return registered > deliveries + ATTEMPT_MARGIN ? logged : Math.max(registered, logged);
}
