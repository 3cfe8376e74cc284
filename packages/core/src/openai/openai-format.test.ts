// The OpenAI formats: rendering is message-local (a child's body starts with its parent's), native
// requests read back as the same conversation, tool-call arguments and unknown items survive
// verbatim, and a native fork child is still caught by the recursion guard.
import type { CacheSafeParams } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { InvalidPrefixError } from "../errors.js";
import { prepareForkRun } from "../fork-run-plan.js";
import type { LlmRequest } from "../llm-client.js";
import { assertMayFork } from "../recursion-guard.js";
import { DEFAULT_FORK_TOOL_NAMES } from "../turn-loop.js";
import { chatRequestToCanonical, renderChatRequest } from "./chat-format.js";
import { OPENAI_ARGUMENTS_FIELD, toolUseBlock } from "./content.js";
import { forkPrefixFromNative, nativeMessageCount, renderNativeChildRequest } from "./native-prefix.js";
import { derivedPromptCacheKey, promptCacheShard } from "./prompt-cache-key.js";
import {
  renderResponsesRequest,
  responsesItemsToAssistant,
  responsesRequestToCanonical,
} from "./responses-format.js";

const PARAMS: CacheSafeParams = {
  model: "gpt-5",
  max_tokens: 2048,
  system: [{ type: "text", text: "You review code.", cache_control: { type: "ephemeral" } }],
  tools: [
    {
      name: "Read",
      description: "Reads a file",
      input_schema: { type: "object", properties: { path: { type: "string" } } },
    },
  ],
  messages: [
    { role: "user", content: "Audit the codec." },
    {
      role: "assistant",
      content: [
        { type: "text", text: "Reading." },
        {
          type: "tool_use",
          id: "call_1",
          name: "Read",
          input: { path: "a.ts" },
          [OPENAI_ARGUMENTS_FIELD]: '{ "path": "a.ts" }',
        },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "call_1", content: "export {}" },
        { type: "text", text: "Go on.", cache_control: { type: "ephemeral" } },
      ],
    },
  ],
};
const REQUEST = { ...PARAMS, max_tokens: 2048 } as LlmRequest;

describe("Chat Completions", () => {
  it("renders system first, tool calls with the model's own arguments, tool results before the user's text, no breakpoints", () => {
    const body = renderChatRequest(REQUEST);
    expect(body.messages).toEqual([
      { role: "system", content: "You review code." },
      { role: "user", content: "Audit the codec." },
      {
        role: "assistant",
        content: "Reading.",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "Read", arguments: '{ "path": "a.ts" }' } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "export {}" },
      { role: "user", content: "Go on." },
    ]);
    expect(body.tools).toEqual([
      {
        type: "function",
        function: { name: "Read", description: "Reads a file", parameters: PARAMS.tools![0]!.input_schema },
      },
    ]);
    expect(body.max_completion_tokens).toBe(2048);
    expect(JSON.stringify(body)).not.toContain("cache_control");
  });

  it("renders a longer conversation as the shorter one's messages followed by its own", () => {
    const longer = {
      ...REQUEST,
      messages: [...REQUEST.messages, { role: "assistant", content: "Done." }],
    } as LlmRequest;
    const short = JSON.stringify(renderChatRequest(REQUEST).messages as unknown[]);
    expect(JSON.stringify(renderChatRequest(longer).messages).startsWith(short.slice(0, -1))).toBe(true);
  });

  it("reads a native request back: leading system and developer messages as the system prompt, tool messages as one user turn", () => {
    const params = chatRequestToCanonical({
      model: "gpt-5",
      max_tokens: 100,
      messages: [
        { role: "system", content: "A" },
        { role: "developer", content: [{ type: "text", text: "B" }] },
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "c1", type: "function", function: { name: "Read", arguments: "{}" } },
            { id: "c2", type: "function", function: { name: "Read", arguments: "{" } },
          ],
        },
        { role: "tool", tool_call_id: "c1", content: "one" },
        { role: "tool", tool_call_id: "c2", content: [{ type: "text", text: "two" }] },
        { role: "user", content: "next" },
      ],
      tools: [{ type: "function", function: { name: "Read", parameters: { type: "object" } } }],
    });
    expect(params.system).toBe("A\n\nB");
    expect(params.max_tokens).toBe(100);
    expect(params.tools).toEqual([{ name: "Read", input_schema: { type: "object" } }]);
    expect(params.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(params.messages[2]!.content).toEqual([
      { type: "tool_result", tool_use_id: "c1", content: "one" },
      { type: "tool_result", tool_use_id: "c2", content: "two" },
      { type: "text", text: "next" },
    ]);
    // Malformed arguments: an empty input, the string kept for the bytes.
    expect((params.messages[1]!.content as unknown[])[1]).toEqual(toolUseBlock("c2", "Read", "{"));
    expect(toolUseBlock("c2", "Read", "{")).toMatchObject({ input: {}, [OPENAI_ARGUMENTS_FIELD]: "{" });
  });

  it("refuses what it cannot read with a typed error", () => {
    expect(() => chatRequestToCanonical({ model: "gpt-5" })).toThrow(InvalidPrefixError);
    expect(() =>
      chatRequestToCanonical({ model: "gpt-5", messages: [{ role: "wizard", content: "x" }] }),
    ).toThrow(/unknown role wizard/);
  });
});

