// What a running simulator reports: its statistics and the events of each exchange.
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
