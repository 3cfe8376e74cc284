// The proxy forwards to its upstreams (Anthropic's, and OpenAI's under /openai/) and nowhere else. A request target the proxy
// resolved as a URL reference — `//other-host/v1/messages` (scheme-relative) or
// `http://other-host/v1/messages` (absolute form, as sent to a forward proxy) — replaced the
// upstream's host: the proxy became an open relay, from its network position, to any host, with
// the requester's headers (an `x-api-key` included) sent along. Real HTTP on loopback: an upstream
// and a second listener that stands for the host the attacker names. And a body larger than any
// Messages call, which the proxy held whole (to record the turn) before it was bounded.
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type RunningProxy, startProxy } from "@forkd/proxy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RawAnswer, rawRequest } from "../harness/raw-http.js";

/** A listener that answers 200 and remembers the paths it was asked for. */
async function listener(name: string): Promise<{ server: Server; port: number; paths: string[] }> {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? "");
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "text/plain" }).end(name));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port, paths };
}

/** Sends a request with a raw request target (no normalisation by a client URL parser). */
function send(port: number, target: string): Promise<RawAnswer> {
  const headers = { "x-api-key": "sk-ant-api03-victim", "content-type": "application/json" };
  return rawRequest(
    port,
    { method: "POST", path: target, headers },
    '{"model":"x","max_tokens":1,"messages":[]}',
  );
}

let upstream: Awaited<ReturnType<typeof listener>>;
let openai: Awaited<ReturnType<typeof listener>>;
let elsewhere: Awaited<ReturnType<typeof listener>>;
let proxy: RunningProxy;

beforeAll(async () => {
  upstream = await listener("upstream");
  openai = await listener("openai");
  elsewhere = await listener("elsewhere");
  proxy = await startProxy({
    upstream: `http://127.0.0.1:${upstream.port}`,
    // A base URL with a path, as OpenAI-compatible providers give them.
    openaiUpstream: `http://127.0.0.1:${openai.port}/compatible-mode/v1`,
  });
});

afterAll(async () => {
  await proxy?.close();
  upstream?.server.close();
  openai?.server.close();
  elsewhere?.server.close();
});

describe("the proxy reaches its upstream only", () => {
  it.each([
    ["scheme-relative", (port: number) => `//127.0.0.1:${port}/v1/messages`],
    ["absolute form", (port: number) => `http://127.0.0.1:${port}/v1/messages`],
    ["absolute form, control prefix", (port: number) => `http://127.0.0.1:${port}/_forkd/v1/sessions`],
  ])("a %s request target does not reach another host", async (_name, target) => {
    const port = Number(new URL(proxy.url).port);
    const answer = await send(port, target(elsewhere.port));
    expect(elsewhere.paths).toEqual([]);
    expect(answer.body).not.toBe("elsewhere");
  });

  it("an absolute-form target is refused; a scheme-relative one is a path on the upstream", async () => {
    const port = Number(new URL(proxy.url).port);
    expect((await send(port, `http://127.0.0.1:${elsewhere.port}/v1/messages`)).status).toBe(400);
    const relative = `//127.0.0.1:${elsewhere.port}/v1/messages`;
    expect(await send(port, relative)).toEqual({ status: 200, body: "upstream" });
    expect(upstream.paths.at(-1)).toBe(relative);
    expect(elsewhere.paths).toEqual([]);
  });

  it("an ordinary path still goes to the upstream, query included", async () => {
    const port = Number(new URL(proxy.url).port);
    const answer = await send(port, "/v1/messages/count_tokens?beta=true");
    expect(answer).toEqual({ status: 200, body: "upstream" });
    expect(upstream.paths.at(-1)).toBe("/v1/messages/count_tokens?beta=true");
  });

  it("an OpenAI path goes to the OpenAI upstream, under its base path, and to no other host", async () => {
    const port = Number(new URL(proxy.url).port);
    expect(await send(port, "/openai/chat/completions?x=1")).toEqual({ status: 200, body: "openai" });
    expect(openai.paths.at(-1)).toBe("/compatible-mode/v1/chat/completions?x=1");
    const relative = `/openai//127.0.0.1:${elsewhere.port}/responses`;
    expect(await send(port, relative)).toEqual({ status: 200, body: "openai" });
    expect(openai.paths.at(-1)).toBe(`/compatible-mode/v1//127.0.0.1:${elsewhere.port}/responses`);
    // Only `/openai/…` is the OpenAI route: a look-alike prefix stays on the Anthropic upstream.
    expect(await send(port, "/openaix/chat/completions")).toEqual({ status: 200, body: "upstream" });
    expect(elsewhere.paths).toEqual([]);
  });

  it("a request body far larger than any Messages call is forwarded, not held", async () => {
    // A web page can send this with no preflight (a POST of text/plain) to the proxy's fixed port.
    const port = Number(new URL(proxy.url).port);
    const chunk = Buffer.alloc(1024 * 1024, "a");
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 5);
    const answer = await new Promise<number>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, method: "POST", path: "/v1/messages" });
      req.on("response", (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", reject);
      let sent = 0;
      const more = () => {
        while (sent < 300) {
          sent++;
          if (!req.write(chunk)) {
            req.once("drain", more);
            return;
          }
        }
        req.end();
      };
      more();
    });
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    expect(answer).toBe(200);
    // Held before: the body's chunks, then their concatenation and its text (about 970 MB here).
    expect(peak - before).toBeLessThan(250 * 1024 * 1024);
  });
});
