// A spec that exhausted max_deliver stays in the work-queue stream and nobody runs it again: the
// daemons share the consumer's advisory (one of them, by queue group) and end the run as failed.
import { type ForkResources, getRunState, lastLoggedEvent, updateRunState } from "@forkd/client";
import { emptyUsageTotals, PROTOCOL_VERSION } from "@forkd/protocol";
import { RunEventPublisher } from "./event-publisher.js";
import type { DaemonLogger } from "./logger.js";

interface MaxDeliveriesAdvisory {
  stream_seq: number;
  deliveries: number;
}

/** Fails the run of the spec named by a `MAX_DELIVERIES` advisory and removes the spec. */
export async function handleMaxDeliveries(
  resources: ForkResources,
  data: Uint8Array,
  context: { daemonId: string; logger: DaemonLogger },
): Promise<void> {
  const advisory = JSON.parse(new TextDecoder().decode(data)) as MaxDeliveriesAdvisory;
  const stream = resources.subjects.streams.specs;
  const stored = await resources.jsm.streams.getMessage(stream, { seq: advisory.stream_seq });
  if (!stored) return;
  const runId = stored.subject.slice(`${resources.subjects.prefix}.fork.`.length);
  const current = await getRunState(resources, runId);
  const terminal = current && ["completed", "failed", "aborted"].includes(current.state.status);
  if (!terminal) {
    const last = await lastLoggedEvent(resources, runId);
    const attempt = (current?.state.attempt ?? 0) + 1;
    const publisher = new RunEventPublisher({
      js: resources.js,
      subjects: resources.subjects,
      runId,
      attempt,
      position: { lastSeq: last?.event.seq ?? 0, lastStreamSeq: last?.streamSeq ?? 0 },
    });
    const error = {
      code: "max_deliver_exceeded",
      message: `the spec was delivered ${advisory.deliveries} times without completing (daemons crashed or lost their claim)`,
      retryable: false,
    };
    await publisher.publish({ type: "failed", error, usage: emptyUsageTotals() });
    const now = Date.now();
    await updateRunState(resources, runId, (state) => ({
      ...(state ?? { v: PROTOCOL_VERSION, run_id: runId, created_at: now, last_seq: 0 }),
      status: "failed",
      attempt,
      last_seq: publisher.lastSeq,
      updated_at: now,
      ended_at: now,
      error,
    }));
    context.logger.warn({ runId, deliveries: advisory.deliveries }, "run failed: max_deliver exhausted");
  }
  await resources.jsm.streams.deleteMessage(stream, advisory.stream_seq).catch(() => false);
}
