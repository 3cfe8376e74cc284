// The simulator refuses what the real API refuses: fields it does not know (anywhere it checks),
// a reply pasted into `messages` as the API returned it, and system messages without their beta.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sim, startSim } from "./server.js";
import { post } from "./test-support.js";

const MODEL = "claude-sonnet-4-6";
const SYSTEM_BETA = "mid-conversation-system-2026-04-07";
let sim: Sim;
beforeAll(async () => {
  sim = await startSim();
});
afterAll(() => sim.close());

type ErrorBody = { error: { type: string; message: string } };
const user = (text: string) => ({ role: "user", content: text });

async function refusal(body: unknown, betas?: readonly string[]): Promise<string> {
  const r = await post<ErrorBody>(sim, body, { betas });
  expect(r.status).toBe(400);
  expect(r.body.error.type).toBe("invalid_request_error");
  return r.body.error.message;
}

describe("unknown fields", () => {
  it("at the top level", async () => {
    expect(await refusal({ model: MODEL, max_tokens: 10, messages: [user("hi")], frobnicate: true })).toBe(
      "frobnicate: Extra inputs are not permitted",
    );
  });

  it("on a reply kept as the API returned it", async () => {
    const reply = {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: MODEL,
      content: [{ type: "text", text: "Hello." }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: { input_tokens: 1, output_tokens: 1 },
    };
    expect(
      await refusal({ model: MODEL, max_tokens: 10, messages: [user("hi"), reply, user("go on")] }),
    ).toBe("messages.1.id: Extra inputs are not permitted");
    const { role, content } = reply;
    const accepted = await post(sim, {
      model: MODEL,
      max_tokens: 10,
      messages: [user("hi"), { role, content }, user("go on")],
    });
    expect(accepted.status).toBe(200);
  });

  it("on a block, a system block and a custom tool", async () => {
    const block = { role: "user", content: [{ type: "text", text: "hi", colour: "red" }] };
    expect(await refusal({ model: MODEL, max_tokens: 10, messages: [block] })).toBe(
      "messages.0.content.0.colour: Extra inputs are not permitted",
    );
    expect(
      await refusal({
        model: MODEL,
        max_tokens: 10,
        system: [{ type: "text", text: "s", x: 1 }],
        messages: [user("hi")],
      }),
    ).toBe("system.0.x: Extra inputs are not permitted");
    const tool = { name: "Read", input_schema: { type: "object" }, cacheable: true };
    expect(await refusal({ model: MODEL, max_tokens: 10, tools: [tool], messages: [user("hi")] })).toBe(
      "tools.0.cacheable: Extra inputs are not permitted",
    );
  });

  it("accepts the fields real parents send", async () => {
    const r = await post(
      sim,
      {
        model: MODEL,
        max_tokens: 64,
        context_management: { edits: [] },
        output_config: { effort: "high" },
        thinking: { type: "adaptive", display: "summarized" },
        metadata: { user_id: JSON.stringify({ device_id: "d", session_id: "s" }) },
        tools: [{ name: "Read", input_schema: { type: "object" }, defer_loading: true }],
        system: [{ type: "text", text: "x-anthropic-billing-header: cc_version=1" }],
        messages: [user("hi")],
      },
      { betas: ["context-management-2025-06-27", "effort-2025-11-24"] },
    );
    expect(r.status).toBe(200);
  });
});

describe("system messages", () => {
  const withSystem = {
    model: MODEL,
    max_tokens: 10,
    messages: [
      user("hi"),
      { role: "system", content: "Be brief." },
      { role: "assistant", content: "Ok" },
      user("go"),
    ],
  };

  it("are refused without the mid-conversation-system beta", async () => {
    expect(await refusal(withSystem)).toMatch(/^messages\.1\.role: Input should be 'user' or 'assistant'/);
    expect(await refusal(withSystem, ["context-1m-2025-08-07"])).toMatch(/^messages\.1\.role:/);
  });

  it("are accepted anywhere with it, skipped by the turn-order rules, and the betas are logged", async () => {
    const r = await post(sim, withSystem, { betas: ["context-1m-2025-08-07", SYSTEM_BETA] });
    expect(r.status).toBe(200);
    expect(sim.requests().at(-1)?.betas).toEqual(["context-1m-2025-08-07", SYSTEM_BETA]);
  });

  it("are accepted with per-turn-control, the beta Claude Code 2.1 sends them with", async () => {
    expect((await post(sim, withSystem, { betas: ["per-turn-control-2026-07-01"] })).status).toBe(200);
    // A prefix of the name is not the beta.
    expect(await refusal(withSystem, ["per-turn-control"])).toMatch(/^messages\.1\.role:/);
  });

  it("are checked like the rest", async () => {
    const bad = {
      ...withSystem,
      messages: [user("hi"), { role: "system", content: "x", id: "m" }, user("go")],
    };
    expect(await refusal(bad, [SYSTEM_BETA])).toBe("messages.1.id: Extra inputs are not permitted");
    const empty = { ...withSystem, messages: [user("hi"), { role: "system", content: "" }] };
    expect(await refusal(empty, [SYSTEM_BETA])).toMatch(/^messages\.1\.content: /);
  });
});

describe("prompts longer than the model's context window", () => {
  /** A one-message request whose prompt is exactly `tokens` long, measured by the simulator's own count. */
  async function requestOf(model: string, tokens: number) {
    const probe = { model, max_tokens: 10, messages: [user("abcd")] };
    const counted = await post<{ input_tokens: number }>(sim, probe, { path: "/v1/messages/count_tokens" });
    const framing = counted.body.input_tokens - 1;
    return { model, max_tokens: 10, messages: [user("x".repeat(4 * (tokens - framing)))] };
  }

  it("are refused one token past the window, in the API's words, and accepted at it", async () => {
    expect((await post(sim, await requestOf(MODEL, 200_000))).status).toBe(200);
    expect(await refusal(await requestOf(MODEL, 200_001))).toBe(
      "prompt is too long: 200001 tokens > 200000 maximum",
    );
  });

  it("open to 1M with the context-1m beta, on the models that have it", async () => {
    const long = await requestOf(MODEL, 200_001);
    expect((await post(sim, long, { betas: ["context-1m-2025-08-07"] })).status).toBe(200);
    expect(await refusal(await requestOf(MODEL, 1_000_001), ["context-1m-2025-08-07"])).toBe(
      "prompt is too long: 1000001 tokens > 1000000 maximum",
    );
    expect(await refusal(await requestOf("claude-haiku-4-5", 200_001), ["context-1m-2025-08-07"])).toBe(
      "prompt is too long: 200001 tokens > 200000 maximum",
    );
    expect((await post(sim, await requestOf("claude-opus-4-7", 1_000_000))).status).toBe(200);
  });
});

describe("messages", () => {
  const ask = (messages: unknown[], extra: Record<string, unknown> = {}) => ({
    model: MODEL,
    max_tokens: 4096,
    messages,
    ...extra,
  });
  const text = (t: string) => ({ type: "text", text: t });
  const call = (id: string) => ({ type: "tool_use", id, name: "Read", input: {} });
  const result = (id: string) => ({ type: "tool_result", tool_use_id: id, content: "ok" });
  const WHITESPACE = "messages: text content blocks must contain non-whitespace text";

  it("refuse a text that is all whitespace, in a block, a string or a tool result", async () => {
    for (const blank of [" ", "\n", " \t\n "]) {
      expect(await refusal(ask([{ role: "user", content: [text(blank)] }]))).toBe(WHITESPACE);
      expect(await refusal(ask([user(blank)]))).toBe(WHITESPACE);
      expect(await refusal(ask([user("a"), { role: "assistant", content: blank }, user("b")]))).toBe(
        WHITESPACE,
      );
      const inResult = { type: "tool_result", tool_use_id: "t1", content: [text(blank)] };
      expect(
        await refusal(
          ask([
            user("a"),
            { role: "assistant", content: [call("t1")] },
            { role: "user", content: [inResult] },
          ]),
        ),
      ).toBe(WHITESPACE);
    }
    // One visible character is enough; a blank final assistant (prefill) is the trailing-whitespace error.
    expect((await post(sim, ask([{ role: "user", content: [text(" x ")] }]))).status).toBe(200);
    expect((await post(sim, ask([user(" . ")]))).status).toBe(200);
    expect(await refusal(ask([user("a"), { role: "assistant", content: " " }]))).toBe(
      "final assistant content cannot end with trailing whitespace",
    );
  });

  it("accept a blank system prompt block, which the rule does not cover", async () => {
    expect((await post(sim, ask([user("a")], { system: [text(" ")] }))).status).toBe(200);
  });

  it("refuse a tool_use id used twice, in one turn or across turns", async () => {
    const oneTurn = ask([
      user("a"),
      { role: "assistant", content: [call("t1"), call("t1")] },
      { role: "user", content: [result("t1")] },
    ]);
    expect(await refusal(oneTurn)).toBe("messages.1.content.1: `tool_use` ids must be unique");
    const twoTurns = (second: string) =>
      ask([
        user("a"),
        { role: "assistant", content: [call("t1")] },
        { role: "user", content: [result("t1")] },
        { role: "assistant", content: [text("again"), call(second)] },
        { role: "user", content: [result(second)] },
      ]);
    expect(await refusal(twoTurns("t1"))).toBe("messages.3.content.1: `tool_use` ids must be unique");
    expect((await post(sim, twoTurns("t2"))).status).toBe(200);
  });
});

describe("extended thinking (type enabled)", () => {
  const enabled = { type: "enabled", budget_tokens: 1024 };
  const tools = [{ name: "Read", input_schema: { type: "object" } }];
  const base = { model: MODEL, max_tokens: 4096, tools, messages: [user("hi")] };
  const FORCED = "Thinking may not be enabled when tool_choice forces tool use.";

  it("refuses a forced tool choice, and accepts auto and none", async () => {
    expect(await refusal({ ...base, thinking: enabled, tool_choice: { type: "any" } })).toBe(FORCED);
    expect(await refusal({ ...base, thinking: enabled, tool_choice: { type: "tool", name: "Read" } })).toBe(
      FORCED,
    );
    for (const type of ["auto", "none"]) {
      expect((await post(sim, { ...base, thinking: enabled, tool_choice: { type } })).status).toBe(200);
    }
    // Without thinking, or with it disabled or adaptive, forcing is allowed.
    for (const thinking of [undefined, { type: "disabled" }, { type: "adaptive" }]) {
      expect((await post(sim, { ...base, thinking, tool_choice: { type: "any" } })).status).toBe(200);
    }
  });

  const call = { type: "tool_use", id: "t1", name: "Read", input: {} };
  const answered = (assistant: unknown[], extra: Record<string, unknown> = {}) => ({
    ...base,
    thinking: enabled,
    messages: [
      user("hi"),
      { role: "assistant", content: assistant },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] },
    ],
    ...extra,
  });

  it("needs the turn whose tool calls are answered to start with its thinking", async () => {
    expect(
      (await post(sim, answered([{ type: "thinking", thinking: "t", signature: "s" }, call]))).status,
    ).toBe(200);
    expect((await post(sim, answered([{ type: "redacted_thinking", data: "d" }, call]))).status).toBe(200);
    const found = (type: string) =>
      `messages.1.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${type}\`. ` +
      "When `thinking` is enabled, a final `assistant` message must start with a thinking block " +
      "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include " +
      "thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please " +
      "consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking";
    expect(await refusal(answered([call]))).toBe(found("tool_use"));
    expect(
      await refusal(
        answered([
          { type: "text", text: "Reading." },
          { type: "thinking", thinking: "t", signature: "s" },
          call,
        ]),
      ),
    ).toBe(found("text"));
    // Adaptive thinking, or none, does not need it.
    expect((await post(sim, answered([call], { thinking: { type: "adaptive" } }))).status).toBe(200);
    expect((await post(sim, answered([call], { thinking: undefined }))).status).toBe(200);
  });

  it("does not need it of an earlier turn, once the conversation has moved on", async () => {
    const moved = answered([call]);
    moved.messages.push({ role: "assistant", content: "Done." }, user("thanks"));
    expect((await post(sim, moved)).status).toBe(200);
  });

  it("skips system messages when finding the turn", async () => {
    const withSystem = answered([call]);
    withSystem.messages.splice(2, 0, { role: "system", content: "Be brief." });
    expect(await refusal(withSystem, [SYSTEM_BETA])).toMatch(/^messages\.1\.content\.0\.type: Expected/);
  });
});

