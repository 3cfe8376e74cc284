// The walkthrough of docs/any-agent.md ("Try forkd on a session of your own: `forkd capture`") with
// real agents from npm on the other APIs: qwen-code (Chat Completions), the Codex CLI (Responses)
// and the Gemini CLI run one scripted turn each through a real `forkd capture DIR` process whose
// upstream is the strict simulator (behind a relay that keeps what the simulator sent back). DIR is
// read as a user reads it: every file must hold the request the simulator got, byte for byte, and
// the reply its stream carried; the turn whose reply calls the agent's tool is found by its
// response, and `forkd fork --from` that very file onto two daemon processes must give faithful
// children, as the tests that read the parent's turn from the simulator's log require of them.
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RequestLogEntry, type Sim, startSim } from "@forkd/sim";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { forkFromFileCli, proxyCliArgs, spawnCli } from "../cli/support.js";
import { readNotesPrompt } from "../harness/client-sandbox.js";
import { type DaemonProcess, spawnDaemon } from "../harness/daemons.js";
import { GEMINI_CLIENT_API_KEY, GEMINI_CLIENT_MODEL, runGeminiCli } from "../harness/gemini-cli.js";
import { expectGeminiChildrenOnOneCache } from "../harness/gemini-fork-checks.js";
import { useNatsServer } from "../harness/nats.js";
import { OPENAI_CLIENT_API_KEY, runCodex, runQwenCode } from "../harness/openai-clients.js";
import {
  expectChatChildTail,
  expectParentBytes,
  expectParentCacheRead,
  expectResponsesChildTail,
} from "../harness/openai-fork-checks.js";
import { type RecordingRelay, startRecordingRelay } from "../harness/recording-relay.js";

type Body = Record<string, unknown>;
type CapturedApi = "openai-chat" | "openai-responses" | "gemini";

const nats = useNatsServer();
let sim: Sim;
let relay: RecordingRelay;
let workspace: string;
const daemons: DaemonProcess[] = [];

beforeAll(async () => {
  sim = await startSim({ port: 0 });
  relay = await startRecordingRelay(sim.url);
  workspace = await mkdtemp(join(tmpdir(), "forkd-agent-capture-"));
  for (const n of [1, 2]) {
    daemons.push(
      await spawnDaemon({
        id: `agent-capture-${n}`,
        natsUrls: [nats().url],
        simUrl: sim.url,
        workspace,
        bash: "read-only",
        // The provider's cache is per organisation: the daemons bill the agent's account.
        extraEnv: { OPENAI_API_KEY: OPENAI_CLIENT_API_KEY, GEMINI_API_KEY: GEMINI_CLIENT_API_KEY },
      }),
    );
  }
});

afterAll(async () => {
  await Promise.all(daemons.map((daemon) => daemon.kill("SIGKILL")));
  await relay?.close();
  await sim?.close();
  if (workspace) await rm(workspace, { recursive: true, force: true });
});

/** A real agent as the walkthrough runs it. */
interface Agent {
  name: string;
  api: CapturedApi;
  /** The tool its scripted turn calls, and the arguments of the call. */
  tool: string;
  toolArgs: Record<string, string>;
  /** Where its model calls reach the simulator. */
  simPath: string;
  /** The path capture records for them (its route, then the agent's own path and query). */
  capturedPath: string;
  /** The folder capture gives its session. */
  sessionFolder: RegExp;
  /** Runs the agent on `prompt` with capture's URL as its base URL; returns what it printed. */
  run(captureUrl: string, prompt: string): Promise<string>;
}

const QWEN_CODE: Agent = {
  name: "qwen-code",
  api: "openai-chat",
  tool: "read_file",
  toolArgs: { file_path: "notes.txt" },
  simPath: "/v1/chat/completions",
  capturedPath: "/openai/chat/completions",
  // No session id, no prompt_cache_key: keyed by the credential, system prompt and first message.
  sessionFolder: /^anon_[0-9a-f]{32}$/,
  run: (url, prompt) => runQwenCode({ baseUrl: sim.url, openaiBaseUrl: `${url}/openai`, prompt }),
};

