// A parent agent in Python, through docs/any-agent.md's walkthrough: the bytes the Anthropic Python SDK
// sent for a parent turn (test/fixtures/python-sdk/record.py: a pydantic tool whose defaults are `1.0`,
// `1e-05` and an integer past 2^53, and a tool call whose argument is `2.0`), and those the OpenAI
// Python SDK sent for a Chat Completions and a Responses turn (the same script), go through a real `forkd capture DIR`
// to the strict simulator, and `forkd fork --from` the file it wrote runs three children on daemon
// processes. JavaScript writes those values as `1`, `0.00001`, a rounded integer
// and `2`; the provider renders tools and tool inputs as sent, so a child written that way would leave
// the parent's prompt at its first tool and read nothing from the cache. The children must send the
// parent's bytes and read its prefix. A Gemini parent in Python (google-genai) needs no such texts: the
// Gemini API parses a request into its protocol buffers, so `1.0` and `1` are one value to it. Its
// children, written by JavaScript, must share one explicit cache of the parent's values, and `forkd
// capture` must not warn of a miss that cannot happen.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { memberTextOf } from "@forkd/protocol/internal";
import { type RequestLogEntry, type Sim, startSim } from "@forkd/sim";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { forkFromFileCli, proxyCliArgs, spawnCli } from "../cli/support.js";
import { type DaemonProcess, spawnDaemon } from "../harness/daemons.js";
import { expectGeminiChildrenOnOneCache } from "../harness/gemini-fork-checks.js";
import { useNatsServer } from "../harness/nats.js";
import { expectParentCacheRead } from "../harness/openai-fork-checks.js";

/** The key the daemon processes bill: the provider's cache is per organisation, so the parent's too. */
const API_KEY = "sk-forkd-test";
const PARENT = new URL("../fixtures/python-sdk/parent-request.json", import.meta.url);
const OPENAI_PARENT = new URL("../fixtures/python-sdk/parent-request-openai.json", import.meta.url);
const RESPONSES_PARENT = new URL("../fixtures/python-sdk/parent-request-responses.json", import.meta.url);
const GEMINI_PARENT = new URL("../fixtures/python-sdk/parent-request-gemini.json", import.meta.url);
const GEMINI_MODEL = "gemini-2.5-flash";

const nats = useNatsServer();
let sim: Sim;
let workspace: string;
const daemons: DaemonProcess[] = [];

beforeAll(async () => {
  sim = await startSim({ port: 0 });
  workspace = await mkdtemp(join(tmpdir(), "forkd-python-parent-"));
  for (const n of [1, 2]) {
    daemons.push(
      await spawnDaemon({
        id: `python-parent-${n}`,
        natsUrls: [nats().url],
        simUrl: sim.url,
        workspace,
        // The provider's cache is per organisation: the daemons bill the parent's.
        extraEnv: { OPENAI_API_KEY: API_KEY, GEMINI_API_KEY: API_KEY },
      }),
    );
  }
});

afterAll(async () => {
  await Promise.all(daemons.map((daemon) => daemon.kill("SIGKILL")));
  await sim?.close();
  if (workspace) await rm(workspace, { recursive: true, force: true });
});

/** Posts `body` to the Messages API at `url` as the Python SDK does. */
async function sendAsPython(url: string, body: string, session: string): Promise<void> {
  const response = await fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-api-key": API_KEY,
      "anthropic-version": "2023-06-01",
      "user-agent": "Anthropic/Python 1.13.0",
      "x-claude-code-session-id": session,
    },
    body,
  });
  expect(response.status, await response.text()).toBe(200);
}

/**
 * Posts `body` to an OpenAI API at `url` (capture's `/openai`, or the API's `/v1`) as the OpenAI Python
 * SDK does: Chat Completions unless told Responses.
 */
async function sendAsPythonOpenAi(
  url: string,
  body: string,
  api: "chat" | "responses" = "chat",
): Promise<void> {
  const response = await fetch(`${url}/${api === "chat" ? "chat/completions" : "responses"}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${API_KEY}`,
      "user-agent": "OpenAI/Python 3.22.1",
    },
    body,
  });
  expect(response.status, await response.text()).toBe(200);
}

/** Posts `body` to Gemini's `generateContent` at `url` (capture's `/gemini`, or the API's root) as google-genai does. */
async function sendAsPythonGemini(url: string, body: string): Promise<void> {
  const response = await fetch(`${url}/v1beta/models/${GEMINI_MODEL}:generateContent`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-goog-api-key": API_KEY,
      "user-agent": "google-genai-sdk/2.25.0 gl-python/3.11.7",
      "x-goog-api-client": "google-genai-sdk/2.25.0 gl-python/3.11.7",
    },
    body,
  });
  expect(response.status, await response.text()).toBe(200);
}

