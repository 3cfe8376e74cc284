// Every branch of the OpenAI formats, compared whole (JSON text, so a key written as `undefined`
// or a reordered key shows): what each canonical block becomes, what each native shape reads back
// as, and the exact refusal of what has no OpenAI form.
import type { ContentBlock, MessageParam } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { InvalidPrefixError } from "../errors.js";
import type { LlmRequest } from "../llm-client.js";
import {
  chatAssistantToCanonical,
  chatRequestToCanonical,
  renderChatMessage,
  renderChatMessages,
  renderChatRequest,
} from "./chat-format.js";
import { blocksOf, systemText, toolArguments, toolResultText, toolUseBlock } from "./content.js";
import {
  chatReplyForRequest,
  forkPrefixFromNative,
  markParentBoundary,
  nativeMessageCount,
  renderNativeChildRequest,
} from "./native-prefix.js";
import {
  renderResponsesItems,
  renderResponsesMessage,
  renderResponsesRequest,
  responsesItemsToAssistant,
  responsesRequestToCanonical,
} from "./responses-format.js";

const json = (value: unknown) => JSON.stringify(value);
const user = (content: MessageParam["content"]): MessageParam => ({ role: "user", content });
const assistant = (content: MessageParam["content"]): MessageParam => ({ role: "assistant", content });
const base = { model: "gpt-5", max_tokens: 10, messages: [user("hi")] } as LlmRequest;

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidPrefixError);
    return (error as Error).message;
  }
  throw new Error("expected a refusal");
}

describe("content helpers", () => {
  it("blocksOf: a string is one text block, an empty string none, blocks stay", () => {
    expect(blocksOf("")).toEqual([]);
    expect(blocksOf("a")).toEqual([{ type: "text", text: "a" }]);
    const blocks = [{ type: "text", text: "b" }];
    expect(blocksOf(blocks)).toBe(blocks);
  });

  it("toolResultText: nothing, a string, an object, text and other blocks", () => {
    expect(toolResultText(undefined)).toBe("");
    expect(toolResultText(null)).toBe("");
    expect(toolResultText("out")).toBe("out");
    expect(toolResultText({ a: 1 })).toBe('{"a":1}');
    expect(
      toolResultText([
        { type: "text", text: "one" },
        { type: "image", text: 5 },
        { type: "text", text: 7 },
      ]),
    ).toBe('one\n{"type":"image","text":5}\n{"type":"text","text":7}');
  });

  it("toolArguments: the kept string, else the input as JSON, else {}", () => {
    expect(toolArguments({ type: "tool_use", input: { a: 1 }, openai_arguments: '{ "a": 1 }' })).toBe(
      '{ "a": 1 }',
    );
    expect(toolArguments({ type: "tool_use", input: { a: 1 }, openai_arguments: 5 })).toBe('{"a":1}');
    expect(toolArguments({ type: "tool_use" })).toBe("{}");
  });

  it("toolUseBlock: only a JSON object becomes the input", () => {
    for (const args of ["[1]", "null", "3", '"s"', "{", ""])
      expect(json(toolUseBlock("i", "n", args))).toBe(
        json({ type: "tool_use", id: "i", name: "n", input: {}, openai_arguments: args }),
      );
    expect(toolUseBlock("i", "n", '{"x":[1]}').input).toEqual({ x: [1] });
  });

  it("systemText: absent, a string, blocks joined by a blank line (a block without text is empty), else refused", () => {
    expect(systemText(undefined)).toBeUndefined();
    expect(systemText("s")).toBe("s");
    expect(systemText([{ text: "a" }, {}, { text: "b" }])).toBe("a\n\n\n\nb");
    expect(refusal(() => systemText(5))).toBe("system must be a string or text blocks");
  });
});

