// The real Claude Code CLI (from npm) as the parent: its turn, captured from the strict simulator's
// log, forked with `forkd fork --from` onto three daemon processes. Every child must be accepted by
// the simulator (which refuses what the API refuses), carry the parent's request byte for byte up
// to its last message, send the reply as { role, content }, send the parent's betas, and read
// almost all of its input from the cache the parent wrote.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Sim, startSim } from "@forkd/sim";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, ndjson, runCli } from "../cli/support.js";
import { type DaemonProcess, spawnDaemon } from "../harness/daemons.js";
import { type Body, expectFaithfulChildren, replyTo } from "../harness/faithful-fork.js";
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

/** Runs Claude Code with a script whose second turn calls the Agent tool; returns that turn. */
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

/**
 * Runs a real client (the Claude Code CLI, or the Agent SDK's `query()`) with a script whose second
 * turn calls the Agent tool; returns that turn as the simulator logged it.
 */
async function captureAgentTurn(
  model?: string,
  env?: Record<string, string>,
  client: "claude-code" | "agent-sdk" = "claude-code",
) {
  sim.reset();
  const options = { baseUrl: sim.url, prompt: AGENT_TURN_PROMPT, env };
  if (client === "agent-sdk") {
    expect((await runAgentSdk(options)).result).toBe("Done.");
  } else {
    const result = await runClaudeCode({ ...options, model });
    expect(result.is_error).toBe(false);
  }
  const accepted = sim.requests().filter((entry) => entry.path === "/v1/messages" && entry.status === 200);
  for (const entry of accepted) {
    const reply = await replyTo(sim, entry, CLAUDE_CODE_API_KEY);
    if (reply.content.some((block) => block.type === "tool_use" && block.name === "Agent")) {
      return { entry, request: JSON.parse(entry.body) as Body, reply };
    }
  }
  throw new Error(`no request of ${client} was answered with an Agent call: ${accepted.length} requests`);
}

async function forkFrom(
  turn: Awaited<ReturnType<typeof captureAgentTurn>>,
  name: string,
  directives: readonly string[] = ["Audit the codec.", "List the tests.", "Check the notes."],
) {
  const file = join(workspace, `${name}.json`);
  await writeFile(
    file,
    JSON.stringify({ request: turn.request, response: turn.reply, betas: turn.entry.betas }),
  );
  const before = sim.requests().at(-1)?.seq ?? 0;
  const result = await runCli(
    [
      "fork",
      "--nats",
      nats().url,
      "--from",
      file,
      ...directives.flatMap((d) => ["--directive", d]),
      "--json",
    ],
    { env: cleanEnv(), timeoutMs: 90_000 },
  );
  expect(result.code, result.stderr).toBe(0);
  const results = ndjson(result.stdout).filter((line) => line.kind === "result");
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
