// One flush for the subscriptions a connection made in one turn of the event loop.
//
// A wait that subscribes and then must know its subscription is at the server flushes the connection:
// a PING written to the socket at once, a system call each. A fan-out's 100 `result()` calls made one
// after another wrote 100 PINGs (~2 ms of a 100-child fan-out's synchronous start, bench #3). The
// flush below is sent once the current synchronous work is done, after every subscription it made:
// the server answers the one PING once it has processed all of them (one connection is in order).

import type { NatsConnection } from "@nats-io/transport-node";

const pending = new WeakMap<NatsConnection, Promise<void>>();

/**
 * Resolves once every subscription `nc` made before this call (and in the same turn after it) is at
 * the server: one flush per connection per turn of the event loop, sent after that turn's work.
 */
export function flushSoon(nc: NatsConnection): Promise<void> {
  let flushed = pending.get(nc);
  if (flushed === undefined) {
    flushed = Promise.resolve().then(() => {
      // From here on, a new subscription needs a new flush: it may be written after this PING.
      pending.delete(nc);
      return nc.flush();
    });
    pending.set(nc, flushed);
  }
  return flushed;
}
