// The Gemini format: rendering is message-local (a child's contents start with its parent's), parts
// read from Gemini go back as they came, function responses answer their call by name and id, native
// requests read back as the same conversation, a child names one explicit cache of its prefix
// instead of re-sending it, and a native fork child is still caught by the recursion guard.
import type { CacheSafeParams, NativePrefix } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { FORK_PLACEHOLDER_RESULT } from "../directive.js";
import { InvalidPrefixError } from "../errors.js";
import { prepareForkRun } from "../fork-run-plan.js";
import type { LlmRequest } from "../llm-client.js";
import { forkPrefixFromNative } from "../openai/native-prefix.js";
import { assertMayFork } from "../recursion-guard.js";
import { GEMINI_CACHE_DISPLAY_PREFIX, geminiCacheDisplayName } from "./cache-name.js";
import {
  geminiCachedPrefix,
  geminiForkPrefixFromNative,
  geminiSharedMessageCount,
  renderGeminiChildRequest,
} from "./child-request.js";
import {
  GEMINI_PART_BLOCK,
  GEMINI_PART_FIELD,
  geminiModelToAssistant,
  geminiRequestToCanonical,
  renderGeminiContents,
  renderGeminiRequest,
  toolCallsById,
} from "./format.js";

const PARAMS: CacheSafeParams = {
  model: "gemini-2.5-flash",
  max_tokens: 2048,
  system: [
    { type: "text", text: "You review code.", cache_control: { type: "ephemeral" } },
    { type: "text", text: "Be brief." },
  ],
  tools: [
    {
      name: "Read",
      description: "Reads a file",
      input_schema: { type: "object", properties: { path: { type: "string" } } },
    },
    { name: "Stat", input_schema: { type: "object" } },
  ],
  messages: [
    { role: "user", content: "Audit the codec." },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "hmm", signature: "s" },
        { type: "text", text: "Reading." },
        { type: "tool_use", id: "toolu_1", name: "Read", input: { path: "a.ts" } },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "export {}" }] },
        { type: "text", text: "Go on.", cache_control: { type: "ephemeral" } },
      ],
    },
  ],
};
const REQUEST = { ...PARAMS, max_tokens: 2048 } as LlmRequest;