const CODEX: Agent = {
  name: "codex",
  api: "openai-responses",
  tool: "exec_command",
  toolArgs: { cmd: "cat notes.txt" },
  simPath: "/v1/responses",
  capturedPath: "/openai/responses",
  // Its `session-id` header.
  sessionFolder: /^codex_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  run: (url, prompt) => runCodex({ baseUrl: sim.url, openaiBaseUrl: `${url}/openai`, prompt }),
};

const GEMINI_CLI: Agent = {
  name: "gemini-cli",
  api: "gemini",
  tool: "read_file",
  toolArgs: { file_path: "notes.txt" },
  simPath: `/v1beta/models/${GEMINI_CLIENT_MODEL}:streamGenerateContent`,
  capturedPath: `/gemini/v1beta/models/${GEMINI_CLIENT_MODEL}:streamGenerateContent?alt=sse`,
  // No session id: keyed by the credential, systemInstruction and first content.
  sessionFolder: /^anon_[0-9a-f]{32}$/,
  run: (url, prompt) => runGeminiCli({ baseUrl: sim.url, geminiBaseUrl: `${url}/gemini`, prompt }),
};

/** A file `forkd capture` wrote for a turn of another API than Anthropic's. */
interface CapturedFile {
  api: CapturedApi;
  path: string;
  request: Body;
  response: Body | Body[];
}

/** A file capture wrote, and the call the simulator logged for it. */
interface CapturedCall {
  path: string;
  file: CapturedFile;
  entry: RequestLogEntry;
}

/** The `data:` payloads of an event stream. */
function sseData(stream: string): string[] {
  return stream
    .split(/\r?\n/)
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice("data:".length).trim());
}

/**
 * The reply a stream of the simulator carried, as the API takes it back, read here on its own terms:
 * Chat Completions' deltas joined (no text is `null`, as the API's non-streamed message has it);
 * Responses' `response.completed` output; Gemini's chunks' parts in order, adjacent text joined.
 */
function replyOfStream(api: CapturedApi, stream: string): Body | Body[] {
  const events = sseData(stream)
    .filter((data) => data !== "[DONE]")
    .map((data) => JSON.parse(data) as Body);
  if (api === "openai-responses") {
    const completed = events.find((event) => event.type === "response.completed");
    if (completed === undefined) throw new Error("the stream has no response.completed event");
    return (completed.response as { output: Body[] }).output;
  }
  if (api === "openai-chat") {
    type Delta = { content?: string; tool_calls?: { index: number; id?: string; function: Body }[] };
    const deltas = events.flatMap((event) => (event.choices as { delta: Delta }[]).map((c) => c.delta));
    const content = deltas.map((delta) => delta.content ?? "").join("");
    const calls: { id: string; type: string; function: { name: string; arguments: string } }[] = [];
    for (const part of deltas.flatMap((delta) => delta.tool_calls ?? [])) {
      calls[part.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } };
      const call = calls[part.index]!;
      if (part.id !== undefined) call.id = part.id;
      if (typeof part.function.name === "string") call.function.name = part.function.name;
      call.function.arguments += String(part.function.arguments ?? "");
    }
    const reply: Body = { role: "assistant", content: content === "" ? null : content };
    return calls.length === 0 ? reply : { ...reply, tool_calls: calls };
  }
  // A part that is only text joins the text before it; any other part (a call, a thought, a
  // signature) stays its own.
  const plainText = (part: Body | undefined) => part !== undefined && Object.keys(part).join() === "text";
  const parts: Body[] = [];
  for (const event of events) {
    for (const part of (event.candidates as { content: { parts: Body[] } }[])[0]!.content.parts) {
      const last = parts.at(-1);
      if (plainText(last) && plainText(part)) parts[parts.length - 1] = { text: `${last!.text}${part.text}` };
      else parts.push(part);
    }
  }
  return { parts, role: "model" };
}

/**
 * Where a file's text first differs from what was sent, with the text around it (a prompt is tens
 * of kilobytes: a plain comparison prints both whole); undefined when they are the same bytes.
 */
