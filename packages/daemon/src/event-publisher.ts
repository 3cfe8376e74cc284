// Publishes one run's events in order, fenced: every publish expects the stream's last sequence on
// the run's subject to be the one this attempt last wrote. A stale daemon (partitioned, paused, or
// superseded by a redelivery) fails that check on its next publish and stops, so two attempts can
// never interleave and the log stays contiguous from seq 1 with no duplicate.

import { isWrongLastSequence } from "@forkd/client/internal";
import {
  eventMsgId,
  type ForkEvent,
  type ForkEventBody,
  type ForkSubjects,
  forkEventCodec,
  isTerminalEventType,
  PROTOCOL_VERSION,
  ProtocolError,
} from "@forkd/protocol";
import type { JetStreamClient, PubAck } from "@nats-io/jetstream";
import { DaemonError } from "./errors.js";
import type { StorageHealth } from "./storage-health.js";
import { daemonSecrets, type NamedSecret, scrubSecretsDeep } from "./tools/secrets.js";

/** Where a run's log stands when an attempt starts publishing. */
export interface EventLogPosition {
  /** Last run seq in the log (0 for a new run). */
  lastSeq: number;
  /** Stream sequence of that event (0 for a new run). */
  lastStreamSeq: number;
}

/** Options of {@link RunEventPublisher}. */
export interface RunEventPublisherOptions {
  js: JetStreamClient;
  subjects: ForkSubjects;
  runId: string;
  attempt: number;
  position: EventLogPosition;
  /** The run's group (its spec's `group_id`), stamped on every event. */
  groupId?: string | undefined;
  /** Give up on a publish (NATS unreachable, no JetStream quorum) after this long. @unit ms @default 30000 */
  publishTimeoutMs?: number;
  /** Called after each stored event. */
  onPublished?: (event: ForkEvent) => void;
  /** Told whether each publish try was stored, so the daemon knows when JetStream cannot store. */
  storage?: StorageHealth;
  /**
   * Values no event may carry: model text, tool results, errors — whatever holds one gets
   * `[redacted NAME]` instead, before it is stored where every parent and observer can read it.
   * @default the daemon's secrets: its secret-named environment variables and those its configuration holds (see `daemonSecrets`)
   */
  secrets?: readonly NamedSecret[];
  /**
   * Publishing starts once this settles: events published before wait for it, in order. A run gives
   * the next turn of the event loop, so that its first model request is written before its first
   * events are encoded and sent (they are not awaited before that request; see the turn loop's
   * durability barrier). When it rejects, the attempt publishes nothing, as if fenced: a run that
   * called the model ahead of its claim (`callAheadOfClaim`) gives its claim, and a refused claim
   * owns nothing.
   * @default at once
   */
  startAfter?: Promise<unknown>;
  now?: () => number;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}

/** Serialises and fences the publishing of one run attempt's events. */
export class RunEventPublisher {
  readonly runId: string;
  readonly attempt: number;
  readonly #options: RunEventPublisherOptions;
  #seq: number;
  #lastStreamSeq: number;
  #chain: Promise<unknown> = Promise.resolve();
  #fenced = false;
  #ended = false;
  readonly #secrets: readonly NamedSecret[];

