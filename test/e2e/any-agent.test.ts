// Distributed forks for an agent forkd did not write, configured only: the real Claude Code CLI (and
// the Agent SDK's query()) talks to the model through `forkd proxy`, whose upstream is the
// simulator, and has `forkd mcp` as an MCP server. The scripted model calls mcp__forkd__fork twice
// in one reply, then fork_result; the children run on two daemon processes. Each child must be a
// faithful fork of the turn that called it (its request equal to the agent's own through its last
// message, the reply, the agent's betas, ≥ 95 % read from the cache), and the agent must get both
// reports back and finish. Two of Claude Code's own sub-agents, run at once by one Claude Code process
// (one `forkd mcp`, one proxy session), asking for the same fork: each gets a child of its own turn.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsForkSubagent } from "@forkd/client";
import { FORK_BOILERPLATE_TAG } from "@forkd/core/internal";
import { forkdAgentSdkServer } from "@forkd/mcp/agent-sdk";
import { MCP_INSTANCE_MARKER, readProxyState } from "@forkd/proxy";
import { type RequestLogEntry, type Sim, startSim } from "@forkd/sim";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, cleanEnv, FORKD_BIN, spawnCli } from "../cli/support.js";
import { type DaemonProcess, spawnDaemon } from "../harness/daemons.js";
import {
  type Body,
  expectFaithfulChildren,
  type ParentTurnOnLog,
  replyTo,
} from "../harness/faithful-fork.js";
import { useNatsServer } from "../harness/nats.js";
import {
  CLAUDE_CODE_API_KEY,
  runAgentSdk,
  runClaudeCode,
  runClaudeCodeAfterInterrupt,
} from "../harness/real-clients.js";

const nats = useNatsServer();
let sim: Sim;
let workspace: string;
let proxy: CliProcess;
let proxyUrl: string;
let statePath: string;
const daemons: DaemonProcess[] = [];

const FORK_TOOLS = ["mcp__forkd__fork", "mcp__forkd__fork_result"];

/**
 * Claude Code defers MCP tools behind its ToolSearch tool, as a real model meets them: load the fork
 * tools, then two forks in one reply, then their results, then the end.
 */
const FORKING_PROMPT = [
  "Audit the codec in two parts.",
  '@sim tool ToolSearch {"query":"select:mcp__forkd__fork,mcp__forkd__fork_result"}',
  "@sim turn",
  '@sim tool mcp__forkd__fork {"directive":"Audit the length checks.","label":"lengths"}',
  '@sim tool mcp__forkd__fork {"directive":"Audit the depth checks.","label":"depths"}',
  "@sim turn",
  "@sim tool mcp__forkd__fork_result {}",
  "@sim turn",
  "@sim say Both audits are back.",
].join("\n");

beforeAll(async () => {
  sim = await startSim({ port: 0 });
  workspace = await mkdtemp(join(tmpdir(), "forkd-any-agent-"));
  statePath = join(workspace, "proxy.json");
  for (const n of [1, 2]) {
    daemons.push(
      await spawnDaemon({
        id: `any-agent-${n}`,
        natsUrls: [nats().url],
        simUrl: sim.url,
        workspace,
        bash: "read-only",
        // The provider's cache is per organisation: the daemons bill the agent's account.
        extraEnv: { ANTHROPIC_API_KEY: CLAUDE_CODE_API_KEY },
      }),
    );
  }
  proxy = spawnCli(["proxy", "--listen", "127.0.0.1:0", "--upstream", sim.url, "--state", statePath]);
  proxyUrl = await proxy.waitForLine((line) => line.startsWith("http://"));
});

afterAll(async () => {
  await proxy?.stop("SIGTERM");
  await Promise.all(daemons.map((daemon) => daemon.kill("SIGKILL")));
  await sim?.close();
  if (workspace) await rm(workspace, { recursive: true, force: true });
});

/** A 1×1 PNG. */
const ONE_PIXEL_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/** `forkd mcp` as Claude Code starts it, from its MCP config. */
function mcpConfig() {
  return {
    forkd: {
      command: process.execPath,
      args: [FORKD_BIN, "mcp", "--nats", nats().url, "--state", statePath],
      env: cleanEnv(),
    },
  };
}