describe("a final assistant message (prefill) with thinking", () => {
  const thought = { type: "thinking", thinking: "t", signature: "s" };
  // A model that takes a prefill: every model from 4.6 on refuses one (below).
  const prefill = (content: unknown[], thinking?: unknown) => ({
    model: "claude-sonnet-4-5",
    max_tokens: 4096,
    ...(thinking === undefined ? {} : { thinking }),
    messages: [user("hi"), { role: "assistant", content }],
  });
  const OFF =
    "When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`. " +
    "To use thinking blocks, enable `thinking` in your request.";

  it("is refused when thinking is off, at the first thinking block", async () => {
    expect(await refusal(prefill([thought, { type: "text", text: "So" }]))).toBe(
      `messages.1.content.0: ${OFF}`,
    );
    const redacted = [
      { type: "text", text: "So" },
      { type: "redacted_thinking", data: "d" },
      { type: "text", text: "and" },
    ];
    expect(await refusal(prefill(redacted, { type: "disabled" }))).toBe(`messages.1.content.1: ${OFF}`);
    // With thinking on it is accepted, and a non-final turn is not held to it. (Adaptive thinking
    // comes with 4.6, whose models take no prefill at all.)
    const enabled = { type: "enabled", budget_tokens: 1024 };
    expect((await post(sim, prefill([thought, { type: "text", text: "So" }], enabled))).status).toBe(200);
    const earlier = prefill([thought, { type: "text", text: "So" }]);
    earlier.messages.push(user("go on"));
    expect((await post(sim, earlier)).status).toBe(200);
  });

  it("is refused when it ends on a thinking block, whatever the setting", async () => {
    const enabled = { type: "enabled", budget_tokens: 1024 };
    expect(await refusal(prefill([thought], enabled))).toBe(
      "messages.1: The final block in an assistant message cannot be `thinking`.",
    );
    expect((await post(sim, prefill([thought, { type: "text", text: "So" }], enabled))).status).toBe(200);
  });
});

