// `forkd web` as a process: the page's URL first on stdout, the files and /config.json served on
// loopback, Ctrl-C stops it with exit 0; a public interface with credentials and a NATS URL that is
// no WebSocket are usage errors.
import { describe, expect, it } from "vitest";
import { cleanEnv, runCli, spawnCli } from "./support.js";

describe("forkd web", () => {
  it("serves the page and what it connects with until Ctrl-C", async () => {
    const web = spawnCli(
      [
        "web",
        "--port",
        "0",
        "--json",
        "--nats-ws",
        "ws://127.0.0.1:4443",
        "--nats-user",
        "observer",
        "--prefix",
        "team",
      ],
      { env: cleanEnv({ NATS_PASSWORD: "from-env" }) },
    );
    try {
      const line = await web.waitForLine((text) => text.startsWith("{"));
      const { url, nats_ws } = JSON.parse(line) as { url: string; nats_ws: string[] };
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      expect(nats_ws).toEqual(["ws://127.0.0.1:4443"]);
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<script type="module" src="app.js">');
      expect((await fetch(new URL("app.js", url))).status).toBe(200);
      expect(await (await fetch(new URL("config.json", url))).json()).toEqual({
        servers: ["ws://127.0.0.1:4443"],
        prefix: "team",
        user: "observer",
        pass: "from-env",
      });
      expect(await web.stop("SIGINT")).toEqual({ code: 0, signal: null });
    } finally {
      await web.stop("SIGKILL");
    }
  });

  it("refuses to hand credentials to a public interface, and a URL the page cannot open", async () => {
    const open = await runCli(["web", "--host", "0.0.0.0", "--nats-user", "observer", "--nats-pass", "p"], {
      env: cleanEnv(),
    });
    expect(open.code).toBe(2);
    expect(open.stderr).toMatch(/forkd web: --host 0\.0\.0\.0 would hand the NATS credentials/);
    const wrong = await runCli(["web", "--nats-ws", "nats://127.0.0.1:4222"], { env: cleanEnv() });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(
      /not a ws:\/\/ or wss:\/\/ URL \(the page connects to NATS's websocket port/,
    );
  });
});
