// The check every fault test ends with: a run's stored event log is exactly seqs 1..N.
import type { ForkResources } from "@forkd/client";
import { readStoredEvents } from "@forkd/client/internal";
import type { ForkEvent } from "@forkd/protocol";
import { expect } from "vitest";

/** Asserts the run's log is 1..N with no gap and no duplicate, and returns it. */
export async function contiguousLog(resources: ForkResources, runId: string): Promise<ForkEvent[]> {
  const events = (await readStoredEvents(resources, runId)).map((logged) => logged.event);
  expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
  return events;
}
