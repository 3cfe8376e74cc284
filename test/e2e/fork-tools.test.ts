// The fork tools' behaviour on a real stack (nats-server, daemons, the simulator behind an in-process
// forkd proxy): what each tool answers, and what a model cannot make them do — fork a reply the
// proxy never saw, read or stop another session's runs.
import Anthropic from "@anthropic-ai/sdk";
import { NatsForkSubagent } from "@forkd/client";
import { FORK_BOILERPLATE_TAG } from "@forkd/core/internal";
import { ForkTools } from "@forkd/mcp";
import { mcpInstanceMarker, ProxyClient, type RunningProxy, startProxy } from "@forkd/proxy";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useForkdStack } from "../harness/forkd.js";
import { expectParentBytes, expectParentCacheRead } from "../harness/openai-fork-checks.js";

const stack = useForkdStack({ daemons: ["tools-a", "tools-b"] });
let proxy: RunningProxy;
let anthropic: Anthropic;

beforeAll(async () => {
  proxy = await startProxy({ upstream: stack().sim.url, openaiUpstream: `${stack().sim.url}/v1` });
  anthropic = new Anthropic({ apiKey: stack().apiKey, baseURL: proxy.url, maxRetries: 0 });
});

afterAll(async () => {
  await proxy?.close();
});

let sessions = 0;

/** A new session: its own fork tools (server instance) and an agent turn that calls `calls`. */
async function sessionCalling(
  calls: { directive: string; label?: string }[],
  script = "",
  subagent: NatsForkSubagent = stack().forks,
) {
  const instanceId = `${"ab".repeat(8)}${String(++sessions).padStart(4, "0")}`;
  const tools = new ForkTools({
    subagent,
    lookup: (query) => new ProxyClient(proxy).findToolCall(query),
    instanceId,
    lookupWaitMs: 2000,
  });
  const prompt = [
    `Session ${sessions}: audit the codec.`,
    ...calls.map((call) => `@sim tool mcp__forkd__fork ${JSON.stringify(call)}`),
    script,
  ].join("\n");
  await anthropic.messages.create(
    {
      model: "claude-sonnet-5-5",
      max_tokens: 1024,
      system: "You are an agent. ".repeat(300),
      tools: [
        {
          name: "mcp__forkd__fork",
          description: `${mcpInstanceMarker(instanceId)} Fork a child.`,
          input_schema: {
            type: "object",
            properties: { directive: { type: "string" }, label: { type: "string" } },
          },
        },
      ],
      messages: [{ role: "user", content: prompt }],
    },
    { headers: { "x-claude-code-session-id": `tools-session-${sessions}` } },
  );
  return tools;
}

function runIdOf(text: string): string {
  const match = /run_id: (\S+)/.exec(text);
  if (match === null) throw new Error(`no run id in ${text}`);
  return match[1]!;
}

