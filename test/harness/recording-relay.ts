// A relay in front of the simulator that keeps what the simulator sent back: the simulator logs each
// request's bytes but not its answer, and a test that checks what a proxy rebuilt from a stream needs
// the stream as it left the simulator. Requests and answers pass through byte for byte.
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One answer the upstream sent. */
export interface RelayedAnswer {
  method: string;
  /** The request's path and query. */
  path: string;
  status: number;
  /** The upstream's `request-id` header: the simulator's log entry `id`. */
  requestId: string | undefined;
  /** The answer's body as the upstream sent it (the simulator never compresses). */
  body: string;
}

/** A running relay. */
export interface RecordingRelay {
  /** Its base URL, to use in place of the upstream's. */
  readonly url: string;
  /** The answers finished so far, in the order they ended. */
  answers(): RelayedAnswer[];
  close(): Promise<void>;
}

/** Starts a relay on a free loopback port to `upstream` (an `http://host:port` origin). */
export async function startRecordingRelay(upstream: string): Promise<RecordingRelay> {
  const target = new URL(upstream);
  const answers: RelayedAnswer[] = [];
  const server: Server = createServer((req, res) => {
    const forwarded = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host },
      },
      (answer: IncomingMessage) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        const chunks: Buffer[] = [];
        answer.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          res.write(chunk);
        });
        answer.on("end", () => {
          const requestId = answer.headers["request-id"];
          answers.push({
            method: req.method ?? "",
            path: req.url ?? "",
            status: answer.statusCode ?? 0,
            requestId: typeof requestId === "string" ? requestId : undefined,
            body: Buffer.concat(chunks).toString("utf8"),
          });
          res.end();
        });
      },
    );
    forwarded.on("error", () => res.destroy());
    // The client hung up before the answer ended: so does the relay, as a proxy would.
    res.on("close", () => {
      if (!res.writableFinished) forwarded.destroy();
    });
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    answers: () => [...answers],
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