describe("Responses", () => {
  it("renders instructions, input items with function calls and outputs, function tools and store: false", () => {
    const body = renderResponsesRequest(REQUEST);
    expect(body.instructions).toBe("You review code.");
    expect(body.input).toEqual([
      { type: "message", role: "user", content: [{ type: "input_text", text: "Audit the codec." }] },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Reading." }] },
      { type: "function_call", call_id: "call_1", name: "Read", arguments: '{ "path": "a.ts" }' },
      { type: "function_call_output", call_id: "call_1", output: "export {}" },
      { type: "message", role: "user", content: [{ type: "input_text", text: "Go on." }] },
    ]);
    expect(body.store).toBe(false);
    expect(body.max_output_tokens).toBe(2048);
  });

  it("keeps items it does not reason about (a reasoning item) verbatim, in place", () => {
    const reasoning = { type: "reasoning", id: "rs_1", encrypted_content: "opaque", summary: [] };
    const reply = responsesItemsToAssistant([
      reasoning,
      { type: "function_call", call_id: "c1", name: "Read", arguments: "{}" },
    ]);
    const body = renderResponsesRequest({
      ...REQUEST,
      messages: [{ role: "user", content: "x" }, reply],
    } as LlmRequest);
    expect((body.input as unknown[]).slice(1)).toEqual([
      reasoning,
      { type: "function_call", call_id: "c1", name: "Read", arguments: "{}" },
    ]);
  });

  it("keeps a namespaced call's namespace: qualified in canonical form, sent back as the API returned it", () => {
    // The Codex CLI offers forkd mcp's tools in the namespace `mcp__forkd`; a child's model calls `fork` in it.
    const call = {
      type: "function_call",
      call_id: "c2",
      namespace: "mcp__forkd",
      name: "fork",
      arguments: '{"directive":"x"}',
    };
    const reply = responsesItemsToAssistant([call]);
    const block = reply.content[0] as Record<string, unknown>;
    expect(block).toMatchObject({
      type: "tool_use",
      id: "c2",
      name: "mcp__forkd__fork",
      input: { directive: "x" },
    });
    expect(DEFAULT_FORK_TOOL_NAMES).toContain(block.name);
    const body = renderResponsesRequest({
      ...REQUEST,
      messages: [{ role: "user", content: "x" }, reply],
    } as LlmRequest);
    expect((body.input as unknown[]).slice(1)).toEqual([call]);
    // A call without a namespace keeps its name as it is, even one that looks qualified.
    const plain = { type: "function_call", call_id: "c3", name: "mcp__forkd__fork", arguments: "{}" };
    const plainBody = renderResponsesRequest({
      ...REQUEST,
      messages: [{ role: "user", content: "x" }, responsesItemsToAssistant([plain])],
    } as LlmRequest);
    expect((plainBody.input as unknown[]).slice(1)).toEqual([plain]);
  });

  it("leaves out what only refers to a stored item, which a store: false request cannot resolve", () => {
    const encrypted = { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "opaque" };
    const message = {
      type: "message",
      id: "msg_1",
      role: "assistant",
      content: [{ type: "output_text", text: "Hm." }],
    };
    const search = { type: "web_search_call", id: "ws_1", status: "completed" };
    const reply = responsesItemsToAssistant([
      encrypted,
      { type: "reasoning", id: "rs_2", summary: [] },
      { type: "reasoning", id: "rs_3", summary: [], encrypted_content: null },
      search,
      { type: "item_reference", id: "msg_0" },
      message,
      { type: "function_call", id: "fc_1", call_id: "c1", name: "Read", arguments: "{}" },
    ]);
    const body = renderResponsesRequest({
      ...REQUEST,
      messages: [{ role: "user", content: "x" }, reply],
    } as LlmRequest);
    expect(body.store).toBe(false);
    // Whole items keep their ids, as the Codex CLI sends its own under store: false.
    expect((body.input as unknown[]).slice(1)).toEqual([
      encrypted,
      search,
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Hm." }] },
      { type: "function_call", call_id: "c1", name: "Read", arguments: "{}" },
    ]);
  });

  it("refuses a request whose prefix lives on the provider (previous_response_id)", () => {
    expect(() =>
      responsesRequestToCanonical({ model: "gpt-5", input: "hi", previous_response_id: "resp_1" }),
    ).toThrow(InvalidPrefixError);
  });
});

