// Byte counters of a nats-server, from its monitoring port: per connection (`/connz`) and in total
// (`/varz`). Both count what crossed the server's sockets, protocol framing and headers included.

/** Bytes and messages of one connection, as the server counts them. */
export interface ConnectionBytes {
  /** Client → server. @unit bytes */
  in: number;
  /** Server → client. @unit bytes */
  out: number;
  inMsgs: number;
  outMsgs: number;
}

/** A snapshot of the server's counters. */
export interface ByteSnapshot {
  /** By connection name (unnamed connections under `cid:<n>`). */
  connections: Map<string, ConnectionBytes>;
  total: { in: number; out: number };
}

interface Connz {
  connections?: Array<{
    cid: number;
    name?: string;
    in_bytes: number;
    out_bytes: number;
    in_msgs: number;
    out_msgs: number;
  }>;
}

interface Varz {
  in_bytes: number;
  out_bytes: number;
}

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
  return (await response.json()) as T;
}

/** Reads `/connz` and `/varz`. */
export async function byteSnapshot(monitorUrl: string): Promise<ByteSnapshot> {
  const [connz, varz] = await Promise.all([
    getJson<Connz>(`${monitorUrl}/connz?limit=4096`),
    getJson<Varz>(`${monitorUrl}/varz`),
  ]);
  const connections = new Map<string, ConnectionBytes>();
  for (const c of connz.connections ?? []) {
    connections.set(c.name || `cid:${c.cid}`, {
      in: c.in_bytes,
      out: c.out_bytes,
      inMsgs: c.in_msgs,
      outMsgs: c.out_msgs,
    });
  }
  return { connections, total: { in: varz.in_bytes, out: varz.out_bytes } };
}

/** What each connection (and the server) moved between two snapshots. */
export function byteDelta(before: ByteSnapshot, after: ByteSnapshot): ByteSnapshot {
  const connections = new Map<string, ConnectionBytes>();
  for (const [name, a] of after.connections) {
    const b = before.connections.get(name) ?? { in: 0, out: 0, inMsgs: 0, outMsgs: 0 };
    connections.set(name, {
      in: a.in - b.in,
      out: a.out - b.out,
      inMsgs: a.inMsgs - b.inMsgs,
      outMsgs: a.outMsgs - b.outMsgs,
    });
  }
  return {
    connections,
    total: { in: after.total.in - before.total.in, out: after.total.out - before.total.out },
  };
}

/** Sums the connections whose name passes `match`. */
export function sumConnections(snapshot: ByteSnapshot, match: (name: string) => boolean): ConnectionBytes {
  const sum = { in: 0, out: 0, inMsgs: 0, outMsgs: 0 };
  for (const [name, c] of snapshot.connections) {
    if (!match(name)) continue;
    sum.in += c.in;
    sum.out += c.out;
    sum.inMsgs += c.inMsgs;
    sum.outMsgs += c.outMsgs;
  }
  return sum;
}
