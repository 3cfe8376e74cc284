import { once } from "node:events";
import type { ForkEventBody, Limits, MessageParam, ProviderUsage } from "@forkd/protocol";
import { describe, expect, it, vi } from "vitest";
import { listBreakpoints } from "./breakpoints.js";
import { computeCacheKey } from "./cache-key.js";
import { createForkPrefix } from "./cache-safe-params.js";
import { EventLogError } from "./errors.js";
import { buildForkedRequest } from "./forked-request.js";
import { LlmError, type LlmRequest } from "./llm-client.js";
import type { Logger } from "./logger.js";
import { createPricingTable } from "./pricing.js";
import type { ResumeState } from "./resume.js";
import { testDispatcher } from "./test-support/dispatcher.js";
import { loadFixture } from "./test-support/fixtures.js";
import {
  hangingStep,
  ScriptedLlmClient,
  type ScriptStep,
  textReply,
  toolReply,
  usage,
} from "./test-support/scripted-llm.js";
import type { PermissionAsker } from "./tool-dispatcher.js";
import { denialToolResultText, toolFilterFromSpec } from "./tools/tool-filter.js";
import { runTurnLoop, type TurnLoopOptions } from "./turn-loop.js";

type Block = Record<string, unknown>;
type Budget = NonNullable<Limits["budget"]>;

function forked48k(options: { systemReminder?: string | undefined } = {}) {
  const fixture = loadFixture("48k");
  const prefix = createForkPrefix(fixture.request, fixture.response);
  return {
    prefix,
    forked: buildForkedRequest(prefix, {
      runId: "run-1",
      directive: "Count the codecs.",
      forkCall: { tool_use_id: String(fixture.response.content[1]!.id), description: "slice 1" },
      ...options,
    }),
  };
}

function setup(steps: ScriptStep[], extra: Partial<TurnLoopOptions> = {}) {
  const { forked } = forked48k({ systemReminder: extra.systemReminder });
  const llm = new ScriptedLlmClient(steps);
  const dispatcher = testDispatcher();
  const events: ForkEventBody[] = [];
  const appended: MessageParam[] = [];
  const options: TurnLoopOptions = {
    runId: "run-1",
    request: forked.request,
    llm,
    dispatcher,
    cwd: "/tmp",
    forkBreakpoint: forked.breakpoint,
    emit: (event) => events.push(event),
    onMessage: (message) => appended.push(message),
    ...extra,
  };
  return { llm, dispatcher, events, appended, options, forked, run: () => runTurnLoop(options) };
}

const types = (events: ForkEventBody[]) => events.map((event) => event.type);

/** A logger that keeps every line: `[level, fields, message]`. */
function recordingLogger() {
  const lines: [string, unknown, string | undefined][] = [];
  const at =
    (level: string) =>
    (fields: unknown, message?: string): void => {
      lines.push([level, fields, message]);
    };
  const logger: Logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
  return { lines, logger };
}

