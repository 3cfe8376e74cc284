// DNS rebinding against `forkd web`. The page server listens on loopback and hands out the NATS
// credentials and the owner key in /config.json; the browser's same-origin policy is all that keeps
// another site from reading them. A site the user visits, whose name it then re-points at 127.0.0.1
// (`evil.example` → 127.0.0.1), is same-origin with itself: its script fetches
// `http://evil.example:4280/config.json` and the request lands on the page server with
// `Host: evil.example:4280`. The server must answer only to names that cannot be re-pointed.
import { type RunningWebServer, startWebServer } from "@forkd/web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RawAnswer, rawRequest } from "../harness/raw-http.js";

const PASSWORD = "web-rebinding-Pa55word";
const OWNER_KEY = "owner-key-of-the-web-user-0123456789";
let server: RunningWebServer;
let named: RunningWebServer;

beforeAll(async () => {
  const page = {
    servers: ["ws://127.0.0.1:1"],
    prefix: "agent",
    user: "parent",
    pass: PASSWORD,
    ownerKey: OWNER_KEY,
  };
  server = await startWebServer({ page, port: 0 });
  named = await startWebServer({ page, port: 0, allowedHosts: ["forkd.example.com"] });
});

afterAll(async () => {
  await server?.close();
  await named?.close();
});

/** GETs a path of a page server with the Host header a browser would send for `host` (none for ""). */
function get(port: number, path: string, host: string): Promise<RawAnswer> {
  return rawRequest(port, host === "" ? { path, setHost: false } : { path, headers: { host } });
}

describe("the page server answers only to names that cannot be re-pointed", () => {
  it.each([
    "evil.example",
    "EVIL.example",
    "127.0.0.1.evil.example",
    "localhost.evil.example",
    "forkd.example.com",
  ])("Host %s gets neither the config nor the page", async (name) => {
    for (const path of ["/config.json", "/", "/app.js"]) {
      const answer = await get(server.port, path, `${name}:${server.port}`);
      expect(answer.status).toBe(421);
      expect(answer.body).not.toContain(PASSWORD);
      expect(answer.body).not.toContain(OWNER_KEY);
    }
  });

  it("a request with no Host at all is refused", async () => {
    const answer = await get(server.port, "/config.json", "");
    // Node's own HTTP/1.1 parser answers 400 before the handler sees it; either way, no config.
    expect([400, 421]).toContain(answer.status);
    expect(answer.body).not.toContain(PASSWORD);
  });

  it.each(["127.0.0.1", "localhost", "LocalHost", "[::1]", "app.localhost", "10.1.2.3"])(
    "Host %s (an address, or a name that always means this machine) gets the config",
    async (name) => {
      const answer = await get(server.port, "/config.json", `${name}:${server.port}`);
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toMatchObject({ pass: PASSWORD, ownerKey: OWNER_KEY });
    },
  );

  it("a name the operator allowed (a proxy in front that keeps the Host) is answered", async () => {
    expect((await get(named.port, "/config.json", "forkd.example.com")).status).toBe(200);
    expect((await get(named.port, "/config.json", `FORKD.example.com:${named.port}`)).status).toBe(200);
    expect((await get(named.port, "/config.json", "evil.example")).status).toBe(421);
  });
});
