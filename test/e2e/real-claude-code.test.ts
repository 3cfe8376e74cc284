// The real Claude Code CLI (from npm) as the parent: its turn, captured from the strict simulator's
// log, forked with `forkd fork --from` onto three daemon processes. Every child must be accepted by
// the simulator (which refuses what the API refuses), carry the parent's request byte for byte up
// to its last message, send the reply as { role, content }, send the parent's betas, and read
// almost all of its input from the cache the parent wrote. Then the walkthrough of
// docs/any-agent.md: the client behind a real `forkd capture`, forked from the file capture wrote.
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { type RequestLogEntry, type Sim, startSim } from "@forkd/sim";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, forkFromFileCli, proxyCliArgs, spawnCli } from "../cli/support.js";
import { type DaemonProcess, spawnDaemon } from "../harness/daemons.js";
import {
  type Body,
  expectFaithfulChildren,
  type ParentTurnOnLog,
  type Reply,
  replyTo,
} from "../harness/faithful-fork.js";
import { useNatsServer } from "../harness/nats.js";
import { CLAUDE_CODE_API_KEY, runAgentSdk, runClaudeCode } from "../harness/real-clients.js";

const nats = useNatsServer();
let sim: Sim;
let workspace: string;
const daemons: DaemonProcess[] = [];

beforeAll(async () => {
  sim = await startSim({ port: 0 });
  workspace = await mkdtemp(join(tmpdir(), "forkd-real-cc-"));
  for (const n of [1, 2, 3]) {
    daemons.push(
      await spawnDaemon({
        id: `real-cc-${n}`,
        natsUrls: [nats().url],
        simUrl: sim.url,
        workspace,
        bash: "read-only",
        // The provider's cache is per organisation: the daemons bill the parent's account.
        extraEnv: { ANTHROPIC_API_KEY: CLAUDE_CODE_API_KEY },
      }),
    );
  }
});

afterAll(async () => {
  await Promise.all(daemons.map((daemon) => daemon.kill("SIGKILL")));
  await sim?.close();
  if (workspace) await rm(workspace, { recursive: true, force: true });
});

/** The script of the parent's turn: read a file, then call the Agent tool, then end. */
const AGENT_TURN_PROMPT = [
  "Read the notes, then fork an audit of the codec.",
  '@sim tool Read {"file_path":"notes.txt"}',
  "@sim turn",
  "@sim say Forking the audit.",
  '@sim tool Agent {"description":"audit codec","prompt":"Audit the codec for unchecked lengths.","subagent_type":"general-purpose"}',
  "@sim turn",
  "@sim say Done.",
].join("\n");

type Client = "claude-code" | "agent-sdk";

/**
 * Runs `client` on {@link AGENT_TURN_PROMPT} with `baseUrl` as its Anthropic base URL; returns its
 * session id (what names its folder under `forkd capture`'s DIR).
 */
async function runScriptedClient(
  client: Client,
  baseUrl: string,
  model?: string,
  env?: Record<string, string>,
): Promise<string> {
  const options = { baseUrl, prompt: AGENT_TURN_PROMPT, env };
  if (client === "agent-sdk") {
    const result = await runAgentSdk(options);
    expect(result.result).toBe("Done.");
    return result.sessionId;
  }
  const result = await runClaudeCode({ ...options, model });
  expect(result.is_error).toBe(false);
  return result.session_id;
}

/** The model calls the simulator accepted since its last reset. */
function acceptedModelCalls(): RequestLogEntry[] {
  return sim.requests().filter((entry) => entry.path === "/v1/messages" && entry.status === 200);
}

/** Whether a reply calls the Agent tool. */
function callsAgent(reply: { content: readonly Record<string, unknown>[] }): boolean {
  return reply.content.some((block) => block.type === "tool_use" && block.name === "Agent");
}

/**
 * Runs a real client (the Claude Code CLI, or the Agent SDK's `query()`) with a script whose second
 * turn calls the Agent tool; returns that turn as the simulator logged it.
 */
async function captureAgentTurn(
  model?: string,
  env?: Record<string, string>,
  client: Client = "claude-code",
) {
  sim.reset();
  await runScriptedClient(client, sim.url, model, env);
  const accepted = acceptedModelCalls();
  for (const entry of accepted) {
    const reply = await replyTo(sim, entry, CLAUDE_CODE_API_KEY);
    if (callsAgent(reply)) return { entry, request: JSON.parse(entry.body) as Body, reply };
  }
  throw new Error(`no request of ${client} was answered with an Agent call: ${accepted.length} requests`);
}

/** One child per directive unless told otherwise. */
const DIRECTIVES = ["Audit the codec.", "List the tests.", "Check the notes."];

