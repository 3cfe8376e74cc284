// Launching a benchmark's children and waiting for each to complete: a fan-out (warm-first or not)
// or one fork after another; a child that ends otherwise fails the benchmark, naming `what`.
import type { NatsForkSubagent } from "@forkd/client";
import type { ForkOutcome, ForkParams } from "@forkd/core";

type Child = Pick<ForkParams, "directive" | "label">;

/** Forks `children` of `base` at once, waits until all completed, and returns their outcomes. */
export async function fanOutCompleted(
  forks: NatsForkSubagent,
  base: Omit<ForkParams, "directive">,
  children: Child[],
  options: { warmFirst: boolean; what: string },
): Promise<Extract<ForkOutcome, { status: "completed" }>[]> {
  const handles = forks.fanOut(base, children, { warmFirst: options.warmFirst });
  const outcomes: Extract<ForkOutcome, { status: "completed" }>[] = [];
  for (const handle of handles) {
    const outcome = await handle.result();
    if (outcome.status !== "completed") throw new Error(`${options.what}: a child ended ${outcome.status}`);
    outcomes.push(outcome);
  }
  return outcomes;
}
