// A free TCP port, for servers that must know their port before they start (cluster routes).
import { createServer } from "node:net";

/**
 * Asks the kernel for a free TCP port by listening on port 0 and closing the socket again.
 *
 * Another process may take the port between this call and its use; prefer letting the server pick
 * its own port (`nats-server -p -1`) wherever the port need not be known in advance.
 *
 * @param host - the address to bind.
 * @default host "127.0.0.1"
 * @returns a port number that was free on `host` a moment ago.
 */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : undefined;
      server.close((error) => {
        if (error) reject(error);
        else if (port === undefined) reject(new Error(`could not read the port bound on ${host}`));
        else resolve(port);
      });
    });
  });
}
