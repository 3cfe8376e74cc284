// Tells a reader when its connection reconnected (core messages sent meanwhile were lost to it), and
// stops telling it for good when asked.
//
// `nc.status()` registers a listener on the connection until its iterator is stopped. Ending the loop
// with the async iterator's `return()` is not enough: while the loop awaits the next status, `return()`
// waits behind it, so the listener — and every status pushed to it — stayed until the connection's next
// status change: one per waiting reader, for as long as the connection lived.

import type { NatsConnection } from "@nats-io/transport-node";

/** A watch of one connection's reconnects; see {@link watchReconnects}. */
export interface ReconnectWatch {
  /** Stops the watch and releases its listener on the connection. Idempotent. */
  stop(): void;
  /** Resolves once the watch has stopped (the loop over the connection's statuses ended). */
  readonly ended: Promise<void>;
}

/** Calls `onReconnect` after each reconnect of `nc`, until the watch is stopped. */
export function watchReconnects(nc: NatsConnection, onReconnect: () => void): ReconnectWatch {
  // At run time status() is a queued iterator, whose stop() ends the loop at once and unregisters it.
  const statuses = nc.status() as AsyncIterable<{ type: string }> & { stop?: () => void };
  const iterator = statuses[Symbol.asyncIterator]();
  const ended = (async () => {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      if (next.value.type === "reconnect") onReconnect();
    }
  })().catch(() => undefined);
  let stopped = false;
  return {
    stop: () => {
      if (stopped) return;
      stopped = true;
      if (statuses.stop) statuses.stop();
      else void iterator.return?.();
    },
    ended,
  };
}