/** Writes a turn read from the simulator's log as a parent-turn file and forks from it. */
async function forkFrom(
  turn: Awaited<ReturnType<typeof captureAgentTurn>>,
  name: string,
  directives: readonly string[] = DIRECTIVES,
) {
  const file = join(workspace, `${name}.json`);
  await writeFile(
    file,
    JSON.stringify({ request: turn.request, response: turn.reply, betas: turn.entry.betas }),
  );
  return forkFromFile(file, directives);
}

/**
 * Runs `forkd fork --from file` onto the daemons, one child per directive (one per tool call of the
 * turn's reply without any); returns the model calls the simulator logged after it started.
 */
async function forkFromFile(file: string, directives: readonly string[] = DIRECTIVES) {
  const before = sim.requests().at(-1)?.seq ?? 0;
  const results = await forkFromFileCli(nats().url, file, directives);
  // Without --directive, one child per tool call of the reply, its directive the call's prompt.
  expect(results.map((line) => line.status)).toEqual(
    (directives.length > 0 ? directives : ["from the call"]).map(() => "completed"),
  );
  return sim.requests().filter((entry) => entry.seq > before && entry.path === "/v1/messages");
}

describe("forking the real Claude Code CLI's turn", () => {
  it("with its default model: system messages, adaptive thinking, output_config, betas", async () => {
    const turn = await captureAgentTurn();
    expect(turn.request.messages.some((message) => message.role === "system")).toBe(true);
    expect(turn.request).toHaveProperty("output_config");
    expect(turn.request.thinking).toMatchObject({ type: "adaptive" });
    expect(turn.entry.betas.length).toBeGreaterThan(0);
    const children = await forkFrom(turn, "default");
    expectFaithfulChildren(turn, children);
  });

  it("with a model given thinking.budget_tokens", async () => {
    const turn = await captureAgentTurn("claude-sonnet-4-5", { MAX_THINKING_TOKENS: "4096" });
    expect(turn.request.thinking).toMatchObject({ type: "enabled", budget_tokens: expect.any(Number) });
    const children = await forkFrom(turn, "budget");
    expectFaithfulChildren(turn, children);
  });

  it("with no --directive, the child's directive is the Agent call's prompt, and the call is answered", async () => {
    const turn = await captureAgentTurn();
    const children = await forkFrom(turn, "from-call", []);
    expectFaithfulChildren(turn, children, 1);
    const body = JSON.parse(children[0]!.body) as Body;
    const call = turn.reply.content.find((block) => block.type === "tool_use") as { id: string };
    const tail = JSON.stringify(body.messages[turn.request.messages.length + 1]);
    expect(tail).toContain(`"tool_use_id":"${call.id}"`);
    expect(tail).toContain("Audit the codec for unchecked lengths.");
  });

  it("from the Agent SDK's query(): its turn forks the same way", async () => {
    const turn = await captureAgentTurn(undefined, undefined, "agent-sdk");
    expect(turn.request.messages.some((message) => message.role === "system")).toBe(true);
    expect(turn.entry.betas.length).toBeGreaterThan(0);
    const children = await forkFrom(turn, "agent-sdk");
    expectFaithfulChildren(turn, children);
  });
});

/** A `forkd capture DIR` process in front of the simulator. */
interface RunningCapture {
  cli: CliProcess;
  /** Its DIR. */
  dir: string;
  /** Its URL, the client's ANTHROPIC_BASE_URL. */
  url: string;
}

async function startCapture(name: string): Promise<RunningCapture> {
  const dir = join(workspace, name);
  const state = join(workspace, `${name}-state`, "capture.json");
  const cli = spawnCli(["capture", dir, ...proxyCliArgs(sim.url, state)]);
  // The URL is its first line of stdout; each line after it is the path of a file it wrote.
  const url = await cli.waitForLine((line) => line.startsWith("http://"));
  return { cli, dir, url };
}

/**
 * The paths capture printed, once it has printed `count`: it writes a turn's file after the reply's
 * last byte reached it, which may be after the client has read that byte and exited.
 */
async function capturedPaths(capture: RunningCapture, count: number): Promise<string[]> {
  const paths = () => capture.cli.lines().slice(1);
  await capture.cli.waitForLine(() => paths().length >= count);
  return paths();
}

/** A file `forkd capture` wrote for an Anthropic turn. */
interface CapturedTurn {
  request: Body;
  response: Reply & { stop_reason?: unknown };
  betas: string[];
}

/** A file capture wrote, and the call the simulator logged and answered for it. */
interface CapturedCall extends ParentTurnOnLog {
  path: string;
  file: CapturedTurn;
}

/**
 * Reads capture's DIR as a user would and holds each file to the simulator's log: a folder per
 * conversation, `cc_<session id>` for the client's own and `cc_<session id>_agent_<agent id>` for
 * the sub-agent its Agent tool ran (the script calls it once); in them, one file (mode 0600) per
 * model call the simulator accepted, numbered in the order capture recorded them across all
 * folders. Each file's request is the bytes the client sent, its betas the ones it sent them with,
 * its response the reply the stream carried. Returns the calls in number order.
 */