describe("stop sequences", () => {
  const ask = (stop_sequences: string[]) => ({
    model: MODEL,
    max_tokens: 64,
    stop_sequences,
    messages: [user("hi")],
  });

  it("are refused empty or all whitespace, and accepted with one visible character", async () => {
    expect(await refusal(ask(["END", ""]))).toBe("stop_sequences: each stop sequence must be non-empty");
    for (const blank of [" ", "\n", "\n\n", " \t"]) {
      expect(await refusal(ask(["END", blank]))).toBe(
        "stop_sequences: each stop sequence must contain non-whitespace",
      );
    }
    expect((await post(sim, ask(["\n\nHuman:", " x", "END"]))).status).toBe(200);
    expect((await post(sim, ask([]))).status).toBe(200);
  });
});

describe("each model's own output settings", () => {
  const ask = (model: string, max_tokens: number, thinking?: unknown) => ({
    model,
    max_tokens,
    ...(thinking === undefined ? {} : { thinking }),
    messages: [user("hi")],
  });
  const enabled = { type: "enabled", budget_tokens: 1024 };
  const adaptive = { type: "adaptive" };

  it("refuse max_tokens one past the model's ceiling, in the API's words naming the model as sent, and accept it at the ceiling", async () => {
    const haiku = "claude-haiku-4-5-20251001";
    expect((await post(sim, ask(haiku, 64_000))).status).toBe(200);
    expect(await refusal(ask(haiku, 64_001))).toBe(
      `max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for ${haiku}`,
    );
    expect((await post(sim, ask("claude-opus-5", 128_000))).status).toBe(200);
    expect(await refusal(ask("claude-opus-5", 128_001))).toMatch(/^max_tokens: 128001 > 128000, /);
    expect(await refusal(ask("claude-3-haiku-20240307", 4097))).toMatch(/^max_tokens: 4097 > 4096, /);
    // A model whose ceiling is not known is not held to one.
    expect((await post(sim, ask("claude-3-7-sonnet-20250219", 128_000))).status).toBe(200);
  });

  it("refuse enabled thinking on a model that thinks only adaptively, and adaptive thinking on one that cannot", async () => {
    expect(await refusal(ask("claude-opus-4-7", 4096, enabled))).toBe(
      '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
    );
    expect((await post(sim, ask("claude-opus-4-7", 4096, adaptive))).status).toBe(200);
    expect(await refusal(ask("claude-sonnet-4-5", 4096, adaptive))).toBe(
      "adaptive thinking is not supported on this model",
    );
    expect((await post(sim, ask("claude-sonnet-4-5", 4096, enabled))).status).toBe(200);
    // The 4.6 models take both; a model whose thinking is not known is not checked.
    for (const thinking of [enabled, adaptive]) {
      expect((await post(sim, ask("claude-sonnet-4-6", 4096, thinking))).status).toBe(200);
      expect((await post(sim, ask("claude-mythos-5", 4096, thinking))).status).toBe(200);
    }
    expect((await post(sim, ask("claude-opus-5", 4096, { type: "disabled" }))).status).toBe(200);
  });
});