function isChild(entry: RequestLogEntry): boolean {
  return entry.body.includes(`<${FORK_BOILERPLATE_TAG}`);
}

/** The `forkd mcp` instance whose tools a request offered. */
function instanceOf(body: Body): string | undefined {
  for (const tool of (body.tools ?? []) as { description?: string }[]) {
    const match = MCP_INSTANCE_MARKER.exec(tool.description ?? "");
    if (match !== null) return match[1];
  }
  return undefined;
}

/** The agents' turns on the log whose reply called the fork tool, by `forkd mcp` instance. */
async function forkingTurns(entries: readonly RequestLogEntry[]): Promise<Map<string, ParentTurnOnLog>> {
  const turns = new Map<string, ParentTurnOnLog>();
  for (const entry of entries) {
    if (entry.path !== "/v1/messages" || entry.status !== 200 || isChild(entry)) continue;
    const reply = await replyTo(sim, entry, CLAUDE_CODE_API_KEY);
    if (!reply.content.some((block) => block.type === "tool_use" && block.name === "mcp__forkd__fork"))
      continue;
    const request = JSON.parse(entry.body) as Body;
    const instance = instanceOf(request);
    if (instance === undefined) throw new Error("a forking turn without forkd mcp's tools");
    expect(turns.has(instance), "one forking turn per session").toBe(false);
    turns.set(instance, { entry, request, reply });
  }
  return turns;
}

/** Children on the log, by the `forkd mcp` instance of the tools they inherited. */
function childrenByInstance(entries: readonly RequestLogEntry[]): Map<string, RequestLogEntry[]> {
  const children = new Map<string, RequestLogEntry[]>();
  for (const entry of entries.filter(isChild)) {
    const instance = instanceOf(JSON.parse(entry.body) as Body) ?? "none";
    children.set(instance, [...(children.get(instance) ?? []), entry]);
  }
  return children;
}

/** What fork_result answered, as the agent sent it back to the model in its last request. */
function reportsSentBack(entries: readonly RequestLogEntry[], instance: string): string {
  const last = entries
    .filter((entry) => !isChild(entry) && entry.status === 200 && entry.body.includes(instance))
    .at(-1);
  const blocks = (JSON.parse(last!.body) as Body).messages.flatMap((message) =>
    Array.isArray(message.content) ? (message.content as Record<string, unknown>[]) : [],
  );
  const call = blocks.find((block) => block.type === "tool_use" && block.name === "mcp__forkd__fork_result");
  const answer = blocks.find((block) => block.type === "tool_result" && block.tool_use_id === call?.id);
  return JSON.stringify(answer?.content ?? null);
}

/** Claude Code's Bash call that waits until the file `name` exists in the repository. */
const waitFor = (name: string) => `until [ -f ${name} ]; do sleep 0.05; done`;

const bash = (command: string) => `@sim tool Bash ${JSON.stringify({ command })}`;

/**
 * Two sub-agents that fork with the same directive, their steps ordered by files they write and
 * wait for: alpha's forking turn is recorded, then beta's, and alpha's fork call reaches `forkd mcp`
 * while beta's is still pending. The directive alone cannot tell the two turns apart.
 */
const ALPHA_SUB_AGENT = [
  "Part alpha.",
  '@sim tool ToolSearch {"query":"select:mcp__forkd__fork"}',
  "@sim turn",
  bash(`touch alpha.waiting; ${waitFor("beta.ready")}`),
  '@sim tool mcp__forkd__fork {"directive":"Audit it."}',
  "@sim turn",
  bash("touch alpha.forked"),
  "@sim turn",
  "@sim say alpha forked.",
].join("\n");

const BETA_SUB_AGENT = [
  "Part beta.",
  '@sim tool ToolSearch {"query":"select:mcp__forkd__fork"}',
  "@sim turn",
  bash(waitFor("alpha.waiting")),
  "@sim turn",
  bash(`touch beta.ready; ${waitFor("alpha.forked")}`),
  '@sim tool mcp__forkd__fork {"directive":"Audit it."}',
  "@sim turn",
  "@sim say beta forked.",
].join("\n");