describe("Chat Completions rendering", () => {
  it("writes only the fields the request has", () => {
    expect(json(renderChatRequest(base))).toBe(
      json({ model: "gpt-5", messages: [{ role: "user", content: "hi" }], max_completion_tokens: 10 }),
    );
    expect(json(renderChatRequest({ ...base, tools: [] }))).not.toContain("tools");
    const full = renderChatRequest({
      ...base,
      system: "sys",
      tools: [{ name: "A" }, { name: "B", description: "d", input_schema: { type: "object" } }],
      tool_choice: { type: "any" },
      temperature: 0.5,
      top_p: 0.9,
      stop_sequences: ["x"],
    });
    expect(json(full)).toBe(
      json({
        model: "gpt-5",
        messages: [
          { role: "system", content: "sys" },
          { role: "user", content: "hi" },
        ],
        tools: [
          { type: "function", function: { name: "A", parameters: { type: "object", properties: {} } } },
          { type: "function", function: { name: "B", description: "d", parameters: { type: "object" } } },
        ],
        tool_choice: "required",
        temperature: 0.5,
        top_p: 0.9,
        stop: ["x"],
        max_completion_tokens: 10,
      }),
    );
    expect(renderChatRequest({ ...base, tool_choice: { type: "tool", name: "A" } }).tool_choice).toEqual({
      type: "function",
      function: { name: "A" },
    });
    expect(renderChatRequest({ ...base, tool_choice: { type: "auto" } }).tool_choice).toBe("auto");
    expect(renderChatRequest({ ...base, tool_choice: { type: "none" } }).tool_choice).toBe("none");
  });

  it("renders each kind of message", () => {
    expect(renderChatMessage({ role: "system", content: [{ type: "text", text: "s" }] })).toEqual([
      { role: "system", content: "s" },
    ]);
    expect(json(renderChatMessage(assistant("plain")))).toBe(json([{ role: "assistant", content: "plain" }]));
    expect(
      json(
        renderChatMessage(
          assistant([
            { type: "thinking", thinking: "t" },
            { type: "redacted_thinking", data: "r" },
            { type: "openai_item", item: {} },
            { type: "text", text: "a" },
            { type: "text", text: "b" },
          ]),
        ),
      ),
    ).toBe(json([{ role: "assistant", content: "ab" }]));
    expect(json(renderChatMessage(assistant([{ type: "tool_use", id: "c", name: "n", input: {} }])))).toBe(
      json([
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c", type: "function", function: { name: "n", arguments: "{}" } }],
        },
      ]),
    );
    expect(refusal(() => renderChatMessage(assistant([{ type: "image" }])))).toBe(
      "a image block has no OpenAI form (assistant message)",
    );
    expect(renderChatMessage(user("u"))).toEqual([{ role: "user", content: "u" }]);
    expect(renderChatMessage(user([{ type: "tool_result", tool_use_id: "c", content: "r" }]))).toEqual([
      { role: "tool", tool_call_id: "c", content: "r" },
    ]);
    expect(
      renderChatMessage(
        user([
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ]),
      ),
    ).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      },
    ]);
    const image = (source: unknown): ContentBlock => ({ type: "image", source });
    expect(
      renderChatMessage(user([image({ type: "base64", media_type: "image/png", data: "QQ==" })])),
    ).toEqual([
      { role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,QQ==" } }] },
    ]);
    expect(renderChatMessage(user([image({ type: "url", url: "https://x/y.png" })]))).toEqual([
      { role: "user", content: [{ type: "image_url", image_url: { url: "https://x/y.png" } }] },
    ]);
    expect(refusal(() => renderChatMessage(user([image({ type: "file" })])))).toBe(
      "a image block has no OpenAI form (image source)",
    );
    expect(refusal(() => renderChatMessage(user([image(undefined)])))).toBe(
      "a image block has no OpenAI form (image source)",
    );
    expect(refusal(() => renderChatMessage(user([{ type: "document" }])))).toBe(
      "a document block has no OpenAI form (user message)",
    );
  });

  it("renders a conversation from a given message on", () => {
    expect(renderChatMessages([user("a"), user("b"), user("c")], 1)).toEqual([
      { role: "user", content: "b" },
      { role: "user", content: "c" },
    ]);
  });
});