describe("rendering a canonical request", () => {
  it("renders contents message by message, systemInstruction, one functionDeclarations tool and generationConfig", () => {
    const body = renderGeminiRequest({ ...REQUEST, temperature: 0.5, top_p: 0.9, stop_sequences: ["END"] });
    expect(body).toEqual({
      contents: [
        { role: "user", parts: [{ text: "Audit the codec." }] },
        {
          role: "model",
          parts: [{ text: "Reading." }, { functionCall: { name: "Read", args: { path: "a.ts" } } }],
        },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "Read", response: { output: "export {}" } } },
            { text: "Go on." },
          ],
        },
      ],
      systemInstruction: { parts: [{ text: "You review code.\n\nBe brief." }] },
      tools: [
        {
          functionDeclarations: [
            {
              name: "Read",
              description: "Reads a file",
              parametersJsonSchema: { type: "object", properties: { path: { type: "string" } } },
            },
            { name: "Stat", parametersJsonSchema: { type: "object" } },
          ],
        },
      ],
      generationConfig: { maxOutputTokens: 2048, temperature: 0.5, topP: 0.9, stopSequences: ["END"] },
    });
    expect(Object.keys(body)).toEqual(["contents", "systemInstruction", "tools", "generationConfig"]);
  });

  it("leaves out what a request does not have", () => {
    const body = renderGeminiRequest({ model: "gemini-2.5-flash", max_tokens: 10, messages: [], tools: [] });
    expect(body).toEqual({ contents: [], generationConfig: { maxOutputTokens: 10 } });
    const plain = renderGeminiRequest({
      model: "gemini-2.5-flash",
      max_tokens: 10,
      system: "Be kind.",
      tools: [{ name: "T" }],
      messages: [{ role: "user", content: "" }],
    } as LlmRequest);
    expect(plain.systemInstruction).toEqual({ parts: [{ text: "Be kind." }] });
    expect(plain.tools).toEqual([
      { functionDeclarations: [{ name: "T", parametersJsonSchema: { type: "object", properties: {} } }] },
    ]);
    expect(plain.contents).toEqual([{ role: "user", parts: [] }]);
  });

  it("maps tool_choice to toolConfig", () => {
    const config = (choice: LlmRequest["tool_choice"]) =>
      renderGeminiRequest({ ...REQUEST, tool_choice: choice }).toolConfig;
    expect(config({ type: "any" })).toEqual({ functionCallingConfig: { mode: "ANY" } });
    expect(config({ type: "tool", name: "Read" })).toEqual({
      functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["Read"] },
    });
    expect(config({ type: "none" })).toEqual({ functionCallingConfig: { mode: "NONE" } });
    expect(config({ type: "auto" })).toEqual({ functionCallingConfig: { mode: "AUTO" } });
    expect(renderGeminiRequest(REQUEST).toolConfig).toBeUndefined();
  });

  it("renders a system message mid-conversation as a user turn, and base64 images as inlineData", () => {
    const contents = renderGeminiContents([
      { role: "system", content: "Now be terse." },
      {
        role: "user",
        content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "AAA=" } }],
      },
    ] as LlmRequest["messages"]);
    expect(contents).toEqual([
      { role: "user", parts: [{ text: "Now be terse." }] },
      { role: "user", parts: [{ inlineData: { mimeType: "image/png", data: "AAA=" } }] },
    ]);
  });

  it("refuses what has no Gemini form, saying which block", () => {
    const render = (messages: unknown) => () => renderGeminiContents(messages as LlmRequest["messages"]);
    expect(
      render([{ role: "user", content: [{ type: "image", source: { type: "url", url: "u" } }] }]),
    ).toThrow(/image block has no Gemini form \(image source\)/);
    expect(render([{ role: "user", content: [{ type: "document" }] }])).toThrow(
      /document block has no Gemini form \(user message\)/,
    );
    expect(render([{ role: "assistant", content: [{ type: "tool_result", tool_use_id: "x" }] }])).toThrow(
      /tool_result block has no Gemini form \(assistant message\)/,
    );
    expect(render([{ role: "user", content: [{ type: "tool_result", tool_use_id: "ghost" }] }])).toThrow(
      InvalidPrefixError,
    );
    expect(render([{ role: "user", content: [{ type: "tool_result", tool_use_id: "ghost" }] }])).toThrow(
      /ghost/,
    );
  });

  it("renders a tool result's content as text whatever its shape", () => {
    const call = { role: "assistant", content: [{ type: "tool_use", id: "t", name: "Read", input: {} }] };
    const output = (content: unknown) => {
      const [, answer] = renderGeminiContents([
        call,
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content }] },
      ] as LlmRequest["messages"]);
      return (answer!.parts[0]!.functionResponse as { response: { output: string } }).response.output;
    };
    expect(output(undefined)).toBe("");
    expect(output(null)).toBe("");
    expect(output("plain")).toBe("plain");
    expect(output({ a: 1 })).toBe('{"a":1}');
    expect(output([{ type: "text", text: "a" }, { type: "image" }])).toBe('a\n{"type":"image"}');
  });

  it("renders only the messages after `from`, answering calls made before it", () => {
    const tail = renderGeminiContents(REQUEST.messages, 2);
    expect(tail).toHaveLength(1);
    expect(tail[0]!.parts[0]).toEqual({
      functionResponse: { name: "Read", response: { output: "export {}" } },
    });
  });
});

