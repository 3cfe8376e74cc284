// What the simulator's request log says about concurrency: the independent witness of the call limits
// (test/e2e/call-limit.test.ts, bench #15), computed from each request's arrival and end times.

/** A request as the simulator logged it. @unit ms (both times, one clock) */
export interface TimedRequest {
  receivedAt: number;
  endedAt: number;
}

function edgesOf(entries: readonly TimedRequest[]): { at: number; delta: 1 | -1 }[] {
  const edges = entries.flatMap((entry) => [
    { at: entry.receivedAt, delta: 1 as const },
    { at: entry.endedAt, delta: -1 as const },
  ]);
  // An end and an arrival at the same instant: the end first (the slot was free again).
  return edges.sort((a, b) => a.at - b.at || a.delta - b.delta);
}

/** The most requests the simulator held at once. */
export function maxConcurrent(entries: readonly TimedRequest[]): number {
  let now = 0;
  let max = 0;
  for (const edge of edgesOf(entries)) {
    now += edge.delta;
    max = Math.max(max, now);
  }
  return max;
}

/**
 * How long a slot freed at the limit stayed unused: for each request that ended while `limit`
 * requests were in flight (every slot taken, so others were waiting), the time to the next arrival
 * (each arrival answers the oldest such end). Ends with no later arrival are left out. @unit ms
 */
export function slotReuseGaps(entries: readonly TimedRequest[], limit: number): number[] {
  let now = 0;
  const freed: number[] = [];
  const gaps: number[] = [];
  for (const edge of edgesOf(entries)) {
    if (edge.delta === -1 && now === limit) freed.push(edge.at);
    if (edge.delta === 1 && freed.length > 0) gaps.push(edge.at - freed.shift()!);
    now += edge.delta;
  }
  return gaps;
}