const agentCall = (part: string, prompt: string) =>
  `@sim tool Agent ${JSON.stringify({ description: `part ${part}`, prompt, subagent_type: "general-purpose" })}`;

const SUB_AGENTS_PROMPT = [
  "Fork an audit from two sub-agents.",
  agentCall("alpha", ALPHA_SUB_AGENT),
  agentCall("beta", BETA_SUB_AGENT),
  "@sim turn",
  "@sim say Both sub-agents forked.",
].join("\n");

/** The run id the fork tool answered with, as a sub-agent sent it back to the model. */
function runIdGivenTo(entries: readonly RequestLogEntry[], part: string): string {
  const bodies = entries
    .filter((entry) => entry.status === 200 && !isChild(entry))
    .map((entry) => entry.body)
    .filter((body) => body.includes(`Part ${part}.`) && body.includes("Fork started"));
  const match = /run_id: ([0-9a-f-]{36})/.exec(bodies.at(-1) ?? "");
  if (match?.[1] === undefined) throw new Error(`sub-agent ${part} never got a run id back`);
  return match[1];
}

/** Runs Claude Code with a script whose sub-agents fork, from a clean simulator. */
async function runSubAgents(prompt: string): Promise<void> {
  sim.reset();
  const result = await runClaudeCode({
    baseUrl: proxyUrl,
    prompt,
    allowedTools: ["Agent", "Bash", "Read", "ToolSearch", "mcp__forkd__fork"],
    mcpServers: mcpConfig(),
    timeoutMs: 90_000,
  });
  expect(result.is_error).toBe(false);
}

/**
 * The first request of the child of `runId`: from the log, or the next one logged (a fork runs in
 * the background and may outlive the agent that started it).
 */
async function childOfRun(runId: string): Promise<RequestLogEntry> {
  const ofRun = (entry: RequestLogEntry) => isChild(entry) && entry.body.includes(`run=\\"${runId}\\"`);
  return sim.requests().find(ofRun) ?? (await sim.next("request", { filter: ofRun }));
}

/**
 * A sub-agent that forks only after its busy sibling has taken nine more turns of the same Claude
 * Code session (its Bash call waits for the file the sibling writes last): more turns than the proxy
 * keeps per session, were sub-agents not kept apart.
 */
const WAITING_SUB_AGENT = [
  "Part waiting.",
  '@sim tool ToolSearch {"query":"select:mcp__forkd__fork"}',
  "@sim turn",
  bash(waitFor("busy.done")),
  '@sim tool mcp__forkd__fork {"directive":"Audit the wait."}',
  "@sim turn",
  "@sim say waiting forked.",
].join("\n");

const BUSY_SUB_AGENT = [
  "Part busy.",
  ...Array.from({ length: 8 }, () => '@sim tool Read {"file_path":"notes.txt"}\n@sim turn'),
  bash("touch busy.done"),
  "@sim turn",
  "@sim say busy done.",
].join("\n");

const BUSY_SIBLING_PROMPT = [
  "Fork from a sub-agent while another one works.",
  agentCall("waiting", WAITING_SUB_AGENT),
  agentCall("busy", BUSY_SUB_AGENT),
  "@sim turn",
  "@sim say Both sub-agents finished.",
].join("\n");

