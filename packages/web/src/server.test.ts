// The page's server over real HTTP on loopback: the built files with their types and a CSP that
// allows no other origin's scripts, /config.json as given, nothing else; bad settings refused.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningWebServer, startWebServer, WebError, type WebPageConfig } from "./index.js";

const page: WebPageConfig = {
  servers: ["ws://127.0.0.1:4443"],
  prefix: "agent",
  user: "observer",
  pass: "secret",
};
let assets: string;
let server: RunningWebServer;

beforeAll(async () => {
  assets = await mkdtemp(join(tmpdir(), "forkd-web-assets-"));
  await writeFile(join(assets, "index.html"), "<!doctype html><title>forkd</title>");
  await writeFile(join(assets, "app.js"), "export {};");
  await writeFile(join(assets, "app.css"), "body{}");
  server = await startWebServer({ page, port: 0, assetsDir: assets });
});

afterAll(async () => {
  await server?.close();
  await rm(assets, { recursive: true, force: true });
});

describe("startWebServer", () => {
  it("listens on loopback and serves the page with its types and a same-origin CSP", async () => {
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/`);
    const index = await fetch(server.url);
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(index.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(await index.text()).toContain("<title>forkd</title>");
    const script = await fetch(new URL("app.js", server.url));
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(await script.text()).toBe("export {};");
  });

  it("tells the page where NATS is and how to connect, uncached, and says a page came", async () => {
    let visited = false;
    void server.visited.then(() => {
      visited = true;
    });
    await fetch(server.url);
    await Promise.resolve();
    expect(visited).toBe(false);
    const response = await fetch(new URL("config.json", server.url));
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(await response.json()).toEqual(page);
    await server.visited;
  });

  it("serves nothing else, and only reads", async () => {
    for (const path of ["../package.json", "app.js.map", "src/server.ts", "%2e%2e/etc/passwd"])
      expect((await fetch(new URL(path, server.url))).status).toBe(404);
    expect((await fetch(server.url, { method: "POST", body: "x" })).status).toBe(405);
  });

  it("refuses a config the page could not use, and a page that was never built", async () => {
    await expect(
      startWebServer({ page: { ...page, servers: ["nats://127.0.0.1:4222"] }, port: 0, assetsDir: assets }),
    ).rejects.toMatchObject({
      code: "invalid_web_config",
      message: expect.stringContaining("not a ws:// or wss:// URL"),
    });
    await expect(
      startWebServer({ page: { ...page, prefix: "a b" }, port: 0, assetsDir: assets }),
    ).rejects.toBeInstanceOf(WebError);
    await expect(startWebServer({ page, port: 0, assetsDir: join(assets, "missing") })).rejects.toMatchObject(
      {
        code: "web_assets_missing",
      },
    );
  });

  it("says which port is taken", async () => {
    await expect(startWebServer({ page, port: server.port, assetsDir: assets })).rejects.toMatchObject({
      code: "web_listen_failed",
      message: expect.stringContaining(`127.0.0.1:${server.port}`),
    });
  });
});
