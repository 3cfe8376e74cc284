// `forkd sim`: starts, prints its URL, answers the Anthropic Messages API there, stops on SIGTERM.
import { afterAll, describe, expect, it } from "vitest";
import { type CliProcess, spawnCli } from "./support.js";

const started: CliProcess[] = [];

afterAll(async () => {
  await Promise.all(started.map((cli) => cli.stop("SIGKILL")));
});

describe("forkd sim", () => {
  it("prints its URL, answers on it, and exits 0 on SIGTERM", async () => {
    const sim = spawnCli(["sim", "--port", "0", "--ttft", "5", "--tps", "1000"]);
    started.push(sim);
    const url = await sim.waitForLine((line) => line.startsWith("http://"));
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const health = await fetch(`${url}/v1/sim/health`);
    expect(await health.json()).toEqual({ ok: true });
    const response = await fetch(`${url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "sk-test" },
      body: JSON.stringify({
        model: "claude-sonnet-4-5",
        max_tokens: 64,
        messages: [{ role: "user", content: "Hello.\n@sim say hi there" }],
      }),
    });
    expect(response.status).toBe(200);
    const message = (await response.json()) as { content: { type: string; text: string }[]; usage: object };
    expect(message.content).toEqual([{ type: "text", text: "hi there" }]);
    expect(message.usage).toMatchObject({ output_tokens: 2 });
    expect(await sim.stop("SIGTERM")).toEqual({ code: 0, signal: null });
  });

  it("prints {url, port} with --json", async () => {
    const sim = spawnCli(["sim", "--json"]);
    started.push(sim);
    const line = await sim.waitForLine((text) => text.startsWith("{"));
    const { url, port } = JSON.parse(line) as { url: string; port: number };
    expect(url).toBe(`http://127.0.0.1:${port}`);
    expect(await sim.stop("SIGINT")).toEqual({ code: 0, signal: null });
  });
});
