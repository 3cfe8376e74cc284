// The daemon's side of retention (docs/operations.md, "Retention"): every daemon ticks, only the one
// holding the retention lease sweeps. A holder that dies stops renewing; its lease ends at `until` (or
// with the daemons bucket's TTL) and another daemon takes it at its next tick.
import {
  type ForkResources,
  holdRetentionLease,
  releaseRetentionLease,
  type SweepResult,
  sweepFinishedRuns,
} from "@forkd/client";
import type { RetentionLease } from "@forkd/protocol";
import type { DaemonLogger } from "./logger.js";

/** What the sweeper needs. */
export interface RetentionSweeperOptions {
  resources: ForkResources;
  daemonId: string;
  /** Finished runs are removed this long after they ended. @unit ms */
  retentionMs: number;
  /** Unused stored prefixes are removed this long after their last use. @unit ms */
  prefixRetentionMs: number;
  logger: DaemonLogger;
  /** Removes unused prefixes; returns how many it removed. */
  collectPrefixes?: () => Promise<number>;
}

/**
 * How often a daemon ticks: a tenth of the window (a run is removed at most 10 % late), at least once
 * a second, and well inside the daemons bucket's TTL so that the holder's lease never lapses between
 * two renewals. @unit ms
 */
export function sweepIntervalMs(retentionMs: number, daemonTtlMs: number): number {
  return Math.max(1_000, Math.min(Math.floor(retentionMs / 10), Math.floor(daemonTtlMs / 3)));
}

/**
 * How many times a stopping daemon tries to give the lease up. A release that fails (a request that
 * timed out on a loaded cluster) leaves the lease to its term — up to three intervals in which no
 * daemon sweeps — so it is tried again before the daemon goes.
 */
export const RELEASE_ATTEMPTS = 3;

/** Ticks on a timer; sweeps when this daemon holds the retention lease. */
export class RetentionSweeper {
  readonly #options: RetentionSweeperOptions;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #tick: Promise<void> | undefined;
  #lastSweep: RetentionLease["last_sweep"];

  constructor(options: RetentionSweeperOptions) {
    this.#options = options;
    this.#intervalMs = sweepIntervalMs(options.retentionMs, options.resources.options.daemonTtlMs);
  }

  /** Ticks now and then every interval. */
  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.tick(), this.#intervalMs).unref();
    void this.tick();
  }

  /**
   * Renews or takes the lease and, when held, sweeps once. Never rejects: a failed sweep is logged
   * and retried at the next tick (every step is idempotent). Concurrent calls share one tick.
   */
  tick(): Promise<void> {
    this.#tick ??= this.#sweepIfHolder().finally(() => {
      this.#tick = undefined;
    });
    return this.#tick;
  }

  /**
   * Stops ticking, waits for a sweep in progress and gives the lease up for another daemon to take
   * (up to {@link RELEASE_ATTEMPTS} tries; after that it is logged, and the lease ends at its term).
   * Never rejects.
   */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#tick;
    const { resources, daemonId, logger } = this.#options;
    for (let attempt = 1; ; attempt++) {
      try {
        await releaseRetentionLease(resources, daemonId);
        return;
      } catch (error) {
        if (attempt < RELEASE_ATTEMPTS) continue;
        logger.warn(
          { err: error, attempts: attempt, leaseMs: 3 * this.#intervalMs },
          "could not give the retention lease up; another daemon takes it when its term ends",
        );
        return;
      }
    }
  }

  async #hold(): Promise<boolean> {
    const { resources, daemonId, retentionMs, prefixRetentionMs } = this.#options;
    return holdRetentionLease(resources, daemonId, {
      leaseMs: 3 * this.#intervalMs,
      retention_ms: retentionMs,
      prefix_retention_ms: prefixRetentionMs,
      ...(this.#lastSweep === undefined ? {} : { last_sweep: this.#lastSweep }),
    });
  }

  async #sweepIfHolder(): Promise<void> {
    const { resources, retentionMs, logger } = this.#options;
    try {
      if (!(await this.#hold())) return;
      const startedAt = Date.now();
      const runs: SweepResult = await sweepFinishedRuns(resources, { retentionMs, now: startedAt });
      const prefixesRemoved = (await this.#options.collectPrefixes?.()) ?? 0;
      this.#lastSweep = {
        at: Date.now(),
        runs_removed: runs.runsRemoved,
        prefixes_removed: prefixesRemoved,
        took_ms: Date.now() - startedAt,
      };
      if (runs.runsRemoved > 0 || prefixesRemoved > 0) {
        logger.info({ ...this.#lastSweep, scanned: runs.scanned }, "retention: removed finished runs");
      }
      if (runs.runsKeptQueued > 0) {
        logger.info(
          { runs_kept: runs.runsKeptQueued },
          "retention: kept finished runs whose spec is still queued (an ack was lost); removed once it is acked",
        );
      }
      await this.#hold();
    } catch (error) {
      logger.warn({ err: error }, "retention sweep failed; retrying at the next tick");
    }
  }
}