describe("Chat Completions reading", () => {
  it("reads an assistant message: text, then tool calls; arguments that are no string are {}", () => {
    expect(json(chatAssistantToCanonical({ role: "assistant", content: "" }))).toBe(
      json({ role: "assistant", content: [] }),
    );
    expect(
      json(
        chatAssistantToCanonical({
          role: "assistant",
          content: [{ type: "text", text: "x" }],
          tool_calls: [{ id: "c", function: { name: "n", arguments: { a: 1 } } }],
        }),
      ),
    ).toBe(json({ role: "assistant", content: [{ type: "text", text: "x" }, toolUseBlock("c", "n", "{}")] }));
    expect(refusal(() => chatAssistantToCanonical({ tool_calls: [{ function: { name: "n" } }] }))).toBe(
      "a tool call needs an id and a function name",
    );
    expect(refusal(() => chatAssistantToCanonical({ tool_calls: [{ id: "c", function: {} }] }))).toBe(
      "a tool call needs an id and a function name",
    );
    expect(refusal(() => chatAssistantToCanonical({ content: [{ type: "image_url" }] }))).toBe(
      "a image_url part is not supported in an assistant message",
    );
    expect(refusal(() => chatAssistantToCanonical({ content: 5 }))).toBe(
      "an assistant message: content must be a string or parts",
    );
  });

  it("reads a request: only what it has, system messages later in the conversation stay where they are", () => {
    expect(json(chatRequestToCanonical({ model: "m", messages: [] }))).toBe(
      json({ model: "m", messages: [] }),
    );
    const params = chatRequestToCanonical({
      model: "m",
      max_completion_tokens: 5,
      max_tokens: 9,
      messages: [
        { role: "user", content: "a" },
        { role: "user", content: "b" },
        { role: "developer", content: "mid" },
        { role: "tool", tool_call_id: "c", content: "r" },
        { role: "user", content: null },
      ],
      tools: [{ type: "function", function: { name: "T", description: "d" } }],
    });
    expect(json(params)).toBe(
      json({
        model: "m",
        max_tokens: 5,
        tools: [{ name: "T", description: "d", input_schema: { type: "object", properties: {} } }],
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "a" },
              { type: "text", text: "b" },
            ],
          },
          { role: "system", content: "mid" },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "c", content: "r" },
              { type: "text", text: "" },
            ],
          },
        ],
      }),
    );
    // A tool result after a user turn that holds text starts a turn of its own.
    const after = chatRequestToCanonical({
      model: "m",
      messages: [
        { role: "user", content: "q" },
        { role: "tool", tool_call_id: "c", content: "r" },
      ],
    });
    expect(after.messages).toHaveLength(2);
    expect(chatRequestToCanonical({ model: "m", max_tokens: 9, messages: [] }).max_tokens).toBe(9);
  });

  it("refuses what it cannot read, naming where", () => {
    expect(refusal(() => chatRequestToCanonical({ messages: [] }))).toBe("model is required");
    expect(refusal(() => chatRequestToCanonical({ model: "m" }))).toBe("messages must be an array");
    expect(
      refusal(() =>
        chatRequestToCanonical({ model: "m", messages: [{ role: "user", content: "a" }, { role: "x" }] }),
      ),
    ).toBe("messages[1]: unknown role x");
    expect(
      refusal(() => chatRequestToCanonical({ model: "m", messages: [], tools: [{ type: "web_search" }] })),
    ).toBe("tools[0] must be a function tool with a name");
    expect(
      refusal(() => chatRequestToCanonical({ model: "m", messages: [{ role: "system", content: 4 }] })),
    ).toBe("messages[0]: content must be a string or parts");
  });
});