describe("runTurnLoop", () => {
  it("runs one turn to the model's end", async () => {
    const t = setup([textReply("Scope: x\nResult: done")]);
    const outcome = await t.run();
    expect(outcome).toMatchObject({ status: "completed", stop: "end_turn", turns: 1, toolUses: 0 });
    expect(outcome.finalText).toBe("Scope: x\nResult: done");
    // The first delta marks the response's first byte (warm-first releases siblings on it).
    expect(types(t.events)).toEqual(["started", "llm.request", "llm.delta", "llm.delta", "llm.message"]);
    expect(t.events[2]).toEqual({ type: "llm.delta", turn: 1, text: "" });
    expect(t.events[1]).toEqual({
      type: "llm.request",
      turn: 1,
      model: "claude-sonnet-4-6",
      message_count: t.forked.request.messages.length,
    });
    expect(t.llm.requests[0]).toBe(JSON.stringify(t.forked.request));
    expect(t.appended).toHaveLength(1);
    expect(outcome.messages).toHaveLength(t.forked.request.messages.length + 1);
  });

  it("returns at once with max_turns 0", async () => {
    const t = setup([textReply("never")], { limits: { max_turns: 0 } });
    const outcome = await t.run();
    expect(outcome).toMatchObject({ status: "completed", stop: "max_turns", turns: 0, finalText: "" });
    expect(t.llm.calls).toBe(0);
    expect(types(t.events)).toEqual(["started"]);
  });

  it("runs tool calls in order, appends their results, and reads the last turn from the cache", async () => {
    const t = setup([
      toolReply([
        { id: "t1", name: "Echo", input: { n: 1 } },
        { id: "t2", name: "Fail", input: {} },
      ]),
      toolReply([{ id: "t3", name: "Echo", input: { n: 3 } }]),
      textReply("finished"),
    ]);
    const outcome = await t.run();
    expect(outcome).toMatchObject({ status: "completed", stop: "end_turn", turns: 3, toolUses: 3 });
    expect(t.dispatcher.executed.map((call) => call.id)).toEqual(["t1", "t2", "t3"]);
    expect(t.appended.map((m) => m.role)).toEqual(["assistant", "user", "assistant", "user", "assistant"]);
    expect(t.appended[1]!.content).toEqual([
      { type: "tool_result", tool_use_id: "t1", content: '{"n":1}' },
      { type: "tool_result", tool_use_id: "t2", content: "it failed", is_error: true },
    ]);
    expect(types(t.events).filter((type) => type.startsWith("tool."))).toEqual([
      "tool.call",
      "tool.result",
      "tool.call",
      "tool.result",
      "tool.call",
      "tool.result",
    ]);
    // Turn 2 builds on two results: the rolling breakpoint goes on the second, the last block.
    const second = JSON.parse(t.llm.requests[1]!) as LlmRequest;
    expect(listBreakpoints(second).at(-1)!.location).toEqual({
      area: "messages",
      messageIndex: second.messages.length - 1,
      blockIndex: 1,
    });
    const third = t.llm.lastRequest();
    const breakpoints = listBreakpoints(third);
    expect(breakpoints).toHaveLength(4);
    expect(breakpoints.at(-1)!.location).toEqual({
      area: "messages",
      messageIndex: third.messages.length - 1,
      blockIndex: 0,
    });
    expect(breakpoints.map((b) => b.location)).toContainEqual(t.forked.breakpoint);
    // The stored conversation carries no rolling marker: only requests do.
    expect(JSON.stringify(outcome.messages.at(-2))).not.toContain("cache_control");
  });

  it("stops after the turn that reaches max_turns without running its tools", async () => {
    const t = setup([toolReply([{ id: "t1", name: "Echo", input: {} }])], { limits: { max_turns: 1 } });
    const outcome = await t.run();
    expect(outcome).toMatchObject({ status: "completed", stop: "max_turns", turns: 1, toolUses: 0 });
    expect(t.dispatcher.executed).toEqual([]);
  });

  it("sums usage over turns and prices it", async () => {
    const t = setup([
      toolReply([{ id: "t1", name: "Echo", input: {} }], {
        usage: usage({
          input_tokens: 100,
          cache_creation_input_tokens: 500,
          cache_read_input_tokens: 47_000,
          output_tokens: 50,
        }),
      }),
      textReply("done", {
        usage: usage({
          input_tokens: 20,
          cache_creation_input_tokens: 300,
          cache_read_input_tokens: 47_500,
          output_tokens: 30,
          cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 },
        }),
      }),
    ]);
    const { usage: totals } = await t.run();
    expect(totals).toMatchObject({
      input_tokens: 120,
      cache_write_5m_tokens: 600,
      cache_write_1h_tokens: 200,
      cache_read_tokens: 94_500,
      output_tokens: 80,
      llm_calls: 2,
    });
    const expected = (120 * 3 + 600 * 3.75 + 200 * 6 + 94_500 * 0.3 + 80 * 15) / 1e6;
    expect(totals.cost_usd).toBeCloseTo(expected, 8);
  });

  it("stops for a budget after the turn that crosses it", async () => {
    const steps = () => [
      toolReply([{ id: "t1", name: "Echo", input: {} }], { usage: usage({ output_tokens: 60 }) }),
      toolReply([{ id: "t2", name: "Echo", input: {} }], { usage: usage({ output_tokens: 60 }) }),
      textReply("never"),
    ];
    const byOutput = setup(steps(), { limits: { budget: { max_output_tokens: 100 } } });
    expect(await byOutput.run()).toMatchObject({
      status: "completed",
      stop: "budget",
      turns: 2,
      toolUses: 1,
    });
    const byCost = setup(steps(), { limits: { budget: { max_cost_usd: 0.0000001 } } });
    expect(await byCost.run()).toMatchObject({ stop: "budget", turns: 1, toolUses: 0 });
    const byInput = setup(steps(), { limits: { budget: { max_input_tokens: 15 } } });
    expect(await byInput.run()).toMatchObject({ stop: "budget", turns: 2 });
  });

  describe("stops at a budget's exact boundary, every input token kind counted", () => {
    // docs/fork-semantics.md: input is uncached + written + read, and the run stops after the turn
    // whose usage reaches (not only crosses) a limit. Each kind alone fills the budget: reaching it
    // stops after turn 1; one token short lets the tools run and the second turn stop.
    const kinds: [string, Partial<ProviderUsage>][] = [
      ["uncached input", { input_tokens: 40 }],
      ["cache writes (5m)", { cache_creation_input_tokens: 40 }],
      [
        "cache writes (1h)",
        {
          cache_creation_input_tokens: 40,
          cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 40 },
        },
      ],
      ["cache reads", { cache_read_input_tokens: 40 }],
    ];
    const turnUsing = (partial: Partial<ProviderUsage>, id: string) =>
      toolReply([{ id, name: "Echo", input: {} }], {
        usage: usage({ input_tokens: 0, output_tokens: 0, ...partial }),
      });
    const runWith = (partial: Partial<ProviderUsage>, budget: Budget) =>
      setup([turnUsing(partial, "t1"), turnUsing(partial, "t2"), textReply("never")], {
        limits: { budget },
      }).run();

    for (const [kind, partial] of kinds) {
      it(`max_input_tokens: ${kind}`, async () => {
        expect(await runWith(partial, { max_input_tokens: 40 })).toMatchObject({
          stop: "budget",
          turns: 1,
          toolUses: 0,
        });
        expect(await runWith(partial, { max_input_tokens: 41 })).toMatchObject({
          stop: "budget",
          turns: 2,
          toolUses: 1,
        });
      });
    }

    it("max_input_tokens sums the kinds", async () => {
      const mixed = {
        input_tokens: 10,
        cache_creation_input_tokens: 20,
        cache_creation: { ephemeral_5m_input_tokens: 5, ephemeral_1h_input_tokens: 15 },
        cache_read_input_tokens: 30,
      };
      expect(await runWith(mixed, { max_input_tokens: 60 })).toMatchObject({ stop: "budget", turns: 1 });
      expect(await runWith(mixed, { max_input_tokens: 61 })).toMatchObject({ stop: "budget", turns: 2 });
    });

    it("max_output_tokens", async () => {
      const output = { output_tokens: 40 };
      expect(await runWith(output, { max_output_tokens: 40 })).toMatchObject({ stop: "budget", turns: 1 });
      expect(await runWith(output, { max_output_tokens: 41 })).toMatchObject({ stop: "budget", turns: 2 });
    });

    it("max_cost_usd", async () => {
      // claude-sonnet-4-6 output is $15/MTok: 100 tokens cost $0.0015.
      const output = { output_tokens: 100 };
      expect(await runWith(output, { max_cost_usd: 0.0015 })).toMatchObject({ stop: "budget", turns: 1 });
      expect(await runWith(output, { max_cost_usd: 0.0016 })).toMatchObject({ stop: "budget", turns: 2 });
    });
  });

  it("ends the run with the model's own stop reasons", async () => {
    for (const [stopReason, stop] of [
      ["max_tokens", "max_tokens"],
      ["stop_sequence", "stop_sequence"],
      ["refusal", "refusal"],
    ] as const) {
      const t = setup([toolReply([{ id: "t1", name: "Echo", input: {} }], { stop_reason: stopReason })]);
      expect(await t.run()).toMatchObject({ status: "completed", stop, toolUses: 0 });
    }
  });

  it("sends again after pause_turn without a user message", async () => {
    const t = setup([textReply("working", { stop_reason: "pause_turn" }), textReply("done")]);
    const outcome = await t.run();
    expect(outcome).toMatchObject({ turns: 2, finalText: "done" });
    expect(t.llm.lastRequest().messages.at(-1)!.role).toBe("assistant");
  });

  it("refuses filtered calls with an error result and a tool.denied event", async () => {
    const t = setup(
      [
        toolReply([
          { id: "t1", name: "Bash", input: { command: "rm -rf /" } },
          { id: "t2", name: "Echo", input: { ok: true } },
        ]),
        textReply("done"),
      ],
      { toolFilter: toolFilterFromSpec({ kind: "allow", tools: ["Echo"] }) },
    );
    const outcome = await t.run();
    expect(t.dispatcher.executed.map((call) => call.name)).toEqual(["Echo"]);
    const denied = t.events.find((event) => event.type === "tool.denied");
    expect(denied).toMatchObject({
      type: "tool.denied",
      turn: 1,
      tool_use_id: "t1",
      name: "Bash",
      code: "tool_not_allowed",
    });
    const results = outcome.messages.at(-2)!.content as Block[];
    expect(results[0]).toEqual({
      type: "tool_result",
      tool_use_id: "t1",
      content: denialToolResultText({
        allowed: false,
        code: "tool_not_allowed",
        reason: String((denied as { reason: string }).reason),
      }),
      is_error: true,
    });
    expect(results[1]).toMatchObject({ tool_use_id: "t2", content: '{"ok":true}' });
  });

  it("applies the memory filter to shell commands and writes", async () => {
    const t = setup(
      [
        toolReply([
          { id: "t1", name: "Bash", input: { command: "rm -rf build" } },
          { id: "t2", name: "Bash", input: { command: "ls -la" } },
          { id: "t3", name: "Write", input: { file_path: "/etc/passwd", content: "x" } },
        ]),
        textReply("done"),
      ],
      { toolFilter: toolFilterFromSpec({ kind: "memory", memory_dir: "/tmp/forkd-memory" }) },
    );
    await t.run();
    const denials = t.events
      .filter((event) => event.type === "tool.denied")
      .map((event) => [event.tool_use_id, event.code]);
    expect(denials).toEqual([
      ["t1", "shell_not_read_only"],
      ["t3", "path_outside_memory_dir"],
    ]);
    expect(t.dispatcher.executed.map((call) => call.id)).toEqual(["t2"]);
  });

  it.each(["Agent", "Task", "mcp__forkd__fork", "mcp_forkd_fork"])(
    "refuses a fork's call of the fork tool %s with the guard's message",
    async (name) => {
      const t = setup([toolReply([{ id: "t1", name, input: { prompt: "fork again" } }]), textReply("done")]);
      const outcome = await t.run();
      expect(t.dispatcher.executed).toEqual([]);
      expect(t.events.find((event) => event.type === "tool.denied")).toMatchObject({
        code: "recursion_guard",
      });
      const result = (outcome.messages.at(-2)!.content as Block[])[0]!;
      expect(result.is_error).toBe(true);
      expect(String(result.content)).toMatch(/^Fork refused: .*fork:run-1/s);
    },
  );

  it("asks for permission and honours allow, deny and timeout", async () => {
    const decisions: Record<string, "allow" | "deny" | "never"> = { t1: "allow", t2: "deny", t3: "never" };
    const asker: PermissionAsker = {
      needsApproval: (call) => call.name !== "Echo",
      ask: (call, { signal }) =>
        new Promise((resolve) => {
          const decision = decisions[call.id];
          if (decision === "allow") resolve({ decision: "allow" });
          if (decision === "deny") resolve({ decision: "deny", reason: "not today" });
          signal.addEventListener("abort", () => resolve({ decision: "deny", reason: "withdrawn" }));
        }),
    };
    const t = setup(
      [
        toolReply([
          { id: "t0", name: "Echo", input: {} },
          { id: "t1", name: "Write", input: {} },
          { id: "t2", name: "Write", input: {} },
          { id: "t3", name: "Write", input: {} },
        ]),
        textReply("done"),
      ],
      { permissions: { asker, timeoutMs: 20 } },
    );
    const outcome = await t.run();
    expect(t.dispatcher.executed.map((call) => call.id)).toEqual(["t0", "t1"]);
    const permissionEvents = t.events.filter((event) => event.type.startsWith("permission."));
    expect(permissionEvents).toEqual([
      { type: "permission.requested", turn: 1, tool_use_id: "t1", name: "Write", timeout_ms: 20 },
      { type: "permission.resolved", turn: 1, tool_use_id: "t1", decision: "allow" },
      { type: "permission.requested", turn: 1, tool_use_id: "t2", name: "Write", timeout_ms: 20 },
      { type: "permission.resolved", turn: 1, tool_use_id: "t2", decision: "deny", reason: "not today" },
      { type: "permission.requested", turn: 1, tool_use_id: "t3", name: "Write", timeout_ms: 20 },
      {
        type: "permission.resolved",
        turn: 1,
        tool_use_id: "t3",
        decision: "timeout",
        reason: "no decision within 20 ms",
      },
    ]);
    const results = outcome.messages.at(-2)!.content as Block[];
    expect(results[2]).toMatchObject({
      is_error: true,
      content: "Permission for Write was denied: not today. The call was not run.",
    });
    expect(results[3]).toMatchObject({
      is_error: true,
      content:
        "Permission for Write was not approved in time: no decision within 20 ms. The call was not run.",
    });
  });

  it("turns a throwing dispatcher into an error result and goes on", async () => {
    const log = recordingLogger();
    const t = setup([toolReply([{ id: "t1", name: "Throw", input: {} }]), textReply("done")], {
      logger: log.logger,
    });
    const outcome = await t.run();
    expect(outcome.status).toBe("completed");
    expect(log.lines).toEqual([
      [
        "warn",
        { err: new Error("dispatcher bug"), tool: "Throw", tool_use_id: "t1" },
        "tool dispatcher threw",
      ],
    ]);
    expect((outcome.messages.at(-2)!.content as Block[])[0]).toMatchObject({
      content: "Tool Throw failed: dispatcher bug",
      is_error: true,
    });
  });

  it("appends the system reminder after the results, outside the rolling breakpoint", async () => {
    const t = setup([toolReply([{ id: "t1", name: "Echo", input: {} }]), textReply("done")], {
      systemReminder: "Stay in packages/core.",
    });
    await t.run();
    const last = t.llm.lastRequest().messages.at(-1)!.content as Block[];
    expect(last).toEqual([
      { type: "tool_result", tool_use_id: "t1", content: "{}", cache_control: { type: "ephemeral" } },
      { type: "text", text: "<system-reminder>\nStay in packages/core.\n</system-reminder>" },
    ]);
    const first = JSON.parse(t.llm.requests[0]!).messages.at(-1).content as Block[];
    expect(first.at(-1)!.text).toContain("Stay in packages/core.");
  });

  it("fails with the model's error, keeping the usage it reported", async () => {
    const t = setup([
      () => {
        throw new LlmError("overloaded", "overloaded", {
          retryable: true,
          partialUsage: usage({ input_tokens: 7, output_tokens: 0 }),
        });
      },
    ]);
    const outcome = await t.run();
    expect(outcome).toMatchObject({ status: "failed", error: { code: "overloaded", retryable: true } });
    expect(outcome.usage.input_tokens).toBe(7);
  });

  it("sends a turn again, visibly, when its stream was cut after output began, and fails after two cuts", async () => {
    const cut = () => {
      throw new LlmError("stream_interrupted", "cut", {
        retryable: true,
        partialUsage: usage({ input_tokens: 5, output_tokens: 3 }),
        partialText: "Scope: par",
      });
    };
    const log = recordingLogger();
    const once = setup([cut, textReply("Scope: x\nResult: done")], { logger: log.logger });
    const recovered = await once.run();
    expect(log.lines).toEqual([
      ["warn", { turn: 1, interruptions: 1 }, "model stream cut after output began: sending the turn again"],
    ]);
    expect(recovered).toMatchObject({ status: "completed", turns: 1 });
    expect(types(once.events).filter((type) => type === "llm.request")).toHaveLength(2);
    expect(once.llm.requests[0]).toBe(once.llm.requests[1]);
    expect(recovered.usage.input_tokens).toBe(5 + 10);

    const always = setup([cut, cut, cut, textReply("never")]);
    const failed = await always.run();
    expect(failed).toMatchObject({ status: "failed", error: { code: "stream_interrupted" } });
    expect(always.llm.calls).toBe(3);
  });

  it("waits for stored events before a tool runs and before a model call built on tool results, not before the first call", async () => {
    const order: string[] = [];
    const t = setup(
      [
        (request) => {
          order.push(`model(${request.messages.length})`);
          return toolReply([{ id: "t1", name: "Echo", input: { n: 1 } }]);
        },
        (request) => {
          order.push(`model(${request.messages.length})`);
          return textReply("Scope: x\nResult: done");
        },
      ],
      {
        durable: async () => {
          order.push(`durable(${types(t.events).at(-1)})`);
        },
      },
    );
    const dispatcher = t.options.dispatcher;
    t.options.dispatcher = {
      isSafeToRepeat: (call) => dispatcher.isSafeToRepeat(call),
      execute: (call, context) => {
        order.push(`tool(${call.name})`);
        return dispatcher.execute(call, context);
      },
    };
    const base = t.forked.request.messages.length;
    expect(await t.run()).toMatchObject({ status: "completed" });
    expect(order).toEqual([
      `model(${base})`,
      "durable(tool.call)",
      "tool(Echo)",
      "durable(tool.result)",
      `model(${base + 2})`,
    ]);
  });

  it("batches streamed text into few llm.delta events", async () => {
    const t = setup([
      (_request, options) => {
        for (let i = 0; i < 500; i++) options.onEvent?.({ type: "text_delta", text: "0123456789" });
        return textReply("");
      },
    ]);
    await t.run();
    const deltas = t.events.filter((event) => event.type === "llm.delta");
    expect(deltas.length).toBeLessThanOrEqual(3);
    expect(deltas.map((event) => (event as { text: string }).text).join("")).toHaveLength(5000);
  });
});

