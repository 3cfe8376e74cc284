// A spec that exhausted max_deliver stays in the work-queue stream and nobody runs it again: the
// daemons share the consumer's advisory (one of them, by queue group) and end the run as failed.
import type { ForkResources } from "@forkd/client";
import { isValidRunId, MAX_CONTROL_BYTES } from "@forkd/protocol";
import { createCodec } from "@forkd/protocol/internal";
import { z } from "zod";
import type { DaemonLogger } from "./logger.js";
import { readRunState } from "./registry-trust.js";
import { failUnclaimedRun } from "./run-ending.js";

// The fields forkd reads of the server's advisory (it has more). Decoded like any wire message: the
// subject is the server's, but an account without permissions lets anyone publish on it.
const advisoryCodec = createCodec(
  z.object({ stream_seq: z.number().int().positive(), deliveries: z.number().int().nonnegative() }),
  {
    invalidCode: "invalid_message",
    what: "max-deliveries advisory",
    maxBytes: MAX_CONTROL_BYTES,
    versioned: false,
  },
);

/** Fails the run of the spec named by a `MAX_DELIVERIES` advisory and removes the spec. */
export async function handleMaxDeliveries(
  resources: ForkResources,
  data: Uint8Array,
  context: { daemonId: string; logger: DaemonLogger },
): Promise<void> {
  const advisory = advisoryCodec.decode(data);
  const stream = resources.subjects.streams.specs;
  const stored = await resources.jsm.streams.getMessage(stream, { seq: advisory.stream_seq });
  if (!stored) return;
  const runId = resources.subjects.runIdOf(stored.subject);
  if (runId === undefined || !isValidRunId(runId)) {
    // No run to fail: the spec only leaves the queue.
    await resources.jsm.streams.deleteMessage(stream, advisory.stream_seq).catch(() => false);
    return;
  }
  // Where the stream keeps one spec per run, the stored spec is the run's owner whatever the registry
  // (every parent's to write) says; on an older stream the registry names the owner.
  const owner = resources.specsOnePerRun
    ? advisory.stream_seq
    : (await readRunState(resources, runId, context.logger))?.state.spec_seq;
  if (owner !== undefined && owner !== advisory.stream_seq) {
    // Not the spec that owns the run: its failure to deliver says nothing about the run.
    await resources.jsm.streams.deleteMessage(stream, advisory.stream_seq).catch(() => false);
    return;
  }
  const failed = await failUnclaimedRun(
    resources,
    runId,
    {
      code: "max_deliver_exceeded",
      message: `the spec was delivered ${advisory.deliveries} times without completing (daemons crashed or lost their claim)`,
      retryable: false,
    },
    { specSeq: advisory.stream_seq, deliveries: advisory.deliveries },
    context.logger,
  );
  if (failed)
    context.logger.warn({ runId, deliveries: advisory.deliveries }, "run failed: max_deliver exhausted");
  await resources.jsm.streams.deleteMessage(stream, advisory.stream_seq).catch(() => false);
}
