// What `forkd web` tells the page: NATS WebSocket URLs from flags, the environment or the default,
// the credentials resolved as every command resolves them, and the owner key only when asked.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_NATS_WS_URL, pageConfigOf } from "./commands/web.js";

describe("pageConfigOf", () => {
  it("takes --nats-ws over FORKD_NATS_WS_URL over the default", async () => {
    expect((await pageConfigOf({}, {})).servers).toEqual([DEFAULT_NATS_WS_URL]);
    expect((await pageConfigOf({}, { FORKD_NATS_WS_URL: "wss://a:443, wss://b:443" })).servers).toEqual([
      "wss://a:443",
      "wss://b:443",
    ]);
    const flagged = await pageConfigOf(
      { "nats-ws": ["ws://x:1", "ws://y:2"] },
      { FORKD_NATS_WS_URL: "wss://a:443" },
    );
    expect(flagged.servers).toEqual(["ws://x:1", "ws://y:2"]);
  });

  it("refuses a URL the page cannot open, saying which port it wants", async () => {
    await expect(pageConfigOf({ "nats-ws": ["nats://127.0.0.1:4222"] }, {})).rejects.toMatchObject({
      code: "usage",
      message: expect.stringContaining("not a ws:// or wss:// URL"),
    });
  });

  it("hands over the credentials and prefix, the password from a file, the owner key only with --controls", async () => {
    const dir = await mkdtemp(join(tmpdir(), "forkd-web-config-"));
    try {
      await writeFile(join(dir, "pass"), "from-file\n");
      const config = await pageConfigOf(
        { "nats-user": "observer", "nats-pass-file": join(dir, "pass"), prefix: "team.a" },
        {},
      );
      expect(config).toEqual({
        servers: [DEFAULT_NATS_WS_URL],
        prefix: "team.a",
        user: "observer",
        pass: "from-file",
      });
      const key = "a".repeat(64);
      expect((await pageConfigOf({}, { FORKD_OWNER_KEY: key })).ownerKey).toBeUndefined();
      expect((await pageConfigOf({ controls: true }, { FORKD_OWNER_KEY: key })).ownerKey).toBe(key);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