describe("cache-break detection", () => {
  const bigPromptLowReads = usage({
    input_tokens: 40_000,
    cache_creation_input_tokens: 8_000,
    cache_read_input_tokens: 100,
  });

  it("reports a break on the first turn with the layer that changed", async () => {
    const { prefix } = forked48k();
    const parentLayers = computeCacheKey(prefix.params).layers;
    const layers = computeCacheKey({ ...prefix.params, model: "claude-opus-4-5" }).layers;
    const t = setup([textReply("done", { usage: bigPromptLowReads })], {
      cacheCheck: { parentLayers, prefixLayers: layers },
    });
    await t.run();
    const cacheBreak = t.events.find((event) => event.type === "cache.break");
    expect(cacheBreak).toMatchObject({
      type: "cache.break",
      turn: 1,
      layer: "model",
      prompt_tokens: 48_100,
      cache_read_tokens: 100,
    });
  });

  it("prices the miss with the loop's table and carries the provider's reason", async () => {
    const { prefix } = forked48k();
    const layers = computeCacheKey(prefix.params).layers;
    const provider = { type: "tools_changed", cache_missed_input_tokens: 7_900 };
    const pricing = createPricingTable([
      { family: "claude", prefixes: ["claude"], inputUsdPerMTok: 100, outputUsdPerMTok: 500 },
    ]);
    const t = setup([textReply("done", { usage: bigPromptLowReads, cacheMissReason: provider })], {
      cacheCheck: { parentLayers: layers, prefixLayers: layers, parentCachedTokens: 8_100 },
      pricing,
    });
    await t.run();
    // 8 000 missed, all of them written: at $100/MTok, 1.25× instead of 0.1×.
    expect(t.events.find((event) => event.type === "cache.break")).toMatchObject({
      cause: "tools",
      missed_tokens: 8_000,
      miss_cost_usd: 0.92,
      provider_reason: provider,
    });
  });

  it("says none when every layer matches, and stays quiet when reads are good or the prompt is small", async () => {
    const { prefix } = forked48k();
    const layers = computeCacheKey(prefix.params).layers;
    const broken = setup([textReply("done", { usage: bigPromptLowReads })], {
      cacheCheck: { parentLayers: layers, prefixLayers: layers },
    });
    await broken.run();
    expect(broken.events.find((event) => event.type === "cache.break")).toMatchObject({ layer: "none" });
    for (const good of [
      usage({ input_tokens: 300, cache_creation_input_tokens: 500, cache_read_input_tokens: 47_000 }),
      usage({ input_tokens: 500, cache_read_input_tokens: 0 }),
    ]) {
      const t = setup([textReply("done", { usage: good })], {
        cacheCheck: { parentLayers: layers, prefixLayers: layers },
      });
      await t.run();
      expect(types(t.events)).not.toContain("cache.break");
    }
  });
});

