// Maps a run's terminal event to what the parent sees.

import type { ForkOutcome } from "@forkd/core";
import type { TerminalForkEvent } from "@forkd/protocol";

/** `completed` → completed, `aborted` → killed, `failed` with code `timeout` → timeout, other failures → failed. */
export function outcomeFromTerminalEvent(event: TerminalForkEvent): ForkOutcome {
  switch (event.type) {
    case "completed":
      return { status: "completed", runId: event.run_id, result: event.result };
    case "aborted":
      return { status: "killed", runId: event.run_id, reason: event.reason, usage: event.usage };
    case "failed":
      return event.error.code === "timeout"
        ? { status: "timeout", runId: event.run_id, error: event.error, usage: event.usage }
        : { status: "failed", runId: event.run_id, error: event.error, usage: event.usage };
    default: {
      const unreachable: never = event;
      throw new Error(`unknown terminal event ${(unreachable as { type: string }).type}`);
    }
  }
}