describe("reading Gemini back", () => {
  it("keeps each part beside its block, ids calls by their own id or by name, turn and place", () => {
    const parts = [
      { text: "thinking…", thought: true },
      { text: "Reading." },
      { functionCall: { name: "Read", args: { path: "a.ts" } }, thoughtSignature: "sig" },
      { functionCall: { id: "own", name: "Stat" } },
      { executableCode: { code: "1" } },
    ];
    const message = geminiModelToAssistant({ parts }, 4);
    expect(message).toEqual({
      role: "assistant",
      content: [
        { type: GEMINI_PART_BLOCK, [GEMINI_PART_FIELD]: parts[0] },
        { type: "text", text: "Reading.", [GEMINI_PART_FIELD]: parts[1] },
        {
          type: "tool_use",
          id: "Read-4-2",
          name: "Read",
          input: { path: "a.ts" },
          [GEMINI_PART_FIELD]: parts[2],
        },
        { type: "tool_use", id: "own", name: "Stat", input: {}, [GEMINI_PART_FIELD]: parts[3] },
        { type: GEMINI_PART_BLOCK, [GEMINI_PART_FIELD]: parts[4] },
      ],
    });
    // Rendered back, every part is the object it was read from.
    const [content] = renderGeminiContents([message]);
    expect(content!.parts).toHaveLength(parts.length);
    for (const [i, part] of content!.parts.entries()) expect(part).toBe(parts[i]);
    expect(
      geminiModelToAssistant({ parts: [{ functionCall: { id: "", name: "X" } }] }).content[0],
    ).toMatchObject({
      id: "X-0-0",
    });
    expect(geminiModelToAssistant({} as never)).toEqual({ role: "assistant", content: [] });
    expect(() => geminiModelToAssistant({ parts: [{ functionCall: { args: {} } }] })).toThrow(/needs a name/);
  });

  it("reads a request as canonical params: system, turns, function responses answering calls in order", () => {
    const body = {
      contents: [
        { role: "user", parts: [{ text: "Audit." }] },
        {
          role: "model",
          parts: [
            { functionCall: { name: "Read", args: { path: "a" } } },
            { functionCall: { name: "Read", args: { path: "b" } } },
            { functionCall: { id: "s1", name: "Stat", args: {} } },
          ],
        },
        {
          parts: [
            { functionResponse: { name: "Read", response: { output: "A" } } },
            { functionResponse: { name: "Read", response: { error: "no b" } } },
            { functionResponse: { id: "s1", name: "Stat", response: { output: "ok" } } },
            { functionResponse: { name: "Stray", response: {} } },
            { inlineData: { mimeType: "image/png", data: "AAA=" } },
          ],
        },
      ],
      systemInstruction: { parts: [{ text: "One." }, { text: "Two." }] },
      tools: [
        {
          functionDeclarations: [
            { name: "Read", description: "Reads", parameters: { type: "object" } },
            { name: "Stat", parametersJsonSchema: { type: "object", properties: {} } },
            { name: "Bare" },
          ],
        },
        { googleSearch: {} },
      ],
      generationConfig: { maxOutputTokens: 512 },
    };
    const params = geminiRequestToCanonical(body, "gemini-2.5-flash");
    expect(params.model).toBe("gemini-2.5-flash");
    expect(params.max_tokens).toBe(512);
    expect(params.system).toBe("One.\nTwo.");
    expect(params.tools).toEqual([
      { name: "Read", description: "Reads", input_schema: { type: "object" } },
      { name: "Stat", input_schema: { type: "object", properties: {} } },
      { name: "Bare", input_schema: { type: "object", properties: {} } },
    ]);
    const results = params.messages[2]!.content as Record<string, unknown>[];
    expect(results.map((r) => [r.type, r.tool_use_id, r.content])).toEqual([
      ["tool_result", "Read-1-0", "A"],
      ["tool_result", "Read-1-1", '{"error":"no b"}'],
      ["tool_result", "s1", "ok"],
      ["tool_result", "Stray-2-3", "{}"],
      [GEMINI_PART_BLOCK, undefined, undefined],
    ]);
    // And rendered back, the very parts that were read.
    const contents = renderGeminiContents(params.messages);
    expect(contents).toEqual(body.contents.map((c) => ({ role: c.role ?? "user", parts: c.parts })));
  });

  it("refuses a request it cannot read", () => {
    expect(() => geminiRequestToCanonical({}, "m")).toThrow(/contents must be an array/);
    expect(() => geminiRequestToCanonical({ contents: [{ role: "system", parts: [] }] }, "m")).toThrow(
      /contents\[0\]: unknown role system/,
    );
    expect(() =>
      geminiRequestToCanonical(
        { contents: [], tools: [{ functionDeclarations: [{ description: "x" }] }] },
        "m",
      ),
    ).toThrow(/functionDeclarations\[0\] needs a name/);
    expect(() =>
      geminiRequestToCanonical({ contents: [], systemInstruction: { parts: [{ inlineData: {} }] } }, "m"),
    ).toThrow(/systemInstruction.parts\[0\]: only text parts/);
    const bare = geminiRequestToCanonical({ contents: [{ parts: [{ text: "hi" }] }] }, "m");
    expect(bare).toEqual({
      model: "m",
      messages: [
        { role: "user", content: [{ type: "text", text: "hi", [GEMINI_PART_FIELD]: { text: "hi" } }] },
      ],
    });
    expect(geminiRequestToCanonical({ contents: [{ role: "user" }] }, "m").messages).toEqual([
      { role: "user", content: [] },
    ]);
  });
});