function firstDifference(written: string, sent: string): string | undefined {
  if (written === sent) return undefined;
  let at = 0;
  while (at < written.length && written[at] === sent[at]) at++;
  const around = (text: string) => text.slice(Math.max(0, at - 60), at + 60);
  return `at character ${at}: the file has «${around(written)}», the simulator got «${around(sent)}»`;
}

/** The names of the tools a captured reply calls, in order. */
function callsOf(api: CapturedApi, response: Body | Body[]): string[] {
  if (api === "openai-chat")
    return (((response as Body).tool_calls as { function: { name: string } }[] | undefined) ?? []).map(
      (call) => call.function.name,
    );
  if (api === "openai-responses")
    return (response as Body[]).flatMap((item) => (item.type === "function_call" ? [String(item.name)] : []));
  return ((response as Body).parts as Body[]).flatMap((part) =>
    part.functionCall === undefined ? [] : [String((part.functionCall as Body).name)],
  );
}

/**
 * Runs `agent` through a real `forkd capture DIR` and reads DIR as a user would, holding each file
 * to the simulator's log and to what its stream carried: one folder, the agent's session; in it one
 * file (mode 0600) per model call the simulator accepted, numbered in order, no side request; each
 * file `{ api, path, request, response }`, its request the bytes the agent sent, its response the
 * reply the simulator's stream carried. Returns the calls in order.
 */
async function captureAgent(agent: Agent): Promise<CapturedCall[]> {
  sim.reset();
  const dir = join(workspace, agent.name);
  const state = join(workspace, `${agent.name}-state`, "capture.json");
  const capture = spawnCli(["capture", dir, ...proxyCliArgs(relay.url, state)]);
  try {
    // The URL is its first line of stdout; each line after it is the path of a file it wrote.
    const url = await capture.waitForLine((line) => line.startsWith("http://"));
    expect(await agent.run(url, readNotesPrompt(agent.tool, agent.toolArgs))).toContain("Done.");
    // Nothing but the agent's model calls reached the API: no side request (a title, a check…).
    const logged = sim.requests();
    expect(logged.map((entry) => `${entry.method} ${entry.path} ${entry.status}`)).toEqual(
      logged.map(() => `POST ${agent.simPath} 200`),
    );
    // Capture writes a turn's file once the reply's last byte reached it: maybe after the agent exited.
    await capture.waitForLine(() => capture.lines().length - 1 >= logged.length);
    const printed = capture.lines().slice(1);

    const folders = await readdir(dir);
    expect(folders).toEqual([expect.stringMatching(agent.sessionFolder)]);
    const folder = join(dir, folders[0]!);
    const names = (await readdir(folder)).sort();
    expect(names).toEqual(logged.map((_, i) => `${String(i + 1).padStart(6, "0")}.json`));
    expect([...printed].sort()).toEqual(names.map((name) => join(folder, name)));
    // Nothing to warn of (capture logs on stderr, at warn by default): every call read back and recorded.
    expect(capture.stderr()).not.toMatch(/"level":(40|50|60)/);

    return await Promise.all(
      names.map(async (name, i): Promise<CapturedCall> => {
        const path = join(folder, name);
        expect((await stat(path)).mode & 0o777, path).toBe(0o600);
        const file = JSON.parse(await readFile(path, "utf8")) as CapturedFile;
        expect(Object.keys(file)).toEqual(["api", "path", "request", "response"]);
        expect(file.api).toBe(agent.api);
        expect(file.path).toBe(agent.capturedPath);
        // The heart of it: the request the file holds is the one that reached the API, byte for byte.
        const entry = logged[i]!;
        expect(firstDifference(JSON.stringify(file.request), entry.body), path).toBeUndefined();
        const sent = relay.answers().filter((answer) => answer.requestId === entry.id);
        expect(sent).toHaveLength(1);
        expect(file.response).toEqual(replyOfStream(agent.api, sent[0]!.body));
        return { path, file, entry };
      }),
    );
  } finally {
    await capture.stop("SIGTERM");
  }
}