describe("forkd's fork tools", () => {
  it("answers each fork call of a reply with its own child, launched together, and reports both", async () => {
    const tools = await sessionCalling([
      { directive: "Audit the lengths.", label: "lengths" },
      { directive: "Audit the depths.", label: "depths" },
    ]);
    const first = await tools.fork({ directive: "Audit the lengths.", label: "lengths" });
    const second = await tools.fork({ directive: "Audit the depths.", label: "depths" });
    expect(first.isError).toBeUndefined();
    expect(first.text).toMatch(/^Fork started — processing in background\./);
    expect(runIdOf(first.text)).not.toBe(runIdOf(second.text));

    const status = await tools.status({});
    expect(status.text.split("\n")).toHaveLength(2);

    const reports = await tools.result({});
    expect(reports.text.match(/<status>completed<\/status>/g)).toHaveLength(2);
    expect(reports.text).toContain(runIdOf(first.text));
    // Reported once: a second fork_result with no names has nothing left.
    expect((await tools.result({})).text).toMatch(/No forks left to report/);
    // Named again, a run is reported again.
    expect((await tools.result({ label: "depths" })).text).toContain(runIdOf(second.text));
  });

  it("with wait, returns the child's report in the fork call itself", async () => {
    const tools = await sessionCalling([{ directive: "Summarise the notes." }]);
    const answer = await tools.fork({ directive: "Summarise the notes.", wait: true });
    expect(answer.text).toMatch(/^<task-notification>/);
    expect(answer.text).toContain("<status>completed</status>");
  });

  it("says plainly when the proxy never saw the reply that made the call", async () => {
    const tools = await sessionCalling([{ directive: "Audit A." }]);
    const answer = await tools.fork({ directive: "A directive no reply holds." });
    expect(answer.isError).toBe(true);
    expect(answer.text).toMatch(/forkd did not see the reply that made this call.*forkd proxy/s);
    // Where to look next: the proxy logs why it recorded no turn.
    expect(answer.text).toContain("the proxy's stderr says why");
  });

  it("does not fork the same call twice: a replayed fork call finds no unanswered call", async () => {
    const tools = await sessionCalling([{ directive: "Once only." }]);
    expect((await tools.fork({ directive: "Once only." })).isError).toBeUndefined();
    const replayed = await tools.fork({ directive: "Once only." });
    expect(replayed.isError).toBe(true);
  });

  it("stops a running child by label, and reports it killed; a zero timeout answers that it still runs", async () => {
    const tools = await sessionCalling([
      { directive: "Write at length.\n@sim tps 5\n@sim text 4000", label: "slow" },
    ]);
    const started = await tools.fork({
      directive: "Write at length.\n@sim tps 5\n@sim text 4000",
      label: "slow",
    });
    expect((await tools.result({ label: "slow", timeout_s: 0 })).text).toMatch(/is still running after 0s/);
    expect((await tools.abort({ label: "slow", reason: "enough" })).text).toContain(runIdOf(started.text));
    const report = await tools.result({ label: "slow" });
    expect(report.text).toContain("<status>killed</status>");
    expect((await tools.abort({ label: "slow" })).text).toMatch(/Nothing to abort/);
  });

  it("never touches another session's runs, even given their run id", async () => {
    const owner = await sessionCalling([{ directive: "Mine.\n@sim tps 5\n@sim text 4000" }]);
    const intruder = await sessionCalling([]);
    const runId = runIdOf((await owner.fork({ directive: "Mine.\n@sim tps 5\n@sim text 4000" })).text);
    for (const answer of [
      await intruder.result({ run_id: runId, timeout_s: 0 }),
      await intruder.abort({ run_id: runId }),
      await intruder.status({ run_id: runId }),
    ]) {
      expect(answer.isError).toBe(true);
      expect(answer.text).toMatch(/no fork with run_id .* was started by this session/);
    }
    // The intruder's fork tools cannot claim the owner's reply either (another instance's turn).
    expect((await intruder.fork({ directive: "Mine.\n@sim tps 5\n@sim text 4000" })).isError).toBe(true);
    await owner.abort({ run_id: runId });
    expect((await owner.result({ run_id: runId })).text).toContain("<status>killed</status>");
  });

  it("reports a fork whose spec could not be launched as failed, and the server lives on", async () => {
    // The session's connection closes as the fork launches (a server shutting down): the run's result
    // can never be read, and must not surface as an unhandled rejection that kills the process.
    const nc = await connect({ servers: stack().server.url });
    const subagent = await NatsForkSubagent.create(nc);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const tools = await sessionCalling([{ directive: "Never launched.", label: "lost" }], "", subagent);
      await nc.close();
      const started = await tools.fork({ directive: "Never launched.", label: "lost" });
      expect(started.isError).toBeUndefined();
      const report = await tools.result({ label: "lost" });
      expect(report.text).toContain("<status>failed</status>");
      expect((await tools.status({ label: "lost" })).text).toContain(" failed ");
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
      await subagent.close();
    }
  });

  it("refuses a fork call without a directive, and fork_abort without a name", async () => {
    const tools = await sessionCalling([]);
    expect((await tools.fork({ directive: "  " })).isError).toBe(true);
    expect((await tools.abort({})).isError).toBe(true);
  });

  it("forks an OpenAI Responses turn natively: children speak its API, after its reply and a placeholder per call", async () => {
    const { sim, forks, apiKey } = stack();
    const instanceId = `${"cd".repeat(8)}${String(++sessions).padStart(4, "0")}`;
    const tools = new ForkTools({
      subagent: forks,
      lookup: (query) => new ProxyClient(proxy).findToolCall(query),
      instanceId,
      lookupWaitMs: 2000,
    });
    const calls = [
      { directive: "Audit the lengths.", label: "lengths" },
      { directive: "Audit the depths.", label: "depths" },
    ];
    const body = {
      model: "gpt-5",
      stream: true,
      instructions: "You are an agent. ".repeat(300),
      prompt_cache_key: `tools-${instanceId}`,
      tools: [
        {
          type: "function",
          name: "mcp__forkd__fork",
          description: `${mcpInstanceMarker(instanceId)} Fork a child.`,
          parameters: {
            type: "object",
            properties: { directive: { type: "string" }, label: { type: "string" } },
          },
        },
      ],
      input: [
        {
          role: "user",
          content: [
            `Session ${sessions}: audit the codec.`,
            ...calls.map((c) => `@sim tool mcp__forkd__fork ${JSON.stringify(c)}`),
          ].join("\n"),
        },
      ],
    };
    const answer = await fetch(`${proxy.url}/openai/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
      body: JSON.stringify(body),
    });
    expect(answer.status).toBe(200);
    await answer.text();
    for (const call of calls) expect((await tools.fork(call)).isError).toBeUndefined();
    const reports = await tools.result({});
    expect(reports.text.match(/<status>completed<\/status>/g)).toHaveLength(2);

    const parent = sim.requests().find((e) => e.path === "/v1/responses" && e.body.includes(instanceId))!;
    const children = sim
      .requests()
      .filter(
        (e) =>
          e.path === "/v1/responses" &&
          e.body.includes(instanceId) &&
          e.body.includes(`<${FORK_BOILERPLATE_TAG}`),
      );
    expect(children).toHaveLength(2);
    const turn = (await new ProxyClient(proxy).findToolCall({
      toolName: "fork",
      input: calls[0],
      mcpInstance: instanceId,
    }))!.turn;
    expect(turn.api).toBe("openai-responses");
    for (const child of children) {
      expectParentBytes(parent.body, child.body, "input");
      const own = (JSON.parse(child.body) as { input: Record<string, unknown>[] }).input.slice(1);
      // The reply's items as the proxy recorded them, then one placeholder per call.
      expect(own.slice(0, (turn.response as unknown[]).length)).toEqual(turn.response);
      const outputs = own.filter((item) => item.type === "function_call_output").map((item) => item.call_id);
      expect(outputs).toEqual(turn.toolCalls.map((call) => call.id));
      expectParentCacheRead(parent, child);
    }
  });
});
