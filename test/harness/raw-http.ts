// An HTTP request exactly as written: a raw request target and the headers given, none added (no
// normalisation by a client URL parser, no Host unless asked for). For attacks on forkd's own HTTP
// servers, whose request targets and Host headers are the attacker's.
import { type RequestOptions, request } from "node:http";

/** What came back: the status and the body as text. */
export interface RawAnswer {
  status: number;
  body: string;
}

/** Sends one request to 127.0.0.1:`port`; `options` go to `http.request` as they are. */
export function rawRequest(port: number, options: RequestOptions, body?: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, ...options });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}