/** What a real `forkd capture` wrote for one turn: the file's path, and what the process logged. */
interface Captured {
  file: string;
  log: string;
}

/** Runs a real `forkd capture` in front of the simulator, sends one turn through it, and returns the file it wrote. */
async function captureOne(name: string, send: (url: string) => Promise<void>): Promise<Captured> {
  const dir = join(workspace, name);
  const capture = spawnCli([
    "capture",
    dir,
    ...proxyCliArgs(sim.url, join(workspace, `${name}-state`, "capture.json")),
  ]);
  try {
    const url = await capture.waitForLine((line) => line.startsWith("http://"));
    await send(url);
    const file = await capture.waitForLine((line) => line.endsWith(".json"));
    return { file, log: capture.stderr() };
  } finally {
    await capture.stop("SIGTERM");
  }
}

function lastEntry(): RequestLogEntry {
  const entry = sim.requests().at(-1);
  if (entry === undefined) throw new Error("the simulator logged no request");
  return entry;
}

/**
 * The OpenAI Python SDK's parent turn in `fixture`, through a real `forkd capture` to the simulator's
 * `api`, then `forkd fork --from` its file with three directives: the file must hold the parent's
 * bytes, and each child must send the parent's messages (or input items) and tools as sent, then its
 * own, and read the parent's prefix from the cache. Returns the parent's bytes.
 */
async function forkOpenAiParent(api: "chat" | "responses", fixture: URL): Promise<string> {
  const sent = await readFile(fixture, "utf8");
  expect(sent).toContain('"default":1.0');
  expect(sent).toContain('"default":12345678901234567890');

  const { file } = await captureOne(api, (url) => sendAsPythonOpenAi(`${url}/openai`, sent, api));
  const parent = lastEntry();
  expect(parent.path).toBe(api === "chat" ? "/v1/chat/completions" : "/v1/responses");
  expect(parent.body).toBe(sent);
  expect(memberTextOf(await readFile(file, "utf8"), "request")).toBe(sent);

  const tag = api === "chat" ? "openai-python" : "responses-python";
  const directives = [1, 2, 3].map((i) => `[${tag}-${i}] Audit slice ${i}.\n@sim say child ${i} done`);
  const since = lastEntry().seq;
  const results = await forkFromFileCli(nats().url, file, directives);
  expect(results.map((line) => line.status)).toEqual(["completed", "completed", "completed"]);

  const tools = memberTextOf(sent, "tools")!;
  const itemsField = api === "chat" ? "messages" : "input";
  const items = memberTextOf(sent, itemsField)!;
  for (const i of [1, 2, 3]) {
    const child = sim.requests().find((entry) => entry.seq > since && entry.body.includes(`[${tag}-${i}]`));
    expect(child?.status, child?.errorMessage ?? "").toBe(200);
    // The parent's messages (or input items) as sent, its reply after them, then the child's own.
    expect(child!.body.startsWith(`{"${itemsField}":${items.slice(0, -1)},`), `child ${i}`).toBe(true);
    expect(child!.body).toContain(`"tools":${tools}`);
    expectParentCacheRead(parent, child!);
  }
  return sent;
}