describe("an agent forkd did not write forks onto the cluster through forkd proxy and forkd mcp", () => {
  it("the Claude Code CLI: two fork calls in one reply, then fork_result", async () => {
    sim.reset();
    const result = await runClaudeCode({
      baseUrl: proxyUrl,
      prompt: FORKING_PROMPT,
      allowedTools: FORK_TOOLS,
      mcpServers: mcpConfig(),
      timeoutMs: 180_000,
    });
    expect(result.is_error).toBe(false);
    expect(result.result).toBe("Both audits are back.");

    const log = sim.requests();
    const turns = await forkingTurns(log);
    expect(turns.size).toBe(1);
    const [instance, turn] = [...turns][0]!;
    const children = childrenByInstance(log).get(instance) ?? [];
    expect(children).toHaveLength(2);
    expectFaithfulChildren(turn, children, 2);
    // Each child answers its own call of the reply, with its own directive.
    const calls = turn.reply.content.filter((block) => block.type === "tool_use") as { id: string }[];
    const tails = children.map((child) => JSON.stringify((JSON.parse(child.body) as Body).messages.at(-1)));
    for (const directive of ["Audit the length checks.", "Audit the depth checks."]) {
      expect(tails.filter((tail) => tail.includes(directive))).toHaveLength(1);
    }
    for (const tail of tails) for (const call of calls) expect(tail).toContain(call.id);

    // fork_result gave Claude Code both children's reports.
    const reports = reportsSentBack(log, instance);
    expect(reports.match(/<task-notification>/g)).toHaveLength(2);
    expect(reports.match(/<status>completed<\/status>/g)).toHaveLength(2);
    for (const call of calls) expect(reports).toContain(`<tool-use-id>${call.id}</tool-use-id>`);
  });

  it("two Claude Code sessions through one proxy at once, with the same prompt: each fork takes its own session's turn", async () => {
    sim.reset();
    const [one, two] = await Promise.all(
      [1, 2].map(() =>
        runClaudeCode({
          baseUrl: proxyUrl,
          prompt: FORKING_PROMPT,
          allowedTools: FORK_TOOLS,
          mcpServers: mcpConfig(),
          timeoutMs: 240_000,
        }),
      ),
    );
    expect([one?.result, two?.result]).toEqual(["Both audits are back.", "Both audits are back."]);
    expect(one?.session_id).not.toBe(two?.session_id);

    const log = sim.requests();
    const turns = await forkingTurns(log);
    expect(turns.size).toBe(2);
    const children = childrenByInstance(log);
    expect(children.get("none")).toBeUndefined();
    for (const [instance, turn] of turns) {
      // A child inherits the tools of the session whose turn it forked, so grouping children by the
      // instance marker in their tools and checking each against that session's turn shows that no
      // child took the other session's prefix.
      expectFaithfulChildren(turn, children.get(instance) ?? [], 2);
      expect(children.get(instance)).toHaveLength(2);
    }
  });

  it("the Agent SDK's query() with the in-process fork tools", async () => {
    sim.reset();
    const state = await readProxyState(statePath);
    const nc = await connect({ servers: nats().url });
    const subagent = await NatsForkSubagent.create(nc);
    const forkd = forkdAgentSdkServer({ subagent, proxy: state! });
    try {
      const { result } = await runAgentSdk({
        baseUrl: proxyUrl,
        prompt: FORKING_PROMPT,
        allowedTools: FORK_TOOLS,
        mcpServers: { forkd: forkd.config },
        timeoutMs: 180_000,
      });
      expect(result).toBe("Both audits are back.");
    } finally {
      await forkd.close();
      await subagent.close();
      await nc.drain();
    }
    const log = sim.requests();
    const turns = await forkingTurns(log);
    expect([...turns.keys()]).toEqual([forkd.instanceId]);
    const turn = turns.get(forkd.instanceId)!;
    expectFaithfulChildren(turn, childrenByInstance(log).get(forkd.instanceId) ?? [], 2);
    const reports = reportsSentBack(log, forkd.instanceId);
    expect(reports.match(/<status>completed<\/status>/g)).toHaveLength(2);
  });

  it("with extended thinking (MAX_THINKING_TOKENS): the proxy's reassembled reply keeps the signed thinking", async () => {
    sim.reset();
    const prompt = FORKING_PROMPT.replace(
      '@sim tool mcp__forkd__fork {"directive":"Audit the length checks."',
      '@sim think 40\n@sim tool mcp__forkd__fork {"directive":"Audit the length checks."',
    );
    const result = await runClaudeCode({
      baseUrl: proxyUrl,
      prompt,
      model: "claude-sonnet-4-5",
      env: { MAX_THINKING_TOKENS: "4096" },
      allowedTools: FORK_TOOLS,
      mcpServers: mcpConfig(),
      timeoutMs: 90_000,
    });
    expect(result.result).toBe("Both audits are back.");
    const log = sim.requests();
    const [[instance, turn]] = [...(await forkingTurns(log))] as [[string, ParentTurnOnLog]];
    expect(turn.request.thinking).toMatchObject({ type: "enabled" });
    expect(turn.reply.content[0]).toMatchObject({ type: "thinking", signature: expect.any(String) });
    expectFaithfulChildren(turn, childrenByInstance(log).get(instance) ?? [], 2);
  });

  it("a 1.2 MB prompt given on stdin as stream-json, and an image the agent read: the fork carries both", {
    timeout: 120_000,
  }, async () => {
    sim.reset();
    const image = join(workspace, "pixel.png");
    await writeFile(image, Buffer.from(ONE_PIXEL_PNG, "base64"));
    const pasted = Array.from({ length: 12_000 }, (_, i) => `log line ${i}: ${"x".repeat(90)}`).join("\n");
    const script = FORKING_PROMPT.replace(
      "@sim tool ToolSearch",
      `@sim tool Read ${JSON.stringify({ file_path: image })}\n@sim turn\n@sim tool ToolSearch`,
    );
    const result = await runClaudeCode({
      baseUrl: proxyUrl,
      prompt: "",
      content: [
        { type: "text", text: pasted },
        { type: "text", text: script },
      ],
      allowedTools: ["Read", ...FORK_TOOLS],
      mcpServers: mcpConfig(),
      timeoutMs: 90_000,
    });
    expect(result.result).toBe("Both audits are back.");
    const log = sim.requests();
    const [[instance, turn]] = [...(await forkingTurns(log))] as [[string, ParentTurnOnLog]];
    expect(turn.entry.body.length).toBeGreaterThan(1_200_000);
    expect(turn.entry.body).toContain(ONE_PIXEL_PNG);
    expectFaithfulChildren(turn, childrenByInstance(log).get(instance) ?? [], 2);
  });

  it("Ctrl-C mid-stream, then --continue and fork: the upstream call is abandoned, the fork carries the cut exchange", async () => {
    sim.reset();
    const story = "Write a long story.";
    const result = await runClaudeCodeAfterInterrupt({
      baseUrl: proxyUrl,
      interrupted: `${story}\n@sim tps 20\n@sim text 2000`,
      prompt: FORKING_PROMPT,
      allowedTools: FORK_TOOLS,
      mcpServers: mcpConfig(),
      timeoutMs: 90_000,
    });
    expect(result.result).toBe("Both audits are back.");
    const log = sim.requests();
    // The proxy hung up on the simulator as Claude Code hung up on the proxy, long before the end.
    expect(log[0]?.body).toContain(story);
    expect(log[0]).toMatchObject({ disconnected: true });
    expect(log[0]?.usage?.output_tokens).toBeLessThan(100);
    // (Not asking the simulator for the cut reply again: that would stream all 2000 tokens.)
    const [[instance, turn]] = [...(await forkingTurns(log.slice(1)))] as [[string, ParentTurnOnLog]];
    expect(turn.entry.body).toContain(story);
    expect(turn.entry.body).toContain("[Request interrupted by user]");
    expectFaithfulChildren(turn, childrenByInstance(log).get(instance) ?? [], 2);
  });

  it("two of Claude Code's sub-agents (Agent tool) at once, the same directive: each forks its own conversation", {
    timeout: 120_000,
  }, async () => {
    await runSubAgents(SUB_AGENTS_PROMPT);
    const log = sim.requests();
    for (const part of ["alpha", "beta"]) {
      const child = await childOfRun(runIdGivenTo(log, part));
      // The child's conversation is the sub-agent's own: its prompt, not its sibling's.
      expect(child.body).toContain(`Part ${part}.`);
      expect(child.body).not.toContain(`Part ${part === "alpha" ? "beta" : "alpha"}.`);
    }
  });

  it("a sub-agent forks after its sibling took more turns of the session than the proxy keeps", {
    timeout: 120_000,
  }, async () => {
    await runSubAgents(BUSY_SIBLING_PROMPT);
    // Before the fix: "forkd did not see the reply that made this call".
    const child = await childOfRun(runIdGivenTo(sim.requests(), "waiting"));
    expect(child.body).toContain("Part waiting.");
  });
});
