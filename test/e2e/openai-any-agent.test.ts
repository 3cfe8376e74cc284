// Distributed forks for OpenAI-API agents, configured only: the real qwen-code (Chat Completions)
// and the real Codex CLI (Responses) talk to the model through `forkd proxy` (their OpenAI base URL
// is `<proxy>/openai`, whose upstream is the simulator) and have `forkd mcp` as an MCP server. The
// scripted model calls the fork tool twice in one reply, then fork_result; the children run on two
// daemons. Each child must start with the client's own request byte for byte through its last item,
// carry the reply exactly as the client itself sent it back, and read the parent's prompt from the
// cache; the client must get both reports back and finish.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FORK_BOILERPLATE_TAG } from "@forkd/core/internal";
import type { RequestLogEntry } from "@forkd/sim";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, cleanEnv, FORKD_BIN, proxyCliArgs, spawnCli } from "../cli/support.js";
import { useForkdStack } from "../harness/forkd.js";
import {
  type McpServerConfig,
  OPENAI_CLIENT_API_KEY,
  type RunOpenAiClientOptions,
  runCodex,
  runQwenCode,
} from "../harness/openai-clients.js";
import { expectParentBytes, expectParentCacheRead } from "../harness/openai-fork-checks.js";

const stack = useForkdStack({ daemons: ["oai-agent-a", "oai-agent-b"], apiKey: OPENAI_CLIENT_API_KEY });

type Body = Record<string, unknown>;

let workspace: string;
let statePath: string;
let proxy: CliProcess;
let proxyUrl: string;

beforeAll(async () => {
  const { sim } = stack();
  workspace = await mkdtemp(join(tmpdir(), "forkd-openai-agent-"));
  statePath = join(workspace, "proxy.json");
  proxy = spawnCli(["proxy", ...proxyCliArgs(sim.url, statePath)]);
  proxyUrl = await proxy.waitForLine((line) => line.startsWith("http://"));
});

afterAll(async () => {
  await proxy?.stop("SIGTERM");
  if (workspace) await rm(workspace, { recursive: true, force: true });
});

/** `forkd mcp` as the client starts it. */
function mcpServers(): Record<string, McpServerConfig> {
  return {
    forkd: {
      command: process.execPath,
      args: [FORKD_BIN, "mcp", "--nats", stack().server.url, "--state", statePath],
      env: cleanEnv(),
    },
  };
}

/** Two forks in one reply, then their results, then the end; `fork` is the tool's name as the client shows it. */
function forkingPrompt(fork: string): string {
  return [
    "Audit the codec in two parts.",
    `@sim tool ${fork} {"directive":"Audit the length checks.","label":"lengths"}`,
    `@sim tool ${fork} {"directive":"Audit the depth checks.","label":"depths"}`,
    "@sim turn",
    `@sim tool ${fork}_result {}`,
    "@sim turn",
    "@sim say Both audits are back.",
  ].join("\n");
}

const FORK_TOOLS = ["mcp__forkd__fork", "mcp__forkd__fork_result"];

const isChild = (entry: RequestLogEntry) => entry.body.includes(`<${FORK_BOILERPLATE_TAG}`);

interface Api {
  path: string;
  list: "messages" | "input";
  /** The fork calls a request sends back after `at` items: the reply the client got, as it sends it. */
  replyAfter(items: Body[], at: number): Body[];
  /** The ids of the reply's calls of the tool `fork` (as the client names it). */
  forkCallIds(reply: Body[], fork: string): string[];
}

const CHAT: Api = {
  path: "/v1/chat/completions",
  list: "messages",
  replyAfter: (items, at) => (items[at]?.role === "assistant" ? [items[at]!] : []),
  forkCallIds: (reply, fork) =>
    ((reply[0]?.tool_calls ?? []) as { id: string; function: { name: string } }[])
      .filter((call) => call.function.name === fork)
      .map((call) => call.id),
};