describe("Responses", () => {
  it("writes only the fields the request has", () => {
    expect(json(renderResponsesRequest(base))).toBe(
      json({
        model: "gpt-5",
        input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
        max_output_tokens: 10,
        store: false,
        include: ["reasoning.encrypted_content"],
      }),
    );
    // A model that does not reason is not asked for its reasoning.
    expect(renderResponsesRequest({ ...base, model: "gpt-4.1" }).include).toBeUndefined();
    const full = renderResponsesRequest({
      ...base,
      system: "s",
      tools: [{ name: "A" }],
      tool_choice: { type: "tool", name: "A" },
      temperature: 0,
      top_p: 1,
    });
    expect(json(full)).toBe(
      json({
        model: "gpt-5",
        instructions: "s",
        input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
        tools: [
          { type: "function", name: "A", parameters: { type: "object", properties: {} }, strict: false },
        ],
        tool_choice: { type: "function", name: "A" },
        temperature: 0,
        top_p: 1,
        max_output_tokens: 10,
        store: false,
        include: ["reasoning.encrypted_content"],
      }),
    );
    expect(renderResponsesRequest({ ...base, tool_choice: { type: "any" } }).tool_choice).toBe("required");
    expect(renderResponsesRequest({ ...base, tool_choice: { type: "auto" } }).tool_choice).toBe("auto");
    expect(renderResponsesRequest({ ...base, tools: [] }).tools).toBeUndefined();
    expect(
      renderResponsesRequest({
        ...base,
        tools: [{ name: "B", description: "d", input_schema: { type: "object" } }],
      }).tools,
    ).toEqual([
      { type: "function", name: "B", description: "d", parameters: { type: "object" }, strict: false },
    ]);
  });

  it("renders each kind of message as items, in order", () => {
    expect(renderResponsesMessage({ role: "system", content: "s" })).toEqual([
      { type: "message", role: "developer", content: [{ type: "input_text", text: "s" }] },
    ]);
    expect(
      json(
        renderResponsesMessage(
          assistant([
            { type: "thinking", thinking: "t" },
            { type: "text", text: "a" },
            { type: "tool_use", id: "c", name: "n", input: { q: 1 } },
            { type: "text", text: "b" },
          ]),
        ),
      ),
    ).toBe(
      json([
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "a" }] },
        { type: "function_call", call_id: "c", name: "n", arguments: '{"q":1}' },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "b" }] },
      ]),
    );
    expect(
      json(
        renderResponsesMessage(
          user([
            { type: "text", text: "x" },
            { type: "tool_result", tool_use_id: "c", content: [{ type: "text", text: "r" }] },
          ]),
        ),
      ),
    ).toBe(
      json([
        { type: "message", role: "user", content: [{ type: "input_text", text: "x" }] },
        { type: "function_call_output", call_id: "c", output: "r" },
      ]),
    );
    expect(
      refusal(() => renderResponsesMessage(user([{ type: "tool_use", id: "c", name: "n", input: {} }]))),
    ).toBe("a tool_use block has no OpenAI form (user message)");
    expect(
      refusal(() => renderResponsesMessage(assistant([{ type: "tool_result", tool_use_id: "c" }]))),
    ).toBe("a tool_result block has no OpenAI form (assistant message)");
    expect(refusal(() => renderResponsesMessage(user([{ type: "thinking", thinking: "t" }])))).toBe(
      "a thinking block has no OpenAI form (user message)",
    );
    expect(renderResponsesItems([user("a"), user("b")], 1)).toEqual([
      { type: "message", role: "user", content: [{ type: "input_text", text: "b" }] },
    ]);
  });

  it("reads output items: messages, function calls (arguments that are no string are {}), the rest verbatim", () => {
    const item = { type: "web_search_call", id: "ws" };
    expect(
      json(
        responsesItemsToAssistant([
          { role: "assistant", content: "plain" },
          { type: "message", content: [{ type: "output_text", text: "t" }] },
          { type: "function_call", call_id: "c", name: "n", arguments: 1 },
          item,
        ]),
      ),
    ).toBe(
      json({
        role: "assistant",
        content: [
          { type: "text", text: "plain" },
          { type: "text", text: "t" },
          toolUseBlock("c", "n", "{}"),
          { type: "openai_item", item },
        ],
      }),
    );
    expect(
      refusal(() => responsesItemsToAssistant([{ type: "message", content: [{ type: "refusal" }] }])),
    ).toBe("an assistant message: a refusal part is not supported");
    expect(refusal(() => responsesItemsToAssistant([{ type: "message", content: 3 }]))).toBe(
      "an assistant message: content must be a string or parts",
    );
  });

  it("reads a request: instructions and leading developer messages, turns grouped, hosted tools left in the bytes", () => {
    expect(json(responsesRequestToCanonical({ model: "m" }))).toBe(json({ model: "m", messages: [] }));
    expect(json(responsesRequestToCanonical({ model: "m", input: "hi", previous_response_id: null }))).toBe(
      json({ model: "m", messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }] }),
    );
    const reasoning = { type: "reasoning", id: "r" };
    const params = responsesRequestToCanonical({
      model: "m",
      instructions: "i",
      max_output_tokens: 7,
      input: [
        { role: "developer", content: "d" },
        { role: "user", content: [{ type: "input_text", text: "q" }] },
        reasoning,
        { type: "function_call", call_id: "c", name: "n", arguments: "{}" },
        { type: "function_call_output", call_id: "c", output: { ok: true } },
        { type: "function_call_output", call_id: "c2", output: "two" },
        { type: "message", role: "system", content: "mid" },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "a" }] },
        { role: "user", content: "again" },
      ],
      tools: [
        { type: "function", name: "n", description: "d" },
        { type: "web_search" },
        { type: "function" },
      ],
    });
    expect(json(params)).toBe(
      json({
        model: "m",
        max_tokens: 7,
        system: "i\n\nd",
        tools: [{ name: "n", description: "d", input_schema: { type: "object", properties: {} } }],
        messages: [
          { role: "user", content: [{ type: "text", text: "q" }] },
          {
            role: "assistant",
            content: [{ type: "openai_item", item: reasoning }, toolUseBlock("c", "n", "{}")],
          },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "c", content: '{"ok":true}' },
              { type: "tool_result", tool_use_id: "c2", content: "two" },
            ],
          },
          { role: "system", content: "mid" },
          { role: "assistant", content: [{ type: "text", text: "a" }] },
          { role: "user", content: [{ type: "text", text: "again" }] },
        ],
      }),
    );
    expect(refusal(() => responsesRequestToCanonical({ input: "x" }))).toBe("model is required");
    expect(
      refusal(() => responsesRequestToCanonical({ model: "m", input: [{ role: "user", content: 1 }] })),
    ).toBe("input[0]: content must be a string or parts");
  });
});