describe("native parents", () => {
  const parent = {
    model: "gpt-5",
    messages: [
      { role: "system", content: "You are qwen." },
      { role: "user", content: "Audit." },
    ],
    stream: true,
    tools: [{ type: "function", function: { name: "Read", parameters: { type: "object" } } }],
  };
  const reply = {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "Read", arguments: "{}" } }],
    annotations: [],
  };

  it("builds the child's body from the parent's own bytes, its reply as the API takes it back, then the child's messages", () => {
    const prefix = forkPrefixFromNative({ api: "openai-chat", request: parent, reply: [reply] });
    const plan = prepareForkRun({ runId: "child-1", prefix, cacheShared: true, directive: "Check it." });
    const body = renderNativeChildRequest(prefix.native!, plan.request, nativeMessageCount(prefix));
    const messages = body.messages as Record<string, unknown>[];
    expect(messages[0]).toBe(parent.messages[0]); // the parent's own objects, not copies
    expect(messages.slice(0, 2)).toEqual(parent.messages);
    expect(messages[2]).toEqual({ role: "assistant", content: null, tool_calls: reply.tool_calls });
    expect(messages[3]).toMatchObject({ role: "tool", tool_call_id: "c1" });
    expect(messages[4]).toMatchObject({ role: "user" });
    expect(Object.keys(body)).toEqual(Object.keys(parent));
  });

  it("sends a Responses parent's reply without its bare reasoning when the parent stores nothing, and whole when it stores", () => {
    const bare = { type: "reasoning", id: "rs_1", summary: [] };
    const call = { type: "function_call", id: "fc_1", call_id: "c1", name: "Read", arguments: "{}" };
    const input = [
      { type: "message", id: "msg_0", role: "user", content: [{ type: "input_text", text: "Audit." }] },
    ];
    const bodyFor = (store: boolean | undefined) => {
      const request = { model: "gpt-5", input, ...(store === undefined ? {} : { store }) };
      const prefix = forkPrefixFromNative({ api: "openai-responses", request, reply: [bare, call] });
      const plan = prepareForkRun({ runId: "child-1", prefix, cacheShared: true, directive: "Check it." });
      return renderNativeChildRequest(prefix.native!, plan.request, nativeMessageCount(prefix))
        .input as Record<string, unknown>[];
    };
    const stateless = bodyFor(false);
    // The parent's own items stay as it sent them: the API took them.
    expect(stateless[0]).toBe(input[0]);
    expect(stateless[1]).toBe(call);
    expect(stateless[2]).toMatchObject({ type: "function_call_output", call_id: "c1" });
    for (const store of [true, undefined]) expect(bodyFor(store).slice(1, 3)).toEqual([bare, call]);
  });

  it("sends the child's directive after a parent turn that has no reply yet, on both APIs", () => {
    const chat = forkPrefixFromNative({ api: "openai-chat", request: parent, reply: [] });
    const chatPlan = prepareForkRun({
      runId: "child-1",
      prefix: chat,
      cacheShared: true,
      directive: "Check it.",
    });
    const chatBody = renderNativeChildRequest(chat.native!, chatPlan.request, nativeMessageCount(chat));
    const messages = chatBody.messages as Record<string, unknown>[];
    expect(messages.slice(0, 2)).toEqual(parent.messages);
    expect(messages).toHaveLength(3);
    expect(messages[2]).toEqual({ role: "user", content: expect.stringContaining("Check it.") });
    expect(messages[2]!.content).not.toContain("Audit."); // the parent's own text is sent once

    const codex = {
      model: "gpt-5",
      input: [{ type: "message", role: "user", content: "Audit." }],
      stream: true,
    };
    const responses = forkPrefixFromNative({ api: "openai-responses", request: codex, reply: [] });
    const plan = prepareForkRun({
      runId: "child-2",
      prefix: responses,
      cacheShared: true,
      directive: "Check it.",
    });
    const body = renderNativeChildRequest(responses.native!, plan.request, nativeMessageCount(responses));
    const input = body.input as Record<string, unknown>[];
    expect(input[0]).toBe(codex.input[0]);
    expect(input).toHaveLength(2);
    expect(JSON.stringify(input[1])).toContain("Check it.");
  });

  it("adds nothing after a reply, nor after a parent turn that ends on its own assistant message", () => {
    // A reply of two blocks after a one-block user message: nothing of it is a joined directive.
    const talkative = { ...reply, content: "Reading it.", annotations: undefined };
    const withReply = forkPrefixFromNative({ api: "openai-chat", request: parent, reply: [talkative] });
    const plan = prepareForkRun({
      runId: "child-1",
      prefix: withReply,
      cacheShared: true,
      directive: "Check it.",
    });
    const body = renderNativeChildRequest(withReply.native!, plan.request, nativeMessageCount(withReply));
    const roles = (body.messages as { role: string }[]).map((message) => message.role);
    expect(roles.slice(0, 4)).toEqual(["system", "user", "assistant", "tool"]);
    expect(roles.filter((role) => role === "assistant")).toHaveLength(1);

    const prefilled = {
      ...parent,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Audit." },
            { type: "text", text: "Both files." },
          ],
        },
        { role: "assistant", content: "Sure:" },
      ],
    };
    const prefill = forkPrefixFromNative({ api: "openai-chat", request: prefilled, reply: [] });
    const next = prepareForkRun({
      runId: "child-2",
      prefix: prefill,
      cacheShared: true,
      directive: "Check it.",
    });
    const prefillBody = renderNativeChildRequest(prefill.native!, next.request, nativeMessageCount(prefill));
    const messages = prefillBody.messages as Record<string, unknown>[];
    expect(messages.slice(0, 2)).toEqual(prefilled.messages);
    expect(messages.slice(2).map((message) => message.role)).toEqual(["user"]);
    expect(messages[2]).toEqual({ role: "user", content: expect.stringContaining("Check it.") });
  });

  it("is caught by the recursion guard when the native parent is itself a fork child", () => {
    const prefix = forkPrefixFromNative({ api: "openai-chat", request: parent, reply: [reply] });
    const child = prepareForkRun({ runId: "child-1", prefix, cacheShared: true, directive: "Check it." });
    const childBody = renderNativeChildRequest(prefix.native!, child.request, nativeMessageCount(prefix));
    const asParent = forkPrefixFromNative({ api: "openai-chat", request: childBody, reply: [] });
    expect(() => assertMayFork({ querySource: "agent", messages: asParent.params.messages })).toThrow(
      /fork/i,
    );
  });
});

describe("prompt_cache_key", () => {
  it("is derived from the prefix hash, one shard per 15 children", () => {
    const hash = "ab".repeat(32);
    expect(derivedPromptCacheKey(hash)).toBe(`forkd-${"ab".repeat(16)}`);
    expect(derivedPromptCacheKey(hash, 2)).toBe(`forkd-${"ab".repeat(16)}-s2`);
    expect([0, 14, 15, 29, 30].map((i) => promptCacheShard(i))).toEqual([0, 0, 1, 1, 2]);
  });
});
