// Test support: what a daemon's claim leaves in a run's log first, for tests that have no daemon.
import { eventMsgId, forkEventCodec, PROTOCOL_VERSION } from "@forkd/protocol";
import type { ForkResources } from "../resources.js";

/** Stores the run's first event, `accepted`, as a daemon `d1` that claimed it would. */
export async function publishAccepted(resources: ForkResources, runId: string): Promise<void> {
  const event = forkEventCodec.decode(
    JSON.stringify({
      v: PROTOCOL_VERSION,
      run_id: runId,
      seq: 1,
      attempt: 1,
      ts: Date.now(),
      type: "accepted",
      daemon_id: "d1",
      queue_wait_ms: 1,
      delivery: 1,
      resumed: false,
    }),
  );
  await resources.js.publish(resources.subjects.events(runId), forkEventCodec.encode(event), {
    msgID: eventMsgId(runId, 1),
  });
}
