// `forkd proxy` and `forkd capture` as processes in front of the simulator: the URL on the first line,
// the state file only its user can read (and gone after SIGTERM), and capture's parent-turn files
// that `forkd fork --from` reads.
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { readProxyState } from "@forkd/proxy";
import { type Sim, startSim } from "@forkd/sim";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isLoopback, parseListen } from "../../packages/cli/src/commands/proxy.js";
import { readParentTurn } from "../../packages/cli/src/parent-turn.js";
import { proxyCliArgs, runCli, spawnCli } from "./support.js";

let sim: Sim;
let dir: string;

beforeAll(async () => {
  sim = await startSim({ port: 0 });
  dir = await mkdtemp(join(tmpdir(), "forkd-proxy-cli-"));
});

afterAll(async () => {
  await sim?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("forkd proxy", () => {
  it("prints its URL, writes its control token to a 0600 state file, and removes it on SIGTERM", async () => {
    const state = join(dir, "state", "proxy.json");
    const proxy = spawnCli([
      "proxy",
      ...["--listen", "127.0.0.1:0", "--upstream", sim.url, "--state", state, "--log-level", "info"],
    ]);
    const url = await proxy.waitForLine((line) => line.startsWith("http://127.0.0.1:"));
    const endpoint = await readProxyState(state);
    expect(endpoint?.url).toBe(url);
    expect(endpoint?.controlToken).toMatch(/^[0-9a-f]{48}$/);
    expect((await stat(state)).mode & 0o777).toBe(0o600);
    // The token is in the file only, never on the terminal.
    expect(proxy.stdout() + proxy.stderr()).not.toContain(endpoint!.controlToken);

    const anthropic = new Anthropic({ apiKey: "sk-secret-key-123", baseURL: url, maxRetries: 0 });
    const reply = await anthropic.messages.create({
      model: "claude-sonnet-5-5",
      max_tokens: 64,
      messages: [{ role: "user", content: "Hi.\n@sim say Hello." }],
    });
    expect(reply.content).toEqual([{ type: "text", text: "Hello." }]);
    expect(sim.requests().at(-1)?.keyId).toMatch(/^key_/);
    // At info, one JSON line (stderr is no terminal) per proxied call: what and how long, no header.
    const proxied = await proxy.waitForLine((line) => line.includes('"msg":"proxied"'), { stream: "stderr" });
    expect(JSON.parse(proxied)).toMatchObject({
      command: "proxy",
      method: "POST",
      path: "/v1/messages",
      status: 200,
    });

    expect((await proxy.stop("SIGTERM")).code).toBe(0);
    expect(await readProxyState(state)).toBeUndefined();
    expect(proxy.stdout() + proxy.stderr()).not.toContain("sk-secret-key-123");
  });

  it("refuses a port in use", async () => {
    const first = spawnCli([
      "proxy",
      "--listen",
      "127.0.0.1:0",
      "--upstream",
      sim.url,
      "--state",
      join(dir, "a.json"),
    ]);
    const port = new URL(await first.waitForLine((line) => line.startsWith("http://"))).port;
    const taken = await runCli(["proxy", "--listen", `127.0.0.1:${port}`, "--state", join(dir, "b.json")]);
    expect(taken.code).toBe(2);
    expect(taken.stderr).toMatch(/EADDRINUSE/);
    await first.stop("SIGTERM");
  });

  // (Only the address check: the tests listen on loopback and nowhere else.)
  it("refuses a log level or format it does not know, naming the flag", async () => {
    for (const [flag, value] of [
      ["--log-level", "loud"],
      ["--log-format", "xml"],
    ] as const) {
      const result = await runCli([
        "proxy",
        "--listen",
        "127.0.0.1:0",
        flag,
        value,
        "--state",
        join(dir, "x.json"),
      ]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`${flag}: expected one of`);
    }
  });

  it("tells loopback listen addresses from others, and parses --listen", () => {
    for (const host of ["127.0.0.1", "127.3.2.1", "::1", "localhost"]) expect(isLoopback(host)).toBe(true);
    for (const host of ["0.0.0.0", "::", "10.0.0.5", "128.0.0.1", "example.com"])
      expect(isLoopback(host)).toBe(false);
    expect(parseListen("127.0.0.1:4080")).toEqual({ host: "127.0.0.1", port: 4080 });
    expect(parseListen(":0")).toEqual({ host: "127.0.0.1", port: 0 });
    expect(parseListen("4080")).toEqual({ host: "127.0.0.1", port: 4080 });
    expect(parseListen("[::1]:9")).toEqual({ host: "::1", port: 9 });
    expect(() => parseListen("host")).toThrow(/HOST:PORT/);
    expect(() => parseListen("h:65536")).toThrow();
  });
});

describe("forkd capture", () => {
  it("writes each turn as a parent-turn file (0600) that forkd fork --from reads", async () => {
    const out = join(dir, "turns");
    const capture = spawnCli(["capture", out, ...proxyCliArgs(sim.url, join(dir, "capture.json"))]);
    const url = await capture.waitForLine((line) => line.startsWith("http://"));
    const anthropic = new Anthropic({ apiKey: "sk-capture", baseURL: url, maxRetries: 0 });
    const stream = anthropic.beta.messages.stream(
      {
        model: "claude-sonnet-5-5",
        max_tokens: 256,
        tools: [{ name: "Read", input_schema: { type: "object" } }],
        messages: [{ role: "user", content: 'Read it.\n@sim tool Read {"file_path":"a.txt"}' }],
      },
      {
        headers: {
          "x-claude-code-session-id": "capture-1",
          "anthropic-beta": "interleaved-thinking-2025-05-14",
        },
      },
    );
    const final = await stream.finalMessage();
    const path = await capture.waitForLine((line) => line.endsWith(".json"));
    expect(path).toBe(join(out, "cc_capture-1", "000001.json"));
    expect((await stat(path)).mode & 0o777).toBe(0o600);

    const file = JSON.parse(await readFile(path, "utf8")) as Record<string, unknown>;
    expect(Object.keys(file)).toEqual(["request", "response", "betas"]);
    expect(file.betas).toEqual(["interleaved-thinking-2025-05-14"]);
    expect((file.response as { content: unknown }).content).toEqual(
      JSON.parse(JSON.stringify(final.content)),
    );
    const turn = await readParentTurn(path);
    expect(turn.toolCalls.map((call) => call.forkCall.tool_use_id)).toEqual([
      (final.content[0] as { id: string }).id,
    ]);
    expect(turn.prefix.betas).toEqual(["interleaved-thinking-2025-05-14"]);
    await capture.stop("SIGTERM");
  });

  it("says on stderr, by default, that it could not write a turn's file, and still answers the agent", async () => {
    // A directory that cannot be made: a file stands where it would be.
    const blocked = join(dir, "a-file");
    await writeFile(blocked, "");
    const capture = spawnCli([
      "capture",
      join(blocked, "turns"),
      ...proxyCliArgs(sim.url, join(dir, "c2.json")),
    ]);
    const url = await capture.waitForLine((line) => line.startsWith("http://"));
    const anthropic = new Anthropic({ apiKey: "sk-capture", baseURL: url, maxRetries: 0 });
    const reply = await anthropic.messages.create(
      {
        model: "claude-sonnet-5-5",
        max_tokens: 64,
        messages: [{ role: "user", content: "Hi.\n@sim say Hello." }],
      },
      { headers: { "x-claude-code-session-id": "capture-2" } },
    );
    expect(reply.content).toEqual([{ type: "text", text: "Hello." }]);
    const line = await capture.waitForLine((text) => text.includes("ENOTDIR"), { stream: "stderr" });
    expect(JSON.parse(line)).toMatchObject({
      level: 50,
      command: "capture",
      session: "cc:capture-2",
      seq: 1,
    });
    // Quiet otherwise: no line per proxied call at the default level.
    expect(capture.stderr()).not.toContain('"msg":"proxied"');
    await capture.stop("SIGTERM");
  });
});