describe("a native Gemini parent", () => {
  const parent = {
    contents: [{ parts: [{ text: "Read the notes." }], role: "user" }],
    systemInstruction: { parts: [{ text: "You are an agent." }], role: "user" },
    tools: [{ functionDeclarations: [{ name: "read_file", parametersJsonSchema: { type: "object" } }] }],
    generationConfig: { temperature: 1, topP: 0.95 },
  };
  const reply = {
    parts: [
      {
        functionCall: { id: "rf_1", args: { file_path: "notes.txt" }, name: "read_file" },
        thoughtSignature: "x",
      },
    ],
    role: "model",
  };
  const native: NativePrefix = {
    api: "gemini",
    model: "models/gemini-2.5-flash",
    request: parent,
    reply: [reply],
  };

  it("reads its params (model from the URL) and its reply", () => {
    const prefix = forkPrefixFromNative(native);
    expect(prefix.params.model).toBe("gemini-2.5-flash");
    expect(prefix.params.system).toBe("You are an agent.");
    expect(prefix.reply?.content[0]).toMatchObject({ type: "tool_use", id: "rf_1", name: "read_file" });
    expect(prefix.native).toBe(native);
    expect(geminiForkPrefixFromNative({ ...native, reply: [] }).reply).toBeUndefined();
    expect(() => geminiForkPrefixFromNative({ ...native, model: undefined })).toThrow(/names its model/);
    expect(() => geminiForkPrefixFromNative({ ...native, reply: [reply, reply] })).toThrow(
      /one model content/,
    );
    // A call without its own id is named by its place: the turn after the parent's contents.
    const anonymous = { parts: [{ functionCall: { name: "read_file", args: {} } }], role: "model" };
    expect(geminiForkPrefixFromNative({ ...native, reply: [anonymous] }).reply?.content[0]).toMatchObject({
      id: "read_file-1-0",
    });
  });

  it("builds the child's body from the parent's own bytes, its reply as sent back, then the child's contents", () => {
    const prefix = forkPrefixFromNative(native);
    const plan = prepareForkRun({ runId: "child-1", prefix, cacheShared: true, directive: "Check it." });
    const source = { native, count: geminiSharedMessageCount(prefix) };
    const body = renderGeminiChildRequest(plan.request, source);
    const contents = body.contents as Record<string, unknown>[];
    expect(contents[0]).toBe(parent.contents[0]); // the parent's own objects, not copies
    expect(contents[1]).toBe(reply);
    expect(JSON.stringify(contents[2]!.parts)).toContain(
      JSON.stringify({
        functionResponse: { name: "read_file", response: { output: FORK_PLACEHOLDER_RESULT }, id: "rf_1" },
      }),
    );
    expect(JSON.stringify(contents[2])).toContain("Check it.");
    expect(contents).toHaveLength(3);
    expect(Object.keys(body)).toEqual(Object.keys(parent));
    expect(body.generationConfig).toBe(parent.generationConfig);
  });

  it("names an explicit cache instead of sending its settings and the prefix's contents", () => {
    const prefix = forkPrefixFromNative(native);
    const plan = prepareForkRun({ runId: "child-1", prefix, cacheShared: true, directive: "Check it." });
    const source = { native, count: geminiSharedMessageCount(prefix) };
    const cached = geminiCachedPrefix(plan.request, source);
    expect(cached).toEqual({
      contents: [parent.contents[0], reply],
      systemInstruction: parent.systemInstruction,
      tools: parent.tools,
    });
    const body = renderGeminiChildRequest(plan.request, source, "cachedContents/abc");
    expect(Object.keys(body)).toEqual(["contents", "generationConfig", "cachedContent"]);
    expect(body.cachedContent).toBe("cachedContents/abc");
    expect(body.contents).toHaveLength(1);
    expect(JSON.stringify(body.contents)).toContain("Check it.");
  });

  it("without a reply, shares all but the last user content, which the child's directive joins", () => {
    const prefix = forkPrefixFromNative({ ...native, reply: [] });
    expect(geminiSharedMessageCount(prefix)).toBe(0);
    const plan = prepareForkRun({ runId: "child-1", prefix, cacheShared: true, directive: "Check it." });
    const source = { native: prefix.native, count: geminiSharedMessageCount(prefix) };
    const body = renderGeminiChildRequest(plan.request, source);
    const contents = body.contents as { parts: Record<string, unknown>[] }[];
    expect(contents).toHaveLength(1);
    // The parent's own part first, as sent, then the child's directive.
    expect(contents[0]!.parts[0]).toBe(parent.contents[0]!.parts[0]);
    expect(JSON.stringify(contents[0]!.parts.slice(1))).toContain("Check it.");
    expect(geminiCachedPrefix(plan.request, source).contents).toEqual([]);
  });

  it("counts the shared messages: with a reply all the parent's and the reply, without one all but a last user turn", () => {
    const params = { model: "m", messages: [{ role: "user" as const, content: "a" }] };
    const reply = { role: "assistant" as const, content: [{ type: "text", text: "b" }] };
    expect(geminiSharedMessageCount({ params, reply })).toBe(2);
    expect(geminiSharedMessageCount({ params, reply: { role: "assistant", content: [] } })).toBe(0);
    expect(geminiSharedMessageCount({ params })).toBe(0);
    const prefilled = {
      model: "m",
      messages: [...params.messages, { role: "assistant" as const, content: "pre" }],
    };
    expect(geminiSharedMessageCount({ params: prefilled, reply })).toBe(2);
    expect(geminiSharedMessageCount({ params: prefilled })).toBe(2);
    expect(geminiSharedMessageCount({ params: { model: "m", messages: [] } })).toBe(0);
  });

  it("is caught by the recursion guard when the native parent is itself a fork child", () => {
    const prefix = forkPrefixFromNative(native);
    const child = prepareForkRun({ runId: "child-1", prefix, cacheShared: true, directive: "Check it." });
    const childBody = renderGeminiChildRequest(child.request, {
      native,
      count: geminiSharedMessageCount(prefix),
    });
    const asParent = forkPrefixFromNative({ ...native, request: childBody, reply: [] });
    expect(() => assertMayFork({ querySource: "agent", messages: asParent.params.messages })).toThrow(
      /fork/i,
    );
  });
});

