// A network partition between one process and a server, on loopback: a TCP relay the process connects
// through instead of the server. `cut()` blackholes it — every connection stays open, and nothing
// passes either way, which is what a partition looks like to both ends (no reset, no close: silence
// until a timeout) — and `heal()` lets bytes through again; what was sent meanwhile is lost, as on a
// real cut link. (Network namespaces would need servers on addresses other than 127.0.0.1.)
import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";

/** A relay to one server that can be cut. */
export interface PartitionRelay {
  /** `nats://127.0.0.1:<port>`-style URL of the relay, with the target's scheme. */
  readonly url: string;
  /** Blackholes every connection through the relay, open ones and new ones. */
  cut(): void;
  /** Lets bytes through again. */
  heal(): void;
  readonly isCut: boolean;
  close(): Promise<void>;
}

/** Starts a relay on 127.0.0.1 to `targetUrl` (e.g. `nats://127.0.0.1:4222`). */
export async function startPartitionRelay(targetUrl: string): Promise<PartitionRelay> {
  const target = new URL(targetUrl);
  const sockets = new Set<Socket>();
  let isCut = false;
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => socket.destroy());
    }
    // Bytes arriving while cut are dropped, not queued: they were lost on the cut link.
    client.on("data", (chunk) => {
      if (!isCut) upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (!isCut) client.write(chunk);
    });
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the relay has no port");
  return {
    url: `${target.protocol}//127.0.0.1:${address.port}`,
    cut: () => {
      isCut = true;
    },
    heal: () => {
      isCut = false;
    },
    get isCut() {
      return isCut;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