describe("stopping a run", () => {
  it("aborts during the model call", async () => {
    const controller = new AbortController();
    const t = setup([hangingStep(() => controller.abort("parent changed its mind"))], {
      signal: controller.signal,
    });
    const outcome = await t.run();
    expect(outcome).toMatchObject({ status: "aborted", reason: "parent changed its mind", turns: 0 });
  });

  it("keeps the usage an aborted model call had reported", async () => {
    const controller = new AbortController();
    const t = setup(
      [
        (_request, options) =>
          new Promise((_resolve, reject) => {
            options.signal?.addEventListener("abort", () =>
              reject(
                new LlmError("aborted", "aborted", {
                  partialUsage: usage({ input_tokens: 42_000, output_tokens: 7 }),
                }),
              ),
            );
            controller.abort("stop");
          }),
      ],
      { signal: controller.signal },
    );
    const outcome = await t.run();
    expect(outcome).toMatchObject({
      status: "aborted",
      usage: { input_tokens: 42_000, output_tokens: 7, llm_calls: 1 },
    });
  });

  it("aborts during a tool that ignores its signal", async () => {
    const controller = new AbortController();
    const t = setup([toolReply([{ id: "t1", name: "Stubborn", input: {} }])], { signal: controller.signal });
    void t.dispatcher.started("Stubborn").then(() => controller.abort("stop"));
    const outcome = await t.run();
    expect(outcome).toMatchObject({ status: "aborted", reason: "stop", turns: 1 });
    expect(types(t.events).at(-1)).toBe("tool.call");
  });

  it("kills a real child process when aborted during it", async () => {
    const controller = new AbortController();
    const t = setup([toolReply([{ id: "t1", name: "Shell", input: {} }])], { signal: controller.signal });
    void t.dispatcher.started("Shell").then(() => controller.abort("enough"));
    const started = Date.now();
    const outcome = await t.run();
    expect(outcome.status).toBe("aborted");
    const child = t.dispatcher.child!;
    if (child.exitCode === null && child.signalCode === null) await once(child, "exit");
    expect(child.signalCode).toBe("SIGTERM");
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("times out during the model call and during a tool", async () => {
    const duringCall = await setup([hangingStep()], { limits: { timeout_ms: 30 } }).run();
    expect(duringCall).toMatchObject({
      status: "timeout",
      error: { code: "timeout", message: "run exceeded its time limit of 30 ms", retryable: false },
    });
    const duringTool = await setup([toolReply([{ id: "t1", name: "Stubborn", input: {} }])], {
      limits: { timeout_ms: 30 },
    }).run();
    expect(duringTool).toMatchObject({ status: "timeout", turns: 1 });
  });

  it("honours a deadline that has already passed", async () => {
    const t = setup([textReply("never")], { deadlineAt: Date.now() - 1 });
    expect(await t.run()).toMatchObject({ status: "timeout" });
    expect(t.llm.calls).toBe(0);
  });

  it("leaves no abort listener behind", async () => {
    const controller = new AbortController();
    const added: string[] = [];
    const removed: string[] = [];
    const signal = controller.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((type: string, listener: never, options?: never) => {
      added.push(type);
      add(type, listener, options);
    }) as typeof signal.addEventListener;
    signal.removeEventListener = ((type: string, listener: never, options?: never) => {
      removed.push(type);
      remove(type, listener, options);
    }) as typeof signal.removeEventListener;
    await setup([toolReply([{ id: "t1", name: "Echo", input: {} }]), textReply("done")], { signal }).run();
    expect(added.length).toBeGreaterThan(0);
    expect(removed.sort()).toEqual(added.sort());
  });
});

describe("time: deadlines and durations", () => {
  // A clock that moves only when a test moves it; timers still run on real time.
  function manualClock(start = 1_000_000) {
    const clock = { t: start, now: () => clock.t };
    return clock;
  }

  it("takes the earlier of timeout_ms and deadlineAt, and reports that one's limit", async () => {
    const clock = manualClock();
    const deadlineFirst = await setup([hangingStep()], {
      clock,
      limits: { timeout_ms: 60_000 },
      deadlineAt: clock.t + 40,
    }).run();
    expect(deadlineFirst).toMatchObject({
      status: "timeout",
      error: { message: "run exceeded its time limit of 40 ms" },
    });
    const timeoutFirst = await setup([hangingStep()], {
      clock,
      limits: { timeout_ms: 30 },
      deadlineAt: clock.t + 60_000,
    }).run();
    expect(timeoutFirst).toMatchObject({ error: { message: "run exceeded its time limit of 30 ms" } });
  });

  it("stops before the first call at a deadline that is exactly now, with a limit of 0 ms when it had passed", async () => {
    const clock = manualClock();
    const now = setup([textReply("never")], { clock, deadlineAt: clock.t });
    expect(await now.run()).toMatchObject({ status: "timeout" });
    expect(now.llm.calls).toBe(0);
    const passed = await setup([textReply("never")], { clock, deadlineAt: clock.t - 5 }).run();
    expect(passed).toMatchObject({ error: { message: "run exceeded its time limit of 0 ms" } });
  });

  it("measures the run and each tool on its clock", async () => {
    const clock = manualClock();
    const t = setup(
      [
        () => {
          clock.t += 250;
          return toolReply([{ id: "t1", name: "Slow", input: {} }]);
        },
        textReply("done"),
      ],
      { clock },
    );
    const dispatcher = t.options.dispatcher;
    t.options.dispatcher = {
      isSafeToRepeat: (call) => dispatcher.isSafeToRepeat(call),
      execute: async (call, context) => {
        clock.t += 70;
        return dispatcher.execute(call, context);
      },
    };
    const outcome = await t.run();
    expect(outcome.durationMs).toBe(320);
    expect(t.events.find((event) => event.type === "tool.result")).toMatchObject({ duration_ms: 70 });
  });

  it("leaves no timer behind: the run's deadline, a permission's wait, an aborted tool's grace", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const asker: PermissionAsker = {
        needsApproval: () => true,
        ask: async () => ({ decision: "allow" }),
      };
      await setup([toolReply([{ id: "t1", name: "Echo", input: {} }]), textReply("done")], {
        limits: { timeout_ms: 60_000 },
        permissions: { asker, timeoutMs: 60_000 },
      }).run();
      expect(vi.getTimerCount()).toBe(0);

      // A tool that stops on its signal, after a moment of cleanup: the loop waits for it, then
      // cancels the grace timer.
      const controller = new AbortController();
      let cleanedUp = false;
      const t = setup([toolReply([{ id: "t1", name: "Careful", input: {} }])], { signal: controller.signal });
      t.options.dispatcher = {
        isSafeToRepeat: () => false,
        execute: (_call, context) =>
          new Promise((_resolve, reject) => {
            context.signal.addEventListener("abort", () =>
              setImmediate(() =>
                setImmediate(() => {
                  cleanedUp = true;
                  reject(new Error("stopped"));
                }),
              ),
            );
            controller.abort("enough");
          }),
      };
      expect(await t.run()).toMatchObject({ status: "aborted", reason: "enough" });
      expect(cleanedUp).toBe(true);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("turn loop edges", () => {
  it("refuses to resume a run that already ended", async () => {
    const t = setup([textReply("never")], {
      resume: { terminal: { type: "completed", seq: 7 } } as unknown as ResumeState,
    });
    const error = await t.run().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(EventLogError);
    expect(error).toMatchObject({ message: "the run already ended with a completed event", seq: 7 });
  });

  it("names an abort without a reason 'aborted'", async () => {
    const controller = new AbortController();
    const t = setup([hangingStep(() => controller.abort(""))], { signal: controller.signal });
    expect(await t.run()).toMatchObject({ status: "aborted", reason: "aborted" });
  });

  it("does not send a turn again when the cut stream was the abort's doing", async () => {
    const controller = new AbortController();
    const t = setup(
      [
        () => {
          controller.abort("stop");
          throw new LlmError("stream_interrupted", "cut", { retryable: true });
        },
        textReply("never"),
      ],
      { signal: controller.signal },
    );
    expect(await t.run()).toMatchObject({ status: "aborted", reason: "stop" });
    expect(types(t.events).filter((type) => type === "llm.request")).toHaveLength(1);
    expect(t.llm.calls).toBe(1);
  });

  it("returns at an abort even when the model client ignores its signal and never settles", async () => {
    const controller = new AbortController();
    const t = setup(
      [
        () =>
          new Promise(() => {
            controller.abort("stop");
          }),
      ],
      { signal: controller.signal },
    );
    expect(await t.run()).toMatchObject({ status: "aborted", reason: "stop" });
  });

  it("marks only the response's start with an immediate llm.delta, not other stream events", async () => {
    const t = setup([
      (_request, options) => {
        options.onEvent?.({ type: "retry", attempt: 1, delayMs: 10, error: "overloaded" });
        options.onEvent?.({ type: "thinking_delta", thinking: "hm" });
        return textReply("");
      },
    ]);
    await t.run();
    expect(t.events.filter((event) => event.type === "llm.delta")).toEqual([
      { type: "llm.delta", turn: 1, text: "" },
    ]);
  });

  it("waits for stored events only before a call built on tool results not yet stored", async () => {
    let barriers = 0;
    const t = setup(
      [
        toolReply([{ id: "t1", name: "Echo", input: {} }]),
        textReply("thinking", { stop_reason: "pause_turn" }),
        textReply("done"),
      ],
      {
        durable: async () => {
          barriers += 1;
        },
      },
    );
    expect(await t.run()).toMatchObject({ status: "completed", turns: 3 });
    // Before the tool, and before turn 2 (built on its result); turn 3 adds nothing unstored.
    expect(barriers).toBe(2);
  });

  it("checks the cache on the first turn only", async () => {
    const { prefix } = forked48k();
    const layers = computeCacheKey(prefix.params).layers;
    const lowReads = usage({
      input_tokens: 40_000,
      cache_creation_input_tokens: 8_000,
      cache_read_input_tokens: 0,
    });
    const t = setup(
      [
        toolReply([{ id: "t1", name: "Echo", input: {} }], { usage: lowReads }),
        textReply("done", { usage: lowReads }),
      ],
      { cacheCheck: { parentLayers: layers, prefixLayers: layers } },
    );
    await t.run();
    expect(t.events.filter((event) => event.type === "cache.break")).toMatchObject([{ turn: 1 }]);
  });

  it("places no rolling breakpoint when told not to", async () => {
    const t = setup([toolReply([{ id: "t1", name: "Echo", input: {} }]), textReply("done")], {
      rollingBreakpoint: false,
    });
    await t.run();
    const first = listBreakpoints(JSON.parse(t.llm.requests[0]!) as LlmRequest);
    expect(listBreakpoints(t.llm.lastRequest())).toEqual(first);
  });

  it("after pause_turn with a system reminder, puts the rolling breakpoint on the assistant's last block", async () => {
    const t = setup([textReply("working", { stop_reason: "pause_turn" }), textReply("done")], {
      systemReminder: "Stay in packages/core.",
    });
    await t.run();
    const second = t.llm.lastRequest();
    expect(listBreakpoints(second).at(-1)!.location).toEqual({
      area: "messages",
      messageIndex: second.messages.length - 1,
      blockIndex: 0,
    });
  });

  it("keeps the fork's own breakpoint when the rolling one needs room, even when it is the earliest", async () => {
    const marked = (text: string) => ({ type: "text", text, cache_control: { type: "ephemeral" } });
    const request = {
      model: "claude-sonnet-4-6",
      max_tokens: 100,
      messages: [{ role: "user", content: [marked("a"), marked("b"), marked("c"), marked("d")] }],
    } as unknown as LlmRequest;
    const forkBreakpoint = { area: "messages", messageIndex: 0, blockIndex: 0 } as const;
    const t = setup([toolReply([{ id: "t1", name: "Echo", input: {} }]), textReply("done")], {
      request,
      forkBreakpoint,
    });
    await t.run();
    const locations = listBreakpoints(t.llm.lastRequest()).map((b) => b.location);
    expect(locations).toHaveLength(4);
    expect(locations[0]).toEqual(forkBreakpoint);
    expect(locations).not.toContainEqual({ area: "messages", messageIndex: 0, blockIndex: 1 });
  });

  it("does not enforce a cost budget when a model has no price, and says so", async () => {
    const log = recordingLogger();
    const t = setup(
      [
        toolReply([{ id: "t1", name: "Echo", input: {} }], { usage: usage({ output_tokens: 1_000_000 }) }),
        textReply("done"),
      ],
      { logger: log.logger, limits: { budget: { max_cost_usd: 0.000001 } }, pricing: createPricingTable([]) },
    );
    expect(await t.run()).toMatchObject({ status: "completed", stop: "end_turn", turns: 2 });
    expect(log.lines[0]).toEqual([
      "warn",
      { unpriced_models: ["claude-sonnet-4-6"], max_cost_usd: 0.000001 },
      "cost budget not enforced: a model has no price",
    ]);
    // Without a cost budget an unpriced model is no warning.
    const quiet = recordingLogger();
    await setup([toolReply([{ id: "t1", name: "Echo", input: {} }]), textReply("done")], {
      logger: quiet.logger,
      limits: { budget: { max_input_tokens: 1_000_000 } },
      pricing: createPricingTable([]),
    }).run();
    expect(quiet.lines).toEqual([]);
  });

  it("logs an unexpected failure as an error, and a forkd error not at all", async () => {
    const log = recordingLogger();
    const boom = new Error("boom");
    const failed = await setup(
      [
        () => {
          throw boom;
        },
      ],
      { logger: log.logger },
    ).run();
    expect(failed).toMatchObject({ status: "failed", error: { code: "internal" } });
    expect(log.lines).toEqual([["error", { err: boom }, "turn loop failed unexpectedly"]]);
    const known = recordingLogger();
    await setup(
      [
        () => {
          throw new LlmError("overloaded", "overloaded", { retryable: true });
        },
      ],
      { logger: known.logger },
    ).run();
    expect(known.lines).toEqual([]);
  });

  it("denies a call whose permission request failed, and goes on", async () => {
    const asker: PermissionAsker = {
      needsApproval: () => true,
      ask: async () => {
        throw new Error("no route to parent");
      },
    };
    const t = setup([toolReply([{ id: "t1", name: "Write", input: {} }]), textReply("done")], {
      permissions: { asker },
    });
    const outcome = await t.run();
    expect(outcome).toMatchObject({ status: "completed", stop: "end_turn" });
    expect(t.dispatcher.executed).toEqual([]);
    expect(t.events.find((event) => event.type === "permission.resolved")).toEqual({
      type: "permission.resolved",
      turn: 1,
      tool_use_id: "t1",
      decision: "deny",
      reason: "the permission request failed: no route to parent",
    });
    expect((outcome.messages.at(-2)!.content as Block[])[0]).toMatchObject({
      is_error: true,
      content:
        "Permission for Write was denied: the permission request failed: no route to parent. The call was not run.",
    });
  });
});

describe("turn loop edges, continued", () => {
  it("ends at an abort while a permission is asked, with no decision and no result after it", async () => {
    const controller = new AbortController();
    const asker: PermissionAsker = {
      needsApproval: () => true,
      ask: () => {
        controller.abort("stop");
        return new Promise(() => {});
      },
    };
    const t = setup([toolReply([{ id: "t1", name: "Write", input: {} }]), textReply("never")], {
      permissions: { asker },
      signal: controller.signal,
    });
    expect(await t.run()).toMatchObject({ status: "aborted", reason: "stop", turns: 1 });
    expect(types(t.events).slice(-2)).toEqual(["tool.call", "permission.requested"]);
  });

  it("places no rolling breakpoint when the last message has no block that can carry one", async () => {
    const empty = {
      message: { role: "assistant" as const, content: [] },
      stop_reason: "pause_turn" as const,
    };
    const t = setup([empty, textReply("done")]);
    expect(await t.run()).toMatchObject({ status: "completed", turns: 2 });
    const first = listBreakpoints(JSON.parse(t.llm.requests[0]!) as LlmRequest);
    expect(listBreakpoints(t.llm.lastRequest())).toEqual(first);
  });
});
