// The validators of the control path, run once when the daemon starts. zod compiles each schema's
// checks the first time it parses with it (~3 ms per schema here), and V8 compiles a function the first
// time it runs: without this, the first cascade after a start paid those on every daemon at once, in
// the milliseconds the target is about (bench #14: its first round's slowest run was the slowest of all).
import {
  abortRequestCodec,
  decodeSpecOwnership,
  emptyUsageTotals,
  forkEventCodec,
  PROTOCOL_VERSION,
  queuedRunState,
  runStateCodec,
} from "@forkd/protocol";
import { controlProof } from "@forkd/protocol/internal";

const SAMPLE_RUN_ID = "00000000-0000-7000-8000-000000000000";
const SAMPLE_TOKEN = "0".repeat(64);

/** Encodes and decodes one message of each kind a daemon handles when a run is stopped or aborted. */
export function warmControlPath(): void {
  const now = Date.now();
  const proof = controlProof(SAMPLE_TOKEN, SAMPLE_RUN_ID, "abort");
  abortRequestCodec.decode(
    abortRequestCodec.encode({
      v: PROTOCOL_VERSION,
      run_id: SAMPLE_RUN_ID,
      reason: "warm-up",
      requested_at: now,
      proof,
    }),
  );
  const base = { v: PROTOCOL_VERSION, run_id: SAMPLE_RUN_ID, seq: 1, attempt: 1, ts: now } as const;
  forkEventCodec.decode(
    forkEventCodec.encode({ ...base, type: "aborted", reason: "warm-up", usage: emptyUsageTotals() }),
  );
  const state = queuedRunState({ runId: SAMPLE_RUN_ID, createdAt: now, now });
  runStateCodec.decode(runStateCodec.encode({ ...state, status: "aborted", attempt: 1, ended_at: now }));
  decodeSpecOwnership(
    new TextEncoder().encode(
      JSON.stringify({
        v: PROTOCOL_VERSION,
        run_id: SAMPLE_RUN_ID,
        owner_token: SAMPLE_TOKEN,
        prefix: { kind: "none" },
      }),
    ),
  );
}
