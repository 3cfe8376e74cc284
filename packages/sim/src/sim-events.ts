// What a running simulator reports: its statistics, the events of each exchange, and the bus that
// carries them to listeners.
import { EventEmitter } from "node:events";
import type { PromptCacheStats } from "./cache.js";
import type { RequestLogEntry, RequestTotals } from "./log.js";
import type { InputUsage, Usage } from "./types.js";

/** Statistics of a running simulator. */
export interface SimStats extends RequestTotals {
  cache: PromptCacheStats;
}

/** Emitted when a `/v1/messages` request is accepted: valid, not refused by a fault, cache read and writes decided. */
export interface AcceptedEvent {
  seq: number;
  id: string;
  /** @unit ms since epoch (high resolution) */
  at: number;
  stream: boolean;
  /** The input side of the usage it will be charged. */
  usage: InputUsage;
}

/** Emitted when a response's first byte is sent; its cache writes are readable from then. */
export interface FirstByteEvent {
  seq: number;
  id: string;
  /** @unit ms since epoch (high resolution) */
  at: number;
  stream: boolean;
  usage: Usage;
}

/** Emitted when a client closes the connection before its response is complete. */
export interface DisconnectEvent {
  seq: number;
  id: string;
  /** When the simulator saw the connection close. @unit ms since epoch (high resolution) */
  at: number;
  /** The response had started. */
  afterFirstByte: boolean;
  /** @unit tokens */
  outputTokensSent: number;
}

/** Events of a {@link Sim}. */
export interface SimEvents {
  accepted: AcceptedEvent;
  /** A request is over (answered, failed, cut or abandoned) and logged. */
  request: RequestLogEntry;
  firstByte: FirstByteEvent;
  disconnect: DisconnectEvent;
}

/** Options of {@link SimEventBus.next}. */
export interface NextEventOptions<E> {
  /** Only an event that passes. */
  filter?: (e: E) => boolean;
  /** Rejects the wait with the signal's reason. */
  signal?: AbortSignal;
}

/** The simulator's events: listeners, one-shot waits, and emits that a throwing listener cannot break. */
export class SimEventBus {
  readonly #emitter = new EventEmitter().setMaxListeners(0);

  /** Whether anyone listens to `event` (so that an event costly to build is built only then). */
  listening(event: keyof SimEvents): boolean {
    return this.#emitter.listenerCount(event) > 0;
  }

  /** Emits to listeners; a listener that throws is reported as a process warning, never taken down the server. */
  emit<K extends keyof SimEvents>(event: K, payload: SimEvents[K]): void {
    try {
      this.#emitter.emit(event, payload);
    } catch (e) {
      process.emitWarning(
        `a "${event}" listener of the simulator threw: ${(e as Error)?.stack ?? String(e)}`,
      );
    }
  }

  on<K extends keyof SimEvents>(event: K, listener: (e: SimEvents[K]) => void): void {
    this.#emitter.on(event, listener as (e: unknown) => void);
  }

  off<K extends keyof SimEvents>(event: K, listener: (e: SimEvents[K]) => void): void {
    this.#emitter.off(event, listener as (e: unknown) => void);
  }

  /** Resolves with the next event of that kind that passes `filter`; rejects when `signal` aborts. */
  next<K extends keyof SimEvents>(event: K, options?: NextEventOptions<SimEvents[K]>): Promise<SimEvents[K]> {
    return new Promise((resolve, reject) => {
      const signal = options?.signal;
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const listener = (e: SimEvents[K]): void => {
        if (options?.filter !== undefined && !options.filter(e)) return;
        cleanup();
        resolve(e);
      };
      const onAbort = (): void => {
        cleanup();
        reject(signal?.reason);
      };
      const cleanup = (): void => {
        this.off(event, listener);
        signal?.removeEventListener("abort", onAbort);
      };
      this.on(event, listener);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}