describe("native prefixes", () => {
  const chat = { model: "gpt-5", messages: [{ role: "user", content: "q" }], stream: true };
  const callReply = {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c", type: "function", function: { name: "n", arguments: "{}" } }],
  };

  it("keeps of a Chat reply only what the API takes back, role first", () => {
    expect(
      json(chatReplyForRequest({ annotations: [], content: "x", audio: null, role: "other", refusal: null })),
    ).toBe(json({ role: "assistant", content: "x", refusal: null }));
    expect(json(chatReplyForRequest({ tool_calls: [], content: "x" }))).toBe(
      json({ role: "assistant", content: "x", tool_calls: [] }),
    );
  });

  it("derives params and reply; a Chat reply is at most one message", () => {
    const prefix = forkPrefixFromNative({ api: "openai-chat", request: chat, reply: [callReply] });
    expect(prefix.reply?.content).toEqual([toolUseBlock("c", "n", "{}")]);
    expect(forkPrefixFromNative({ api: "openai-chat", request: chat, reply: [] }).reply).toBeUndefined();
    expect(
      refusal(() =>
        forkPrefixFromNative({ api: "openai-chat", request: chat, reply: [callReply, callReply] }),
      ),
    ).toBe("a Chat Completions reply is one assistant message");
    const responses = forkPrefixFromNative({
      api: "openai-responses",
      request: { model: "gpt-5", input: "q" },
      reply: [{ type: "function_call", call_id: "c", name: "n", arguments: "{}" }],
    });
    expect(responses.reply?.content).toEqual([toolUseBlock("c", "n", "{}")]);
    expect(
      "reply" in
        forkPrefixFromNative({ api: "openai-responses", request: { model: "gpt-5", input: "q" }, reply: [] }),
    ).toBe(false);
  });

  it("counts the messages the native bytes stand for: the reply joins a trailing assistant turn", () => {
    const reply = { role: "assistant" as const, content: [{ type: "text", text: "r" }] };
    expect(nativeMessageCount({ params: { model: "m", messages: [user("a")] }, reply })).toBe(2);
    expect(
      nativeMessageCount({ params: { model: "m", messages: [user("a"), assistant("pre")] }, reply }),
    ).toBe(2);
    expect(
      nativeMessageCount({
        params: { model: "m", messages: [user("a")] },
        reply: { role: "assistant", content: [] },
      }),
    ).toBe(1);
    expect(nativeMessageCount({ params: { model: "m", messages: [user("a")] } })).toBe(1);
  });

  it("renders the child's body: the model is the request's, a string input becomes a user item", () => {
    const tail = [user("child")];
    const chatBody = renderNativeChildRequest(
      { api: "openai-chat", request: chat, reply: [] },
      { model: "gpt-5-mini", messages: [user("q"), ...tail] },
      1,
    );
    expect(json(chatBody)).toBe(
      json({
        model: "gpt-5-mini",
        messages: [
          { role: "user", content: "q" },
          { role: "user", content: "child" },
        ],
        stream: true,
      }),
    );
    const same = renderNativeChildRequest(
      { api: "openai-chat", request: chat, reply: [] },
      { model: "gpt-5", messages: [user("q")] },
      1,
    );
    expect(same.model).toBe("gpt-5");
    const responsesBody = renderNativeChildRequest(
      {
        api: "openai-responses",
        request: { model: "gpt-5", input: "q", store: false },
        reply: [{ type: "reasoning", id: "r", encrypted_content: "e" }],
      },
      { model: "gpt-5", messages: [user("q"), ...tail] },
      1,
    );
    expect(json(responsesBody)).toBe(
      json({
        model: "gpt-5",
        input: [
          { role: "user", content: "q" },
          { type: "reasoning", id: "r", encrypted_content: "e" },
          { type: "message", role: "user", content: [{ type: "input_text", text: "child" }] },
        ],
        store: false,
      }),
    );
  });
});