const RESPONSES: Api = {
  path: "/v1/responses",
  list: "input",
  replyAfter: (items, at) => {
    const after = items.slice(at);
    const end = after.findIndex((item) => item.type === "function_call_output");
    // The Codex CLI sends a reasoning item back with a `content: null` the API did not return.
    const asReturned = (item: Body) => {
      if (item.type !== "reasoning" || item.content !== null) return item;
      const { content: _, ...rest } = item;
      return rest;
    };
    return end <= 0 ? [] : after.slice(0, end).map(asReturned);
  },
  // A namespaced call (the Codex CLI's MCP tools) names its namespace beside the function.
  forkCallIds: (reply, fork) =>
    reply
      .filter(
        (item) =>
          item.type === "function_call" &&
          (item.namespace === undefined ? item.name : `${item.namespace}__${item.name}`) === fork,
      )
      .map((item) => String(item.call_id)),
};

/** Runs `client` through the proxy with `forkd mcp` and checks the whole fork round trip. */
async function forkThroughProxy(
  api: Api,
  fork: string,
  client: (options: RunOpenAiClientOptions) => Promise<string>,
): Promise<void> {
  const { sim } = stack();
  sim.reset();
  const output = await client({
    baseUrl: sim.url,
    openaiBaseUrl: `${proxyUrl}/openai`,
    prompt: forkingPrompt(fork),
    mcpServers: mcpServers(),
    timeoutMs: 180_000,
  });
  expect(output).toContain("Both audits are back.");
  const entries = sim.requests().filter((entry) => entry.path === api.path && entry.status === 200);
  const agent = entries.filter((entry) => !isChild(entry));
  const bodies = agent.map((entry) => JSON.parse(entry.body) as Body);
  // The forking turn: the request whose reply, as the next request sends it back, calls the fork tool twice.
  const at = bodies.findIndex((body, i) => {
    const next = bodies[i + 1]?.[api.list] as Body[] | undefined;
    const reply = next === undefined ? [] : api.replyAfter(next, (body[api.list] as Body[]).length);
    return api.forkCallIds(reply, fork).length === 2;
  });
  expect(at, "a turn whose reply called the fork tool twice").toBeGreaterThanOrEqual(0);
  const parentEntry = agent[at]!;
  const parentItems = bodies[at]![api.list] as Body[];
  const reply = api.replyAfter(bodies[at + 1]![api.list] as Body[], parentItems.length);
  const callIds = api.forkCallIds(reply, fork);
  const children = entries.filter(isChild);
  expect(children).toHaveLength(2);
  for (const child of children) {
    expectParentBytes(parentEntry.body, child.body, api.list);
    const own = (JSON.parse(child.body) as Body)[api.list] as Body[];
    // The reply the proxy reassembled is the one the client itself sent back.
    expect(own.slice(parentItems.length, parentItems.length + reply.length)).toEqual(reply);
    expectParentCacheRead(parentEntry, child);
  }
  // One child per call, each with its own directive in its last message.
  const directives = children.map((child) => {
    const last = JSON.stringify(((JSON.parse(child.body) as Body)[api.list] as Body[]).at(-1));
    return ["Audit the length checks.", "Audit the depth checks."].find((text) => last.includes(text));
  });
  expect(directives.sort()).toEqual(["Audit the depth checks.", "Audit the length checks."]);
  // Both reports reached the client, and went back to the model.
  const last = agent.at(-1)!.body;
  expect(last.match(/<status>completed<\/status>/g)).toHaveLength(2);
  for (const id of callIds) expect(last).toContain(`<tool-use-id>${id}</tool-use-id>`);
}

describe("OpenAI-API agents fork onto the cluster through forkd proxy and forkd mcp", () => {
  it("qwen-code (Chat Completions): two forks in one reply, then fork_result", { timeout: 300_000 }, () =>
    forkThroughProxy(CHAT, "mcp__forkd__fork", (options) =>
      // qwen-code defers MCP tools behind its tool_search/tool_call bridge; `tools.visible` declares
      // them in every request, as the proxy needs (the fork tool's description names this forkd mcp).
      runQwenCode({ ...options, qwenSettings: { tools: { visible: FORK_TOOLS } } }),
    ),
  );

  // The Codex CLI 0.171 offers an MCP server's tools as one Responses `namespace` tool
  // (`{type: "namespace", name: "mcp__forkd", tools: [fork, …]}`); its calls name the namespace
  // beside the function, and the script calls the tool as `mcp__forkd__fork`.
  it("the Codex CLI (Responses): two forks in one reply, then fork_result", { timeout: 300_000 }, () =>
    forkThroughProxy(RESPONSES, "mcp__forkd__fork", runCodex),
  );
});