/**
 * The turn to fork, found as a user finds it: the one file whose response calls the agent's tool.
 * Asserts the session's replies are the script's: the call, then "Done.".
 */
function toolTurn(agent: Agent, calls: readonly CapturedCall[]): CapturedCall {
  expect(calls.map((call) => callsOf(agent.api, call.file.response))).toEqual([[agent.tool], []]);
  expect(JSON.stringify(calls[1]!.file.response)).toContain("Done.");
  return calls[0]!;
}

/** The directive of child `i` of a fan-out tagged `tag`. */
const directiveOf = (tag: string, i: number) => `[${tag}-${i}] Audit slice ${i}.\n@sim say child ${i} done`;
const CHILDREN = [1, 2, 3];

/**
 * Runs `forkd fork --from file`, one child per directive, onto the daemons and waits for their
 * results; returns the `seq` of the simulator's last log entry before it started.
 */
async function forkFromFile(file: string, tag: string): Promise<number> {
  const before = sim.requests().at(-1)?.seq ?? 0;
  const directives = CHILDREN.map((i) => directiveOf(tag, i));
  const results = await forkFromFileCli(nats().url, file, directives);
  expect(results.map((line) => line.status)).toEqual(directives.map(() => "completed"));
  return before;
}

/** Each child's request to `path` after `since`, in child order. */
function childRequests(path: string, since: number, tag: string): RequestLogEntry[] {
  return CHILDREN.map((i) => {
    const entry = sim
      .requests()
      .find((e) => e.seq > since && e.path === path && e.body.includes(`[${tag}-${i}]`));
    if (entry === undefined) throw new Error(`no ${path} request of child ${tag}-${i}`);
    expect(entry.status, entry.errorMessage ?? "").toBe(200);
    return entry;
  });
}

describe("docs/any-agent.md's `forkd capture` walkthrough, with real agents of the other APIs", () => {
  it("qwen-code (Chat Completions): the read_file turn's file forks on the parent's bytes", {
    timeout: 240_000,
  }, async () => {
    const turn = toolTurn(QWEN_CODE, await captureAgent(QWEN_CODE));
    const since = await forkFromFile(turn.path, "qwen");
    const inherited = (turn.file.request.messages as Body[]).length;
    for (const [index, child] of childRequests(QWEN_CODE.simPath, since, "qwen").entries()) {
      expectParentBytes(turn.entry.body, child.body, "messages");
      expectChatChildTail(child.body, inherited, turn.file.response as Body, `[qwen-${index + 1}]`);
      expectParentCacheRead(turn.entry, child);
    }
  });

  it("the Codex CLI (Responses): the exec_command turn's file forks on the parent's bytes, under its prompt_cache_key", {
    timeout: 240_000,
  }, async () => {
    const turn = toolTurn(CODEX, await captureAgent(CODEX));
    const since = await forkFromFile(turn.path, "codex");
    const inherited = (turn.file.request.input as Body[]).length;
    for (const [index, child] of childRequests(CODEX.simPath, since, "codex").entries()) {
      expectParentBytes(turn.entry.body, child.body, "input");
      expect((JSON.parse(child.body) as Body).prompt_cache_key).toBe(turn.file.request.prompt_cache_key);
      expectResponsesChildTail(child.body, inherited, turn.file.response as Body[], `[codex-${index + 1}]`);
      expectParentCacheRead(turn.entry, child);
    }
  });

  it("the Gemini CLI: the read_file turn's file forks onto one explicit cache of the parent's bytes", {
    timeout: 240_000,
  }, async () => {
    const turn = toolTurn(GEMINI_CLI, await captureAgent(GEMINI_CLI));
    const since = await forkFromFile(turn.path, "gemini");
    await expectGeminiChildrenOnOneCache({
      sim,
      apiKey: GEMINI_CLIENT_API_KEY,
      model: GEMINI_CLIENT_MODEL,
      parentRaw: turn.entry.body,
      reply: turn.file.response as Body,
      since,
      tag: "gemini",
      count: CHILDREN.length,
    });
  });
});
