// Turning event bodies into events (the envelope: v, run_id, seq, attempt, ts), and batching streamed
// text into llm.delta events so a fast stream does not become thousands of tiny messages.
import { type ForkEvent, type ForkEventBody, PROTOCOL_VERSION } from "@forkd/protocol";
import { type Clock, systemClock } from "./clock.js";

/** Options of {@link EventSequencer}. */
export interface EventSequencerOptions {
  runId: string;
  /** Delivery attempt stamped on every event. @default 1 */
  attempt?: number;
  /** Seq of the first event stamped; a resumed run continues after the last seq of its log. @default 1 */
  firstSeq?: number;
  /** @default systemClock */
  clock?: Clock;
}

/** Stamps the envelope on event bodies: contiguous seqs from `firstSeq`, the attempt, the time. */
export class EventSequencer {
  readonly runId: string;
  readonly attempt: number;
  readonly #clock: Clock;
  #nextSeq: number;

  constructor(options: EventSequencerOptions) {
    this.runId = options.runId;
    this.attempt = options.attempt ?? 1;
    this.#clock = options.clock ?? systemClock;
    this.#nextSeq = options.firstSeq ?? 1;
    if (!Number.isInteger(this.#nextSeq) || this.#nextSeq < 1) {
      throw new RangeError(`firstSeq must be a positive integer, got ${String(options.firstSeq)}`);
    }
  }

  /** Seq the next stamped event gets. */
  get nextSeq(): number {
    return this.#nextSeq;
  }

  /** Seq of the last event stamped; `firstSeq - 1` before any. */
  get lastSeq(): number {
    return this.#nextSeq - 1;
  }

  /** The event of `body`, with the next seq. */
  stamp(body: ForkEventBody): ForkEvent {
    const event = {
      v: PROTOCOL_VERSION,
      run_id: this.runId,
      seq: this.#nextSeq,
      attempt: this.attempt,
      ts: this.#clock.now(),
      ...body,
    } as ForkEvent;
    this.#nextSeq += 1;
    return event;
  }
}

/** Options of {@link LlmDeltaBatcher}. */
export interface DeltaBatchOptions {
  /** Longest a piece of text waits before it is sent. @unit ms @default 50 */
  maxDelayMs?: number;
  /** Text size at which the batch is sent at once. @unit bytes (UTF-16 code units) @default 2048 */
  maxBytes?: number;
}

/**
 * Collects streamed text of one turn and emits it as `llm.delta` events: at most every
 * `maxDelayMs`, or at once when `maxBytes` have gathered. {@link flush} sends what is left; call it
 * when the response ends, fails or is aborted.
 */
export class LlmDeltaBatcher {
  readonly #emit: (body: ForkEventBody) => void;
  readonly #turn: number;
  readonly #maxDelayMs: number;
  readonly #maxBytes: number;
  #buffer = "";
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(turn: number, emit: (body: ForkEventBody) => void, options: DeltaBatchOptions = {}) {
    this.#turn = turn;
    this.#emit = emit;
    this.#maxDelayMs = options.maxDelayMs ?? 50;
    this.#maxBytes = options.maxBytes ?? 2048;
  }

  /**
   * Marks the response's first byte with an `llm.delta` at once (its text may be empty): from that
   * moment the cache entry the request wrote is readable, and warm-first fan-out releases the
   * siblings on it. Later text is batched as usual.
   */
  started(): void {
    this.#emit({ type: "llm.delta", turn: this.#turn, text: this.#buffer });
    this.#buffer = "";
  }

  /** Adds streamed text. */
  push(text: string): void {
    if (text === "") return;
    this.#buffer += text;
    if (this.#buffer.length >= this.#maxBytes) {
      this.flush();
    } else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.flush(), this.#maxDelayMs);
    }
  }

  /** Emits what is buffered, if anything, and stops the timer. */
  flush(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#buffer === "") return;
    const text = this.#buffer;
    this.#buffer = "";
    this.#emit({ type: "llm.delta", turn: this.#turn, text });
  }
}