  constructor(options: RunEventPublisherOptions) {
    this.#options = options;
    this.runId = options.runId;
    this.attempt = options.attempt;
    this.#seq = options.position.lastSeq;
    this.#lastStreamSeq = options.position.lastStreamSeq;
    this.#secrets = options.secrets ?? daemonSecrets();
    if (options.startAfter)
      this.#chain = options.startAfter.then(
        () => undefined,
        () => {
          this.#fenced = true;
        },
      );
  }

  /** Seq of the last event stored by this publisher (or the log's last when nothing was published yet). */
  get lastSeq(): number {
    return this.#seq;
  }

  /** True once another attempt has written to the log: this one must publish nothing more. */
  get fenced(): boolean {
    return this.#fenced;
  }

  /**
   * True once a terminal event (`completed`, `failed`, `aborted`) was handed to {@link publish}: a
   * run's log ends with it, so nothing more is published (a heartbeat racing the end is dropped).
   */
  get ended(): boolean {
    return this.#ended;
  }

  /**
   * Stamps and stores `body` after every earlier event; rejects with a `fenced` DaemonError when
   * superseded, and with a `run_ended` one for any event after the terminal one.
   */
  publish(body: ForkEventBody): Promise<ForkEvent> {
    if (this.#ended) {
      return Promise.reject(
        new DaemonError(
          "run_ended",
          `run ${this.runId} already ended: its log takes no ${body.type} event after the terminal one`,
        ),
      );
    }
    if (isTerminalEventType(body.type)) this.#ended = true;
    const next = this.#chain.then(() => this.#publishNow(body));
    this.#chain = next.catch(() => undefined);
    return next;
  }

  /** Waits for every publish issued so far. */
  async flush(): Promise<void> {
    await this.#chain;
  }

  // A duplicate ack is our own earlier try only when the stored message holds exactly our bytes (same
  // seq, attempt and ts: a retry re-sends the identical event).
  async #storedIsOurs(ack: PubAck, bytes: Uint8Array): Promise<boolean> {
    const jsm = await this.#options.js.jetstreamManager(false);
    const stored = await jsm.streams.getMessage(ack.stream, { seq: ack.seq });
    return stored !== null && sameBytes(stored.data, bytes);
  }

  async #publishNow(body: ForkEventBody): Promise<ForkEvent> {
    if (this.#fenced) throw fencedError(this.runId, this.attempt);
    const seq = this.#seq + 1;
    const event = {
      ...scrubSecretsDeep(body, this.#secrets),
      v: PROTOCOL_VERSION,
      run_id: this.runId,
      seq,
      attempt: this.attempt,
      ts: (this.#options.now ?? Date.now)(),
      ...(this.#options.groupId !== undefined ? { group_id: this.#options.groupId } : {}),
    } as ForkEvent;
    let bytes: Uint8Array;
    try {
      bytes = forkEventCodec.encode(event);
    } catch (error) {
      // Nothing was stored and the seq is not used: the run can still publish its failure.
      if (error instanceof ProtocolError && error.code === "payload_too_large") {
        throw new DaemonError(
          "event_too_large",
          `event ${seq} (${body.type}) of run ${this.runId}: ${error.message}`,
          {
            cause: error,
          },
        );
      }
      throw error;
    }
    const deadline = Date.now() + (this.#options.publishTimeoutMs ?? 30_000);
    for (let attempt = 1; ; attempt++) {
      try {
        // Retries reuse the msg id: if an earlier try was stored, JetStream answers "duplicate" (its
        // duplicate check runs before the expected-sequence check), so a retry never doubles an event.
        const ack = await this.#options.js.publish(this.#options.subjects.events(this.runId), bytes, {
          msgID: eventMsgId(this.runId, seq),
          expect: { lastSubjectSequence: this.#lastStreamSeq },
          // Short: a publish whose server died with it gets no answer at all; the retry (same msg id)
          // goes out on the reconnected connection.
          timeout: 2_000,
        });
        if (ack.duplicate && !(await this.#storedIsOurs(ack, bytes))) {
          // Another attempt stored this seq under the same msg id: deduplication answered before the
          // expected-sequence check could refuse us. We are superseded, not retrying our own publish.
          this.#fenced = true;
          throw fencedError(this.runId, this.attempt);
        }
        this.#options.storage?.succeeded(Date.now());
        this.#seq = seq;
        this.#lastStreamSeq = ack.seq;
        this.#options.onPublished?.(event);
        return event;
      } catch (error) {
        if (error instanceof DaemonError && error.code === "fenced") throw error;
        if (isWrongLastSequence(error)) {
          this.#fenced = true;
          throw fencedError(this.runId, this.attempt, error);
        }
        this.#options.storage?.failed(Date.now(), error);
        if (Date.now() >= deadline) {
          throw new DaemonError(
            "publish_failed",
            `cannot publish event ${seq} of run ${this.runId}: ${(error as Error).message}`,
            {
              retryable: true,
              cause: error,
            },
          );
        }
        // JetStream may be electing a leader after a node loss: back off briefly and try again.
        await new Promise((resolveDelay) => setTimeout(resolveDelay, Math.min(100 * 2 ** attempt, 2_000)));
      }
    }
  }
}

function fencedError(runId: string, attempt: number, cause?: unknown): DaemonError {
  return new DaemonError("fenced", `attempt ${attempt} of run ${runId} was superseded by another daemon`, {
    retryable: false,
    cause,
  });
}