describe("a parent in Python, forked from the file `forkd capture` wrote", () => {
  it("its children send its bytes back, `1.0` and all, and read its prefix from the cache", {
    timeout: 120_000,
  }, async () => {
    const sent = await readFile(PARENT, "utf8");
    expect(sent).toContain('"default":1.0');
    expect(sent).toContain('"default":12345678901234567890');
    expect(sent).toContain('"min_score":2.0}');

    const { file } = await captureOne("anthropic", (url) => sendAsPython(url, sent, "python-parent"));
    const parent = lastEntry();
    // The provider got the agent's bytes, and the file holds them, byte for byte.
    expect(parent.body).toBe(sent);
    expect(parent.usage?.cache_creation_input_tokens).toBeGreaterThan(4000);
    expect(memberTextOf(await readFile(file, "utf8"), "request")).toBe(sent);

    const directives = [1, 2, 3].map((i) => `[python-${i}] Audit slice ${i}.\n@sim say child ${i} done`);
    const since = lastEntry().seq;
    const results = await forkFromFileCli(nats().url, file, directives);
    expect(results.map((line) => line.status)).toEqual(["completed", "completed", "completed"]);

    const tools = memberTextOf(sent, "tools")!;
    const messages = memberTextOf(sent, "messages")!;
    // The parent's messages up to its last, which the child's directive joins.
    const inherited = messages.slice(0, messages.lastIndexOf(',{"role":"user"') + 1);
    for (const i of [1, 2, 3]) {
      const child = sim.requests().find((entry) => entry.seq > since && entry.body.includes(`[python-${i}]`));
      expect(child?.status, child?.errorMessage ?? "").toBe(200);
      expect(child!.body.startsWith(`{"max_tokens":4096,"messages":${inherited}`), `child ${i}`).toBe(true);
      expect(child!.body).toContain(`"tools":${tools}`);
      // Everything the parent's turn wrote to the cache, up to its breakpoint on its last block (and
      // after the first child, what that child wrote after it).
      expect(child!.usage?.cache_read_input_tokens).toBeGreaterThanOrEqual(
        parent.usage!.cache_creation_input_tokens!,
      );
    }

    // What a child written by JavaScript would have been: the parent's request read and written back.
    // It leaves the parent's prompt at the first tool, and the strict simulator reads nothing of it.
    const javaScriptWritten = JSON.stringify(JSON.parse(sent));
    expect(javaScriptWritten).not.toBe(sent);
    await sendAsPython(sim.url, javaScriptWritten, "javascript-written");
    const missed = lastEntry();
    expect(missed.usage?.cache_read_input_tokens).toBe(0);
  });

  it("on the OpenAI API too: its children send its tools and messages back as sent, and read its prefix", {
    timeout: 120_000,
  }, async () => {
    const sent = await forkOpenAiParent("chat", OPENAI_PARENT);

    // Written by JavaScript, the same request leaves the parent's prompt at its tools: nothing is read.
    const javaScriptWritten = JSON.stringify(JSON.parse(sent));
    await sendAsPythonOpenAi(`${sim.url}/v1`, javaScriptWritten);
    expect(lastEntry().usage?.cache_read_input_tokens ?? 0).toBe(0);
  });

  it("on the Responses API too: its children send its tools and input items back as sent, and read its prefix", {
    timeout: 120_000,
  }, async () => {
    const sent = await forkOpenAiParent("responses", RESPONSES_PARENT);
    expect(sent).toContain('\\"min_score\\": 2.0}');

    // Written by JavaScript, the same request leaves the parent's prompt at its tools, which follow
    // its instructions: it reads what a request of those instructions alone reads, and no more.
    const { instructions } = JSON.parse(sent) as { instructions: string };
    await sendAsPythonOpenAi(
      `${sim.url}/v1`,
      JSON.stringify({ model: "gpt-5", instructions, input: "x" }),
      "responses",
    );
    const instructionsRead = lastEntry().usage?.cache_read_input_tokens ?? 0;
    expect(instructionsRead).toBeGreaterThan(0);
    await sendAsPythonOpenAi(`${sim.url}/v1`, JSON.stringify(JSON.parse(sent)), "responses");
    expect(lastEntry().usage?.cache_read_input_tokens ?? 0).toBe(instructionsRead);
  });

  it("on Gemini its children share one cache of its values, which the API reads as it does its bytes", {
    timeout: 120_000,
  }, async () => {
    const sent = await readFile(GEMINI_PARENT, "utf8");
    expect(sent).toContain('"default": 1.0');
    expect(sent).toContain('"default": 12345678901234567890');
    expect(sent).toContain('"min_score": 2.0}');

    const { file, log } = await captureOne("gemini", (url) => sendAsPythonGemini(`${url}/gemini`, sent));
    const parent = lastEntry();
    expect(parent.path).toBe(`/v1beta/models/${GEMINI_MODEL}:generateContent`);
    expect(parent.body).toBe(sent);
    const captured = await readFile(file, "utf8");
    expect(memberTextOf(captured, "request")).toBe(sent);
    // Nothing to warn of: the API parses the request, and a child's `1` is the parent's `1.0`.
    expect(log).not.toContain("writes differently");

    const directives = [1, 2, 3].map(
      (i) => `[gemini-python-${i}] Audit slice ${i}.\n@sim say child ${i} done`,
    );
    const since = lastEntry().seq;
    const results = await forkFromFileCli(nats().url, file, directives);
    expect(results.map((line) => line.status)).toEqual(["completed", "completed", "completed"]);
    await expectGeminiChildrenOnOneCache({
      sim,
      apiKey: API_KEY,
      model: GEMINI_MODEL,
      parentRaw: sent,
      byValue: true,
      reply: (JSON.parse(captured) as { response: Record<string, unknown> }).response,
      since,
      tag: "gemini-python",
      count: 3,
    });

    // The Gemini API reads values, as the simulator does: the same request written by JavaScript
    // reads the parent's prompt from its implicit cache up to its last content, unlike the Messages
    // API's reading above.
    const javaScriptWritten = JSON.stringify(JSON.parse(sent));
    expect(javaScriptWritten).not.toBe(sent);
    await sendAsPythonGemini(sim.url, javaScriptWritten);
    expect(lastEntry().usage?.cache_read_input_tokens).toBeGreaterThan(4000);
  });
});