describe("breakpoints on a model that takes them (gpt-5.6 on)", () => {
  const BP = { mode: "explicit" };
  const cc = { cache_control: { type: "ephemeral" } };
  const marked: MessageParam = {
    role: "user",
    content: [
      { type: "tool_result", tool_use_id: "c", content: "p", ...cc },
      { type: "text", text: "t", ...cc },
      { type: "text", text: "plain" },
    ] as ContentBlock[],
  };

  it("mark a user block and a tool result that carry cache_control, in both formats; never before gpt-5.6", () => {
    expect(json(renderResponsesMessage(marked, true))).toBe(
      json([
        {
          type: "function_call_output",
          call_id: "c",
          output: [{ type: "input_text", text: "p", prompt_cache_breakpoint: BP }],
        },
        {
          type: "message",
          role: "user",
          content: [
            { type: "input_text", text: "t", prompt_cache_breakpoint: BP },
            { type: "input_text", text: "plain" },
          ],
        },
      ]),
    );
    expect(json(renderChatMessage(marked, true))).toBe(
      json([
        {
          role: "tool",
          tool_call_id: "c",
          content: [{ type: "text", text: "p", prompt_cache_breakpoint: BP }],
        },
        {
          role: "user",
          content: [
            { type: "text", text: "t", prompt_cache_breakpoint: BP },
            { type: "text", text: "plain" },
          ],
        },
      ]),
    );
    // One marked text part stays a part (a string has no block to mark); unmarked, a string.
    const one = user([{ type: "text", text: "t", ...cc }] as ContentBlock[]);
    expect(json(renderChatMessage(one, true))).toBe(
      json([{ role: "user", content: [{ type: "text", text: "t", prompt_cache_breakpoint: BP }] }]),
    );
    expect(json(renderChatMessage(one, false))).toBe(json([{ role: "user", content: "t" }]));
    // Output takes none.
    const said = assistant([{ type: "text", text: "a", ...cc }] as ContentBlock[]);
    expect(json(renderResponsesMessage(said, true))).not.toContain("prompt_cache_breakpoint");
    // By model: gpt-5.6-sol marks, gpt-5.5 renders as before.
    const request = (model: string) => ({ ...base, model, messages: [marked] }) as LlmRequest;
    expect(json(renderResponsesRequest(request("gpt-5.6-sol")))).toContain("prompt_cache_breakpoint");
    expect(json(renderChatRequest(request("gpt-5.6-sol")))).toContain("prompt_cache_breakpoint");
    expect(json(renderResponsesRequest(request("gpt-5.5")))).not.toContain("prompt_cache_breakpoint");
    expect(json(renderChatRequest(request("gpt-5.5")))).not.toContain("prompt_cache_breakpoint");
    expect(json(renderResponsesItems([marked], 0, true))).toBe(json(renderResponsesMessage(marked, true)));
    expect(json(renderChatMessages([marked], 0, true))).toBe(json(renderChatMessage(marked, true)));
  });

  it("mark a native parent's last input block, and nothing else of its bytes", () => {
    const last = {
      role: "user",
      content: [
        { type: "text", text: "a" },
        { type: "text", text: "q" },
      ],
    };
    const own = { role: "system", content: [{ type: "text", text: "s", prompt_cache_breakpoint: BP }] };
    const request = { model: "gpt-5.6-terra", messages: [own, last] };
    const child = (model: string, reply: Record<string, unknown>[] = []) => {
      const native = { api: "openai-chat" as const, request, reply };
      const { params } = forkPrefixFromNative(native);
      const messages = [...params.messages, user("x")];
      return renderNativeChildRequest(native, { model, messages }, params.messages.length)
        .messages as unknown[];
    };
    expect(json(child("gpt-5.6-terra").slice(0, 2))).toBe(
      json([
        own,
        {
          role: "user",
          content: [
            { type: "text", text: "a" },
            { type: "text", text: "q", prompt_cache_breakpoint: BP },
          ],
        },
      ]),
    );
    // The parent's objects are not changed.
    expect(json(request.messages[1])).toBe(json(last));
    // Before gpt-5.6, as sent; with a reply after it, marked the same (the parent's request ended there).
    expect(json(child("gpt-5.5").slice(0, 2))).toBe(json([own, last]));
    const reply = { role: "assistant", content: "r" };
    expect(json(child("gpt-5.6-terra", [reply]).slice(0, 3))).toBe(
      json([...child("gpt-5.6-terra").slice(0, 2), reply]),
    );
    // A string content, an output block last, or a breakpoint of the parent's own in it: as sent.
    const as = (item: unknown) => markParentBoundary([{ role: "developer", content: "d" }, item]);
    for (const item of [
      { role: "user", content: "q" },
      { role: "user", content: [] },
      { role: "assistant", content: [{ type: "output_text", text: "o" }] },
      {
        role: "user",
        content: [
          { type: "input_text", text: "q", prompt_cache_breakpoint: BP },
          { type: "input_text", text: "r" },
        ],
      },
      { role: "user", content: [null] },
      { type: "function_call", call_id: "c" },
    ])
      expect(json(as(item)), json(item)).toBe(json([{ role: "developer", content: "d" }, item]));
    for (const type of [
      "input_text",
      "input_image",
      "input_file",
      "text",
      "image_url",
      "file",
      "input_audio",
    ])
      expect(json(as({ role: "user", content: [{ type: "x" }, { type }] }))).toBe(
        json([
          { role: "developer", content: "d" },
          { role: "user", content: [{ type: "x" }, { type, prompt_cache_breakpoint: BP }] },
        ]),
      );
    expect(markParentBoundary([])).toEqual([]);
    // Every item before the last is kept.
    expect(json(markParentBoundary(["a", "b", { content: [{ type: "text" }] }]))).toBe(
      json(["a", "b", { content: [{ type: "text", prompt_cache_breakpoint: BP }] }]),
    );
    // Earlier blocks, whatever they are, are kept as they were; only the last gains the marker.
    expect(json(as({ role: "user", content: [null, { type: "x" }, { type: "text", text: "t" }] }))).toBe(
      json([
        { role: "developer", content: "d" },
        {
          role: "user",
          content: [null, { type: "x" }, { type: "text", text: "t", prompt_cache_breakpoint: BP }],
        },
      ]),
    );
    // A tool output's parts: its last part; a string output has none.
    const output = {
      type: "function_call_output",
      call_id: "c",
      output: [{ type: "input_text", text: "o" }],
    };
    expect(json(as(output))).toBe(
      json([
        { role: "developer", content: "d" },
        { ...output, output: [{ type: "input_text", text: "o", prompt_cache_breakpoint: BP }] },
      ]),
    );
    const plain = { type: "function_call_output", call_id: "c", output: "o" };
    expect(json(as(plain))).toBe(json([{ role: "developer", content: "d" }, plain]));
  });
});