async function readCaptureDir(capture: RunningCapture, session: string): Promise<CapturedCall[]> {
  const logged = acceptedModelCalls();
  const printed = await capturedPaths(capture, logged.length);
  const sessionFolder = `cc_${session}`;
  const folders = (await readdir(capture.dir)).sort();
  expect(folders).toEqual([
    sessionFolder,
    expect.stringMatching(new RegExp(`^${sessionFolder}_agent_[0-9a-z]+$`)),
  ]);
  const onDisk: string[] = [];
  for (const folder of folders) {
    for (const file of await readdir(join(capture.dir, folder))) onDisk.push(join(capture.dir, folder, file));
  }
  expect([...printed].sort()).toEqual(onDisk.sort());
  const byNumber = printed.sort((a, b) => basename(a).localeCompare(basename(b)));
  expect(byNumber.map((path) => basename(path))).toEqual(
    logged.map((_, i) => `${String(i + 1).padStart(6, "0")}.json`),
  );

  const calls: CapturedCall[] = [];
  for (const path of byNumber) {
    expect((await stat(path)).mode & 0o777, path).toBe(0o600);
    const file = JSON.parse(await readFile(path, "utf8")) as CapturedTurn;
    expect(Object.keys(file)).toEqual(["request", "response", "betas"]);
    const sent = logged.filter((entry) => entry.body === JSON.stringify(file.request));
    expect(sent, `${path}: no request reached the simulator with these bytes`).toHaveLength(1);
    const entry = sent[0]!;
    expect(file.betas).toEqual(entry.betas);
    const reply = await replyTo(sim, entry, CLAUDE_CODE_API_KEY);
    const { stop_reason } = reply as Reply & { stop_reason?: unknown };
    expect(file.response).toMatchObject({ role: "assistant", content: reply.content, stop_reason });
    calls.push({ path, file, entry, request: JSON.parse(entry.body) as Body, reply });
  }
  return calls;
}

/**
 * The walkthrough of docs/any-agent.md with a real client: `forkd capture DIR` in front of the
 * simulator, the client through it, DIR read ({@link readCaptureDir}), the Agent turn found in the
 * session's folder as a user finds it, and `forkd fork --from` that very file. The children must be
 * faithful forks of the parent's call as the simulator logged it. Returns the replies of the
 * session's own folder, in order.
 */
async function forkCapturedSession(client: Client, name: string): Promise<Reply[]> {
  sim.reset();
  const capture = await startCapture(name);
  try {
    const session = await runScriptedClient(client, capture.url);
    const calls = await readCaptureDir(capture, session);
    const sessionDir = join(capture.dir, `cc_${session}`);
    const [subAgentCall, ...more] = calls.filter((call) => dirname(call.path) !== sessionDir);
    expect(more).toEqual([]);
    expect(JSON.stringify(subAgentCall?.request.messages)).toContain(
      "Audit the codec for unchecked lengths.",
    );

    // The turn to fork: the file of the session's folder whose response calls the Agent tool (not
    // the last file: the turns after the call are there too).
    const sessionCalls = calls.filter((call) => dirname(call.path) === sessionDir);
    const agentTurns = sessionCalls.filter((call) => callsAgent(call.file.response));
    expect(agentTurns).toHaveLength(1);
    const children = await forkFromFile(agentTurns[0]!.path);
    expectFaithfulChildren(agentTurns[0]!, children);
    // A real session gives capture nothing to warn of (its log is on stderr, at warn by default):
    // every call read back and recorded, every file written.
    expect(capture.cli.stderr()).not.toMatch(/"level":(40|50|60)/);
    return sessionCalls.map((call) => call.file.response);
  } finally {
    await capture.cli.stop("SIGTERM");
  }
}

/** Asserts a session's replies begin as {@link AGENT_TURN_PROMPT} scripts them. */
function expectScriptedReplies(replies: readonly Reply[]): void {
  const shapes = replies.map((reply) =>
    reply.content.map((block) => (block.type === "tool_use" ? `call ${String(block.name)}` : block.text)),
  );
  // After "Done.", Claude Code 2.1 takes one more turn when the sub-agent's result comes in.
  expect(shapes.slice(0, 3)).toEqual([["call Read"], ["Forking the audit.", "call Agent"], ["Done."]]);
}

describe("docs/any-agent.md's `forkd capture` walkthrough, with a real client", () => {
  it("Claude Code through `forkd capture`: the Agent turn's file forks as the logged request does", async () => {
    expectScriptedReplies(await forkCapturedSession("claude-code", "capture-claude-code"));
  });

  it("the Agent SDK's query() through `forkd capture`: the same folders and files, forked the same way", async () => {
    expectScriptedReplies(await forkCapturedSession("agent-sdk", "capture-agent-sdk"));
  });
});
