// Aborts and stops heard for runs this daemon does not hold (yet). Every daemon hears every control;
// a run's control can come just before this daemon claims it — the cascade that ends a parent's
// queued runs also frees slots in which daemons pick them up. Remembered for a short while, a control
// is handed to the run the moment it starts here, which judges its proof once the spec is decoded,
// so the run ends before its first model call instead of at the registry flag's next read.
import type { AbortClaim } from "./run-executor.js";

/** How long a control is kept for a run that may start here. @unit ms */
export const RECENT_CONTROL_TTL_MS = 30_000;
/** The most controls kept: a flood of forged ones costs bounded memory. */
export const MAX_RECENT_CONTROLS = 4_096;

/** Controls of runs not held here, newest last, forgotten after {@link RECENT_CONTROL_TTL_MS}. */
export class RecentControls {
  readonly #byRun = new Map<string, { claims: AbortClaim[]; at: number; deferred?: true }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Keeps `claim` for run `runId` (an abort and a stop of one run are both kept). */
  remember(runId: string, claim: AbortClaim): void {
    const now = this.#now();
    this.#forgetOld(now);
    const known = this.#byRun.get(runId);
    if (known) {
      if (known.claims.length < 4) known.claims.push(claim);
      return;
    }
    if (this.#byRun.size >= MAX_RECENT_CONTROLS) {
      // Full: the map is not empty, its first key is the oldest.
      this.#byRun.delete(this.#byRun.keys().next().value!);
    }
    this.#byRun.set(runId, { claims: [claim], at: now });
  }

  /**
   * The controls kept for run `runId`, left in memory, the first time a delivery of its spec is put
   * back for the queue-group member to end (docs/protocol.md, "Stopping a queued run"); none the next
   * time, or when they are too old, so that a run is put back once at most and then meets them by
   * {@link take} like any other.
   */
  deferOnce(runId: string): readonly AbortClaim[] {
    const known = this.#byRun.get(runId);
    if (known === undefined || known.deferred || this.#now() - known.at > RECENT_CONTROL_TTL_MS) return [];
    known.deferred = true;
    return known.claims;
  }

  /** The controls kept for run `runId`, removed from memory; none when they are too old. */
  take(runId: string): AbortClaim[] {
    const known = this.#byRun.get(runId);
    if (known === undefined) return [];
    this.#byRun.delete(runId);
    return this.#now() - known.at > RECENT_CONTROL_TTL_MS ? [] : known.claims;
  }

  /** How many runs have controls kept. */
  get size(): number {
    return this.#byRun.size;
  }

  // Insertion order is age order: the old ones are at the front.
  #forgetOld(now: number): void {
    for (const [runId, known] of this.#byRun) {
      if (now - known.at <= RECENT_CONTROL_TTL_MS) break;
      this.#byRun.delete(runId);
    }
  }
}
