// Which runs of a cascade ended on its fast path, heard as their daemons publish the terminal events.
//
// A cascade (abortParent, a group's abort) first publishes every run's abort on core NATS; a daemon
// running or holding the run ends it within milliseconds. The registry flag written after it is the
// backstop for a run that no daemon heard the fast path for (its spec not stored yet, a daemon
// reconnecting). Writing that flag for every run at once made a 40-run cascade twice as slow: each flag
// is a read and a compare-and-set, and the server answers a connection's JetStream requests one after
// the other, so the flags queued in front of the daemons' own requests that end the runs. So the parent
// waits, a bounded time, for each run's terminal event, and flags only the runs that did not end.
//
// The events are heard on core NATS (a JetStream publish reaches plain subscribers of its subject too),
// not read from the stream: no consumer per run. They are a hint, never a proof: a run counted as ended
// is merely not flagged. Parents may not publish on `agent.fork.*.events` (deploy/nats/accounts.conf),
// so another parent cannot forge an ending to keep a run from its flag.

import { type ForkSubjects, isTerminalEventType } from "@forkd/protocol";
import { parseJsonText } from "@forkd/protocol/internal";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";

/** Follows the event subjects of a set of runs until each published its terminal event. */
export class TerminalWatch {
  readonly #nc: NatsConnection;
  readonly #subjects: ForkSubjects;
  readonly #subscriptions = new Map<string, Subscription>();
  readonly #ended = new Set<string>();
  #allEnded: (() => void) | undefined;

  constructor(nc: NatsConnection, subjects: ForkSubjects) {
    this.#nc = nc;
    this.#subjects = subjects;
  }

  /**
   * Starts following `runId`. Call it before publishing the run's control: on one connection the
   * subscription reaches the server before the publish, so no ending that the control causes is missed.
   */
  follow(runId: string): void {
    if (this.#subscriptions.has(runId)) return;
    const subscription = this.#nc.subscribe(this.#subjects.events(runId), {
      callback: (error, message) => {
        if (error || !endsRun(message.data, runId)) return;
        this.#ended.add(runId);
        subscription.unsubscribe();
        if (this.#ended.size === this.#subscriptions.size) this.#allEnded?.();
      },
    });
    this.#subscriptions.set(runId, subscription);
  }

  /**
   * Resolves with the runs that ended, once every followed run ended or after `boundMs`, whichever is
   * first; then follows nothing more.
   */
  async settled(boundMs: number): Promise<ReadonlySet<string>> {
    if (this.#ended.size < this.#subscriptions.size) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.#allEnded = resolve;
        timer = setTimeout(resolve, boundMs);
      });
      clearTimeout(timer);
    }
    for (const subscription of this.#subscriptions.values()) subscription.unsubscribe();
    return new Set(this.#ended);
  }
}

const utf8 = new TextDecoder();

/** The fields of an event heard on core NATS that a hint is read by. */
export interface EventHint {
  type: string;
  /** `llm.request`, `heartbeat`: the turn. */
  turn?: number | undefined;
  /** `accepted`: the attempt resumes an earlier one. */
  resumed?: boolean | undefined;
}

/**
 * An event of `runId` heard on core NATS, read without the codec's full check — a hint, never a
 * proof — or undefined when `data` is no event of that run.
 */
export function eventHint(data: Uint8Array, runId: string): EventHint | undefined {
  try {
    const event = parseJsonText(utf8.decode(data)) as {
      type?: unknown;
      run_id?: unknown;
      turn?: unknown;
      resumed?: unknown;
    };
    if (event.run_id !== runId || typeof event.type !== "string") return undefined;
    return {
      type: event.type,
      turn: typeof event.turn === "number" ? event.turn : undefined,
      resumed: event.resumed === true,
    };
  } catch {
    return undefined;
  }
}

/** Whether `data` is a terminal event of `runId` (a hint, see {@link eventHint}). */
export function endsRun(data: Uint8Array, runId: string): boolean {
  const hint = eventHint(data, runId);
  return hint !== undefined && isTerminalEventType(hint.type);
}
