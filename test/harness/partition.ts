// A network partition between one process and a server, on loopback: a TCP relay the process connects
// through instead of the server. `cut()` stops carrying bytes either way while every connection stays
// open — what a partition looks like to both ends: no reset, no close, silence until a timeout; what
// is sent meanwhile waits in the kernel's buffers, as TCP's retransmissions would. `heal()` carries it
// all on (a short partition), or with `reset` ends every connection through the relay (a partition
// long enough for both ends to give up), and new connections pass again. (Network namespaces would
// need servers on addresses other than 127.0.0.1.)
import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";

/** A relay to one server that can be cut. */
export interface PartitionRelay {
  /** `nats://127.0.0.1:<port>`-style URL of the relay, with the target's scheme. */
  readonly url: string;
  /** Blackholes every connection through the relay, open ones and new ones. */
  cut(): void;
  /** Carries bytes again; with `reset`, ends the connections that were cut instead. */
  heal(options?: { reset?: boolean }): void;
  readonly isCut: boolean;
  close(): Promise<void>;
}

/** Carries `from`'s bytes to `to`, with back-pressure; never resumes `from` while the link is cut. */
function carry(from: Socket, to: Socket, isCut: () => boolean): void {
  from.on("data", (chunk) => {
    if (to.write(chunk)) return;
    from.pause();
    to.once("drain", () => {
      if (!isCut()) from.resume();
    });
  });
}

/** Stops reading from both ends: nothing more is carried, and TCP's buffers fill. */
function pause(...sockets: Socket[]): void {
  for (const socket of sockets) socket.pause();
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
    carry(client, upstream, () => isCut);
    carry(upstream, client, () => isCut);
    if (isCut) pause(client, upstream);
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
      for (const socket of sockets) socket.pause();
    },
    heal: (options = {}) => {
      isCut = false;
      for (const socket of sockets) {
        if (options.reset) socket.destroy();
        else socket.resume();
      }
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
