// Whether JetStream stores what this daemon writes. A daemon that cannot store (the cluster lost
// quorum, or the node it is connected to is cut from the others) must say so — log, metric — take no
// work it cannot record, and stop paying for model streams whose events go nowhere.

/** A change of {@link StorageHealth}'s verdict. */
export type StorageTransition =
  | { kind: "unavailable"; since: number; error: unknown }
  | { kind: "available"; unavailableForMs: number };

/**
 * Follows the outcomes of this daemon's JetStream writes (event publishes, registry heartbeats).
 * Storage is unavailable from the first failure after a success until the next success; a transition
 * is reported once each way. Pulls are not counted: a pull request is sent without an answer, so one
 * "succeeds" even where nothing can be stored.
 */
export class StorageHealth {
  #failingSince: number | undefined;
  readonly #onChange: (transition: StorageTransition) => void;

  constructor(onChange: (transition: StorageTransition) => void = () => undefined) {
    this.#onChange = onChange;
  }

  /** JetStream answered (stored, or served a read). */
  succeeded(now: number): void {
    if (this.#failingSince === undefined) return;
    const unavailableForMs = now - this.#failingSince;
    this.#failingSince = undefined;
    this.#onChange({ kind: "available", unavailableForMs });
  }

  /** JetStream did not answer in time, or answered that it cannot (no leader, no quorum). */
  failed(now: number, error: unknown): void {
    if (this.#failingSince !== undefined) return;
    this.#failingSince = now;
    this.#onChange({ kind: "unavailable", since: now, error });
  }

  /** True while the last outcome was a failure. */
  get available(): boolean {
    return this.#failingSince === undefined;
  }

  /** How long storage has been failing without a success in between, 0 while it is available. @unit ms */
  unavailableForMs(now: number): number {
    return this.#failingSince === undefined ? 0 : now - this.#failingSince;
  }
}
