// Hands a silent daemon's runs back to the queue at once, instead of after the consumer's ack_wait:
// the daemon that wins the registry's compare-and-set (the run still names the silent daemon and its
// attempt, and nobody handed it back yet) naks the silent daemon's delivery of the spec, and
// JetStream redelivers it to a daemon with a free slot, which claims and resumes the run from its
// log like any redelivery. Only one daemon naks a delivery: nats-server honours a nak sent to a
// stale ack subject too, and a second nak would take the spec away from its new holder.
import type { ForkResources } from "@forkd/client";
import { updateRunState } from "@forkd/client/internal";
import { type DaemonPresence, isTerminalRunStatus } from "@forkd/protocol";
import type { DaemonLogger } from "./logger.js";

/** One run of a silent daemon's last presence. */
export type HeldRun = DaemonPresence["runs"][number];

/**
 * The stream sequence an ack subject of the specs consumer names, or undefined when the subject is
 * not one of that consumer's. Both forms: `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>`
 * and, from nats-server 2.10, `$JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<sseq>.…`.
 */
export function specSeqOfAck(ack: string, stream: string, consumer: string): number | undefined {
  const tokens = ack.split(".");
  if (tokens[0] !== "$JS" || tokens[1] !== "ACK") return undefined;
  const at = tokens.length === 9 ? 2 : tokens.length >= 11 ? 4 : -1;
  if (at < 0 || tokens[at] !== stream || tokens[at + 1] !== consumer) return undefined;
  const seq = Number(tokens[at + 3]);
  return Number.isSafeInteger(seq) && seq > 0 ? seq : undefined;
}

/** What {@link handOffRun} needs. */
export interface HandOffContext {
  resources: ForkResources;
  /** This daemon. */
  daemonId: string;
  logger: DaemonLogger;
  now?: () => number;
}

/** Margin for the server's clock when waiting out a silent daemon's pull request. @unit ms */
const PULL_EXPIRY_MARGIN_MS = 100;

/**
 * Hands one run of the silent daemon `silent` back to the queue, if it still is that daemon's (same
 * spec, same attempt, not ended, not handed back already). Returns true when this daemon sent the nak.
 *
 * A daemon that is only frozen still has its last pull request open on the server, which would catch
 * the spec again; the nak asks for redelivery once that request has expired (its beats say when).
 */
export async function handOffRun(
  context: HandOffContext,
  silent: DaemonPresence & { lastSeenAt: number },
  run: HeldRun,
): Promise<boolean> {
  const from = silent.daemon_id;
  const { resources, daemonId, logger } = context;
  const { streams, specsConsumer } = resources.subjects;
  // The presence says which delivery to nak; it must be this run's spec on the specs consumer, or a
  // forged beat could take another run's spec away from a live daemon.
  if (specSeqOfAck(run.ack, streams.specs, specsConsumer) !== run.spec_seq) {
    logger.warn(
      { runId: run.run_id, from },
      "a presence names an ack subject that is not its run's: ignored",
    );
    return false;
  }
  const now = (context.now ?? Date.now)();
  let won = false;
  await updateRunState(resources, run.run_id, (current) => {
    won = false;
    if (
      current === null ||
      isTerminalRunStatus(current.status) ||
      current.daemon_id !== from ||
      current.attempt !== run.attempt ||
      current.spec_seq !== run.spec_seq ||
      current.handoff !== undefined
    ) {
      return "unchanged";
    }
    won = true;
    return { ...current, handoff: { from, by: daemonId, at: now }, updated_at: now };
  });
  if (!won) return false;
  const openUntil = silent.lastSeenAt + (silent.pull_ms ?? 0) + PULL_EXPIRY_MARGIN_MS;
  const delayMs = Math.max(0, openUntil - now);
  resources.nc.publish(
    run.ack,
    delayMs > 0 ? `-NAK ${JSON.stringify({ delay: delayMs * 1_000_000 })}` : "-NAK",
  );
  logger.info(
    { runId: run.run_id, from, attempt: run.attempt },
    "daemon went silent: its run handed back to the queue",
  );
  return true;
}
