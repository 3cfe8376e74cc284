// The simulator as a process: `node packages/sim/dist/main.js` (built by `pnpm --filter @forkd/sim build`).
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import Anthropic from "@anthropic-ai/sdk";
import { afterEach, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../dist/main.js", import.meta.url));
const children: ChildProcessWithoutNullStreams[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      await exited;
    }
  }
});

async function start(args: string[]): Promise<{ child: ChildProcessWithoutNullStreams; firstLine: string }> {
  expect(existsSync(MAIN), `${MAIN} is missing: run pnpm --filter @forkd/sim build`).toBe(true);
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ["pipe", "pipe", "pipe"] });
  children.push(child);
  const lines = createInterface({ input: child.stdout });
  const [firstLine] = (await once(lines, "line")) as [string];
  lines.close();
  return { child, firstLine };
}

describe("forkd-sim process", () => {
  it("prints its URL first and serves the SDK", async () => {
    const { firstLine } = await start(["--port", "0"]);
    expect(firstLine).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const client = new Anthropic({ apiKey: "k", baseURL: firstLine, maxRetries: 0 });
    const m = await client.messages.create({
      model: "claude-sonnet-4-6",
      max_tokens: 100,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(m.content[0]).toMatchObject({ type: "text", text: expect.stringMatching(/^Scope: hi/) });
  });

  it("prints JSON with --json, applies flags, and exits cleanly on SIGTERM", async () => {
    const { child, firstLine } = await start(["--json", "--ttft", "50", "--api-key", "only-this"]);
    const { url, port } = JSON.parse(firstLine) as { url: string; port: number };
    expect(url).toBe(`http://127.0.0.1:${port}`);
    const refused = await fetch(`${url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: { "x-api-key": "other" },
      body: "{}",
    });
    expect(refused.status).toBe(401);
    const health = await fetch(`${url}/v1/sim/health`);
    expect(await health.json()).toEqual({ ok: true });
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    expect((await exited)[0]).toBe(0);
  });

  it("rejects bad flags with exit code 2", async () => {
    const child = spawn(process.execPath, [MAIN, "--port", "banana"], { stdio: ["pipe", "pipe", "pipe"] });
    children.push(child);
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const [code] = (await once(child, "exit")) as [number];
    expect(code).toBe(2);
    expect(stderr).toContain("--port");
  });
});