describe("a canonical parent on Gemini", () => {
  it("caches the parent's messages and settings, and sends the child's own after the cache's name", () => {
    const count = 2;
    const cached = geminiCachedPrefix(REQUEST, { count });
    const full = renderGeminiRequest(REQUEST);
    expect(cached).toEqual({
      contents: (full.contents as unknown[]).slice(0, 2),
      systemInstruction: full.systemInstruction,
      tools: full.tools,
    });
    const body = renderGeminiChildRequest(REQUEST, { count }, "cachedContents/x");
    expect(body).toEqual({
      contents: (full.contents as unknown[]).slice(2),
      generationConfig: full.generationConfig,
      cachedContent: "cachedContents/x",
    });
    const withChoice = { ...REQUEST, tool_choice: { type: "any" } } as LlmRequest;
    expect(geminiCachedPrefix(withChoice, { count }).toolConfig).toEqual({
      functionCallingConfig: { mode: "ANY" },
    });
    expect(renderGeminiChildRequest(withChoice, { count }, "cachedContents/x").toolConfig).toBeUndefined();
    expect(renderGeminiChildRequest(REQUEST, { count })).toEqual(full);
  });

  it("names the cache by a hash of exactly what it holds and its model", () => {
    const cached = geminiCachedPrefix(REQUEST, { count: 2 });
    const name = geminiCacheDisplayName("gemini-2.5-flash", cached);
    expect(name).toMatch(new RegExp(`^${GEMINI_CACHE_DISPLAY_PREFIX}[0-9a-f]{32}$`));
    expect(geminiCacheDisplayName("models/gemini-2.5-flash", cached)).toBe(name);
    expect(geminiCacheDisplayName("gemini-2.5-pro", cached)).not.toBe(name);
    expect(geminiCacheDisplayName("gemini-2.5-flash", geminiCachedPrefix(REQUEST, { count: 1 }))).not.toBe(
      name,
    );
  });
});