describe("no key is written without a value, and refusals say where", () => {
  const keys = (value: unknown) => Object.keys(value as object);

  it("Responses bodies and params hold only the fields that have values", () => {
    expect(keys(renderResponsesRequest({ ...base, model: "gpt-4.1" }))).toEqual([
      "model",
      "input",
      "max_output_tokens",
      "store",
    ]);
    expect(keys((renderResponsesRequest({ ...base, tools: [{ name: "A" }] }).tools as unknown[])[0])).toEqual(
      ["type", "name", "parameters", "strict"],
    );
    expect(keys(responsesRequestToCanonical({ model: "m", input: [] }))).toEqual(["model", "messages"]);
    const tools = responsesRequestToCanonical({
      model: "m",
      tools: [
        { type: "function", name: "n" },
        { type: "custom", name: "apply_patch" },
      ],
    }).tools;
    expect(tools).toHaveLength(1);
    expect(keys(tools![0])).toEqual(["name", "input_schema"]);
  });

  it("Chat replies and native prefixes hold only the fields that have values", () => {
    expect(keys(chatReplyForRequest({ content: "x" }))).toEqual(["role", "content"]);
    expect(
      "reply" in
        forkPrefixFromNative({ api: "openai-chat", request: { model: "m", messages: [] }, reply: [] }),
    ).toBe(false);
  });

  it("reads more Responses shapes: parts joined, leading system items, developer items later, string arguments, a typeless user item", () => {
    expect(
      json(
        responsesRequestToCanonical({
          model: "m",
          input: [
            { role: "system", content: "s" },
            {
              role: "user",
              content: [
                { type: "input_text", text: "a" },
                { type: "input_text", text: "b" },
              ],
            },
            { type: "message", role: "developer", content: "late" },
          ],
        }),
      ),
    ).toBe(
      json({
        model: "m",
        system: "s",
        messages: [
          { role: "user", content: [{ type: "text", text: "ab" }] },
          { role: "system", content: "late" },
        ],
      }),
    );
    expect(
      responsesItemsToAssistant([{ type: "function_call", call_id: "c", name: "n", arguments: '{"a":1}' }])
        .content[0],
    ).toMatchObject({ input: { a: 1 } });
    expect(responsesItemsToAssistant([{ role: "user", content: "x" }]).content[0]!.type).toBe("openai_item");
    expect(
      json(
        renderResponsesMessage(
          assistant([
            { type: "redacted_thinking", data: "r" },
            { type: "text", text: "t" },
          ]),
        ),
      ),
    ).toBe(json([{ type: "message", role: "assistant", content: [{ type: "output_text", text: "t" }] }]));
  });

  it("names the offending place in each refusal", () => {
    const at = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return [(error as InvalidPrefixError).message, (error as InvalidPrefixError).path];
      }
      return undefined;
    };
    expect(at(() => responsesRequestToCanonical({ input: [] }))).toEqual(["model is required", ["model"]]);
    expect(at(() => responsesRequestToCanonical({ model: "m", previous_response_id: "r" }))).toEqual([
      "a request with previous_response_id does not carry its whole prefix; fork from a request that sends its input in full",
      ["previous_response_id"],
    ]);
    expect(
      at(() => responsesRequestToCanonical({ model: "m", input: [{ role: "system", content: 1 }] }))?.[0],
    ).toBe("input[0]: content must be a string or parts");
    expect(
      at(() =>
        responsesRequestToCanonical({
          model: "m",
          input: [
            { role: "user", content: "u" },
            { role: "system", content: 1 },
          ],
        }),
      )?.[0],
    ).toBe("input[1]: content must be a string or parts");
    const callReply = { role: "assistant", tool_calls: [] };
    expect(
      at(() =>
        forkPrefixFromNative({
          api: "openai-chat",
          request: { model: "m", messages: [] },
          reply: [callReply, callReply],
        }),
      ),
    ).toEqual(["a Chat Completions reply is one assistant message", ["native", "reply"]]);
    expect(at(() => chatRequestToCanonical({ messages: [] }))).toEqual(["model is required", ["model"]]);
    expect(at(() => chatRequestToCanonical({ model: "m", messages: 1 }))).toEqual([
      "messages must be an array",
      ["messages"],
    ]);
  });

  it("counts a reply after no message, and keeps an array input's items as they are", () => {
    expect(
      nativeMessageCount({
        params: { model: "m", messages: [] },
        reply: { role: "assistant", content: [{ type: "text", text: "r" }] },
      }),
    ).toBe(1);
    const item = { type: "message", role: "user", content: [{ type: "input_text", text: "q" }] };
    const body = renderNativeChildRequest(
      { api: "openai-responses", request: { input: [item], model: "gpt-5" }, reply: [] },
      { model: "gpt-5", messages: [user("q")] },
      1,
    );
    expect((body.input as unknown[])[0]).toBe(item);
    expect(keys(body)).toEqual(["input", "model"]);
  });

  it("Chat bodies, tools and params hold only the fields that have values", () => {
    expect(keys(renderChatRequest(base))).toEqual(["model", "messages", "max_completion_tokens"]);
    const tool = (renderChatRequest({ ...base, tools: [{ name: "A" }] }).tools as { function: object }[])[0]!;
    expect(keys(tool.function)).toEqual(["name", "parameters"]);
    expect(keys(chatRequestToCanonical({ model: "m", messages: [] }))).toEqual(["model", "messages"]);
    const read = chatRequestToCanonical({
      model: "m",
      messages: [],
      tools: [{ type: "function", function: { name: "T" } }],
    });
    expect(keys(read.tools![0])).toEqual(["name", "input_schema"]);
    expect(keys(chatAssistantToCanonical({ content: "x" }).content[0])).toEqual(["type", "text"]);
  });

  it("reads more Chat shapes: a tool message first, a later system message, a tool result after text", () => {
    expect(
      json(
        chatRequestToCanonical({ model: "m", messages: [{ role: "tool", tool_call_id: "c", content: "r" }] })
          .messages,
      ),
    ).toBe(json([{ role: "user", content: [{ type: "tool_result", tool_use_id: "c", content: "r" }] }]));
    expect(
      chatRequestToCanonical({
        model: "m",
        messages: [
          { role: "user", content: "u" },
          { role: "system", content: "s" },
        ],
      }).messages[1],
    ).toEqual({
      role: "system",
      content: "s",
    });
    const mixed = chatRequestToCanonical({
      model: "m",
      messages: [
        { role: "tool", tool_call_id: "a", content: "1" },
        { role: "user", content: "x" },
        { role: "tool", tool_call_id: "b", content: "2" },
      ],
    }).messages;
    expect(mixed.map((m) => (m.content as unknown[]).length)).toEqual([2, 1]);
  });

  it("names the offending Chat message or tool", () => {
    const at = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return [(error as InvalidPrefixError).message, (error as InvalidPrefixError).path];
      }
      return undefined;
    };
    const bad = (role: string) =>
      chatRequestToCanonical({
        model: "m",
        messages: [
          { role: "user", content: "u" },
          { role, tool_call_id: "c", content: 1 },
        ],
      });
    for (const role of ["system", "developer", "tool", "user"])
      expect(at(() => bad(role))?.[0]).toBe("messages[1]: content must be a string or parts");
    expect(at(() => chatRequestToCanonical({ model: "m", messages: [{ role: "bot" }] }))).toEqual([
      "messages[0]: unknown role bot",
      ["messages", 0],
    ]);
    expect(
      at(() => chatRequestToCanonical({ model: "m", messages: [], tools: [{ type: "function" }] })),
    ).toEqual(["tools[0] must be a function tool with a name", ["tools", 0]]);
    expect(
      at(() =>
        chatRequestToCanonical({
          model: "m",
          messages: [],
          tools: [{ type: "custom", function: { name: "x" } }],
        }),
      )?.[0],
    ).toBe("tools[0] must be a function tool with a name");
    expect(at(() => chatAssistantToCanonical({ tool_calls: [{ id: "c" }] }))).toEqual([
      "a tool call needs an id and a function name",
      ["tool_calls"],
    ]);
  });
});