describe("edges the mutants found", () => {
  /** What `fn` throws. */
  const thrown = (fn: () => unknown): InvalidPrefixError => {
    try {
      fn();
    } catch (error) {
      return error as InvalidPrefixError;
    }
    throw new Error("did not throw");
  };

  it("names the offending field of every refusal", () => {
    expect(thrown(() => geminiRequestToCanonical({}, "m")).path).toEqual(["contents"]);
    expect(
      thrown(() => geminiRequestToCanonical({ contents: [{ parts: [] }, { role: "tool", parts: [] }] }, "m"))
        .path,
    ).toEqual(["contents", 1]);
    expect(
      thrown(() => geminiRequestToCanonical({ contents: [], tools: [{ functionDeclarations: [{}] }] }, "m"))
        .path,
    ).toEqual(["tools"]);
    expect(
      thrown(() => geminiModelToAssistant({ parts: [{ text: "a" }, { functionCall: {} }] })).path,
    ).toEqual(["parts", 1]);
    const native: NativePrefix = { api: "gemini", request: { contents: [] }, reply: [] };
    expect(thrown(() => geminiForkPrefixFromNative(native)).path).toEqual(["native", "model"]);
    expect(thrown(() => geminiForkPrefixFromNative({ ...native, model: "m", reply: [{}, {}] })).path).toEqual(
      ["native", "reply"],
    );
  });

  it("adds no key a request does not have", () => {
    const bare = renderGeminiRequest({
      model: "m",
      max_tokens: 5,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(bare).toStrictEqual({
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
      generationConfig: { maxOutputTokens: 5 },
    });
    const tools = renderGeminiRequest({ ...REQUEST, tools: [{ name: "Stat" }] } as LlmRequest).tools;
    expect(tools).toStrictEqual([
      { functionDeclarations: [{ name: "Stat", parametersJsonSchema: { type: "object", properties: {} } }] },
    ]);
    expect(geminiRequestToCanonical({ contents: [{ parts: [{ text: "hi" }] }] }, "m")).toStrictEqual({
      model: "m",
      messages: [
        { role: "user", content: [{ type: "text", text: "hi", [GEMINI_PART_FIELD]: { text: "hi" } }] },
      ],
    });
    const read = geminiRequestToCanonical(
      { contents: [], tools: [{ functionDeclarations: [{ name: "A", parameters: { type: "object" } }] }] },
      "m",
    );
    expect(read.tools).toStrictEqual([{ name: "A", input_schema: { type: "object" } }]);
    // A function response to a call without an id carries none.
    const [, answer] = renderGeminiContents([
      { role: "assistant", content: [{ type: "tool_use", id: "t", name: "Read", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: "ok" }] },
    ]);
    expect(answer!.parts[0]).toStrictEqual({
      functionResponse: { name: "Read", response: { output: "ok" } },
    });
    const canonical = geminiCachedPrefix(REQUEST, { count: 1 });
    expect(Object.keys(canonical)).toEqual(["contents", "systemInstruction", "tools"]);
    const withoutSettings = geminiCachedPrefix(
      { model: "m", max_tokens: 5, messages: REQUEST.messages },
      { count: 1 },
    );
    expect(Object.keys(withoutSettings)).toEqual(["contents"]);
    const noReply = geminiForkPrefixFromNative({
      api: "gemini",
      model: "m",
      request: { contents: [] },
      reply: [],
    });
    expect("reply" in noReply).toBe(false);
  });

  it("renders a kept part only when it is an object, and skips redacted thinking", () => {
    const contents = renderGeminiContents([
      {
        role: "assistant",
        content: [
          { type: "redacted_thinking", data: "x" },
          { type: "text", text: "a", [GEMINI_PART_FIELD]: null },
          { type: "text", text: "b", [GEMINI_PART_FIELD]: "not a part" },
        ],
      },
    ] as LlmRequest["messages"]);
    expect(contents).toStrictEqual([{ role: "model", parts: [{ text: "a" }, { text: "b" }] }]);
  });

  it("renders a system message's blocks as one text, and refuses an image with no source", () => {
    const [system] = renderGeminiContents([
      {
        role: "system",
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      },
    ] as LlmRequest["messages"]);
    expect(system).toStrictEqual({ role: "user", parts: [{ text: "a\n\nb" }] });
    expect(() =>
      renderGeminiContents([{ role: "user", content: [{ type: "image" }] }] as LlmRequest["messages"]),
    ).toThrow(InvalidPrefixError);
  });

  it("reads a function response's own id, and one without a response as an empty object", () => {
    const params = geminiRequestToCanonical(
      {
        contents: [
          { role: "model", parts: [{ functionCall: { name: "f" } }] },
          { role: "user", parts: [{ functionResponse: { id: "given", name: "f" } }] },
        ],
      },
      "m",
    );
    expect(params.messages[1]!.content).toMatchObject([
      { type: "tool_result", tool_use_id: "given", content: "{}" },
    ]);
  });

  it("strips only a leading models/ from a model name", () => {
    const native: NativePrefix = {
      api: "gemini",
      model: "tuned-models/x",
      request: { contents: [] },
      reply: [],
    };
    expect(geminiForkPrefixFromNative(native).params.model).toBe("tuned-models/x");
    const prefix = geminiCachedPrefix(REQUEST, { count: 1 });
    expect(geminiCacheDisplayName("tuned-models/x", prefix)).not.toBe(
      geminiCacheDisplayName("tuned-x", prefix),
    );
  });

  it("shares every message of a reply-less parent whose last turn is the model's, and none of an empty one", () => {
    const reply = { role: "assistant" as const, content: [{ type: "text", text: "b" }] };
    expect(geminiSharedMessageCount({ params: { model: "m", messages: [] }, reply })).toBe(1);
  });

  it("indexes only the model's tool calls, with their own string id", () => {
    const calls = toolCallsById([
      { role: "user", content: [{ type: "tool_use", id: "u", name: "x", input: {} }] },
      { role: "assistant", content: "text" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "a" },
          {
            type: "tool_use",
            id: "t1",
            name: "f",
            input: {},
            [GEMINI_PART_FIELD]: { functionCall: { id: 5 } },
          },
          {
            type: "tool_use",
            id: "t2",
            name: "g",
            input: {},
            [GEMINI_PART_FIELD]: { functionCall: { id: "own" } },
          },
        ],
      },
    ] as LlmRequest["messages"]);
    expect([...calls.entries()]).toStrictEqual([
      ["t1", { name: "f", callId: undefined }],
      ["t2", { name: "g", callId: "own" }],
    ]);
    // Reading back, only a call (not a text part) is answered by a response of its name.
    const params = geminiRequestToCanonical(
      {
        contents: [
          { role: "model", parts: [{ text: "a" }] },
          { role: "user", parts: [{ functionResponse: { name: "undefined", response: {} } }] },
        ],
      },
      "m",
    );
    expect(params.messages[1]!.content).toMatchObject([{ tool_use_id: "undefined-1-0" }]);
  });
});
