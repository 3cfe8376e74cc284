// Gemini `generateContent` ⇄ forkd's canonical (Messages-shaped) conversation. Rendering is a map over
// messages (one canonical message, one Gemini content), so two conversations that share their first k
// messages render to `contents` that share their first k items: a child shares its parent's prefix on
// Gemini as it does on Anthropic. A part read from Gemini keeps its own object beside the canonical
// block and is rendered back as it came (thought signatures, ids, key order), never rebuilt.
import type { AssistantMessage, CacheSafeParams, ContentBlock, MessageParam } from "@forkd/protocol";
import { InvalidPrefixError } from "../errors.js";
import type { LlmRequest } from "../llm-client.js";
// Reading canonical content is the same whichever provider renders it.
import { systemText, toolResultText } from "../openai/content.js";

/** A Gemini `Content` (`{role, parts}`), as sent. */
export type GeminiContent = { role?: string; parts: GeminiPart[] } & Record<string, unknown>;
/** A Gemini `Part`, as sent. */
export type GeminiPart = Record<string, unknown>;

/** The field of a canonical block that keeps the Gemini part it was read from, rendered back verbatim. */
export const GEMINI_PART_FIELD = "gemini_part";

/**
 * A canonical block that carries a Gemini part forkd does not reason about (a thought, executable
 * code…): rendered back exactly as received.
 */
export const GEMINI_PART_BLOCK = "gemini_part";

/** The fields of a generateContent body that configure the model rather than carry the conversation. */
export const GEMINI_SETTINGS_FIELDS = ["systemInstruction", "tools", "toolConfig"] as const;

function keptPart(block: ContentBlock): GeminiPart | undefined {
  const kept = (block as Record<string, unknown>)[GEMINI_PART_FIELD];
  return kept !== null && typeof kept === "object" ? (kept as GeminiPart) : undefined;
}

function unsupportedBlock(block: ContentBlock, where: string): never {
  throw new InvalidPrefixError(`a ${block.type} block has no Gemini form (${where})`);
}

/** What a `functionResponse` must say of the call it answers: its function, and its id if it had one. */
export interface GeminiCallRef {
  name: string;
  /** The `functionCall.id` the call carried (the API's clients may set one); undefined: none. */
  callId: string | undefined;
}

/**
 * Every tool call of a conversation by canonical id: a Gemini `functionResponse` names its function
 * (and the call's own id, when it had one), a canonical `tool_result` only the canonical id.
 */
export function toolCallsById(messages: readonly MessageParam[]): Map<string, GeminiCallRef> {
  const calls = new Map<string, GeminiCallRef>();
  for (const message of messages) {
    if (message.role !== "assistant" || typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type !== "tool_use") continue;
      const callId = (keptPart(block)?.functionCall as { id?: unknown } | undefined)?.id;
      calls.set(String(block.id), {
        name: String(block.name),
        callId: typeof callId === "string" ? callId : undefined,
      });
    }
  }
  return calls;
}

function imagePart(block: ContentBlock): GeminiPart {
  const source = block.source as { type?: string; media_type?: string; data?: string } | undefined;
  if (source?.type === "base64") return { inlineData: { mimeType: source.media_type, data: source.data } };
  return unsupportedBlock(block, "image source");
}

/** One canonical message as one Gemini content (`system` mid-conversation becomes a user turn). */
export function renderGeminiContent(
  message: MessageParam,
  calls: ReadonlyMap<string, GeminiCallRef>,
): GeminiContent {
  if (message.role === "system")
    return { role: "user", parts: [{ text: systemText(message.content) ?? "" }] };
  const assistant = message.role === "assistant";
  const blocks: ContentBlock[] =
    typeof message.content === "string"
      ? message.content === ""
        ? []
        : [{ type: "text", text: message.content }]
      : message.content;
  const parts: GeminiPart[] = [];
  for (const block of blocks) {
    const kept = keptPart(block);
    if (kept !== undefined) parts.push(kept);
    else if (block.type === "text") parts.push({ text: String(block.text) });
    else if (assistant && block.type === "tool_use")
      parts.push({ functionCall: { name: String(block.name), args: block.input ?? {} } });
    else if (!assistant && block.type === "tool_result") {
      const id = String(block.tool_use_id);
      const call = calls.get(id);
      if (call === undefined)
        throw new InvalidPrefixError(
          `a tool_result answers ${id}, which no tool_use of the conversation made`,
        );
      // The shape the API's own clients send back: the function's name, its output, the call's id.
      parts.push({
        functionResponse: {
          name: call.name,
          response: { output: toolResultText(block.content) },
          ...(call.callId === undefined ? {} : { id: call.callId }),
        },
      });
    } else if (!assistant && block.type === "image") parts.push(imagePart(block));
    else if (assistant && (block.type === "thinking" || block.type === "redacted_thinking")) continue;
    else unsupportedBlock(block, `${message.role} message`);
  }
  return { role: assistant ? "model" : "user", parts };
}

/** Renders the messages of a conversation after `from` (what a child added to its prefix). */
export function renderGeminiContents(messages: readonly MessageParam[], from = 0): GeminiContent[] {
  const calls = toolCallsById(messages);
  return messages.slice(from).map((message) => renderGeminiContent(message, calls));
}

/**
 * The generateContent body of a canonical request: `contents`, the system prompt as
 * `systemInstruction`, function tools as one `functionDeclarations` tool, `toolConfig`, and
 * `generationConfig` (`maxOutputTokens`, sampling, stop sequences). The model goes in the URL.
 * Breakpoint markers are dropped: Gemini caches by `cachedContents` or implicitly.
 */
export function renderGeminiRequest(request: LlmRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { contents: renderGeminiContents(request.messages) };
  const system = systemText(request.system);
  if (system !== undefined) body.systemInstruction = { parts: [{ text: system }] };
  if (request.tools !== undefined && request.tools.length > 0)
    body.tools = [
      {
        functionDeclarations: request.tools.map((tool) => ({
          name: tool.name,
          ...(tool.description === undefined ? {} : { description: tool.description }),
          parametersJsonSchema: tool.input_schema ?? { type: "object", properties: {} },
        })),
      },
    ];
  const choice = request.tool_choice;
  if (choice !== undefined)
    body.toolConfig = {
      functionCallingConfig:
        choice.type === "any"
          ? { mode: "ANY" }
          : choice.type === "tool"
            ? { mode: "ANY", allowedFunctionNames: [String(choice.name)] }
            : { mode: choice.type === "none" ? "NONE" : "AUTO" },
    };
  const config: Record<string, unknown> = { maxOutputTokens: request.max_tokens };
  if (request.temperature !== undefined) config.temperature = request.temperature;
  if (request.top_p !== undefined) config.topP = request.top_p;
  if (request.stop_sequences !== undefined) config.stopSequences = request.stop_sequences;
  body.generationConfig = config;
  return body;
}

function partText(part: GeminiPart, where: string): string {
  if (typeof part.text === "string") return part.text;
  throw new InvalidPrefixError(`${where}: only text parts are supported here`);
}

/**
 * A Gemini model content (a candidate's, or a model turn of a request) as a canonical assistant
 * message: text parts as text, `functionCall` parts as `tool_use` (id: the call's own, else
 * `<name>-<turn>-<part>`), thoughts and other parts as {@link GEMINI_PART_BLOCK}; each block keeps
 * its part.
 */
export function geminiModelToAssistant(content: Pick<GeminiContent, "parts">, turn = 0): AssistantMessage {
  const blocks: ContentBlock[] = [];
  (content.parts ?? []).forEach((part, index) => {
    const call = part.functionCall as { id?: unknown; name?: unknown; args?: unknown } | undefined;
    if (call !== undefined) {
      if (typeof call.name !== "string")
        throw new InvalidPrefixError("a functionCall needs a name", { path: ["parts", index] });
      const id = typeof call.id === "string" && call.id !== "" ? call.id : `${call.name}-${turn}-${index}`;
      blocks.push({
        type: "tool_use",
        id,
        name: call.name,
        input: call.args ?? {},
        [GEMINI_PART_FIELD]: part,
      });
    } else if (typeof part.text === "string" && part.thought !== true)
      blocks.push({ type: "text", text: part.text, [GEMINI_PART_FIELD]: part });
    else blocks.push({ type: GEMINI_PART_BLOCK, [GEMINI_PART_FIELD]: part });
  });
  return { role: "assistant", content: blocks };
}

/**
 * A generateContent body as canonical params: `systemInstruction`'s text as the system prompt,
 * `model` contents as assistant turns, `user` contents as user turns (`functionResponse` parts as
 * `tool_result`s answering the latest call of that name), function declarations as tools. What the
 * core reasons about is kept; the bytes sent come from the native request itself.
 * @throws {@link InvalidPrefixError} for a request the core cannot read.
 */
export function geminiRequestToCanonical(body: Record<string, unknown>, model: string): CacheSafeParams {
  const contents = body.contents;
  if (!Array.isArray(contents))
    throw new InvalidPrefixError("contents must be an array", { path: ["contents"] });
  const messages: MessageParam[] = [];
  /** Call ids by function name, oldest first, not yet answered. */
  const open = new Map<string, string[]>();
  (contents as GeminiContent[]).forEach((content, turn) => {
    if (content.role === "model") {
      const message = geminiModelToAssistant(content, turn);
      for (const block of message.content as ContentBlock[])
        if (block.type === "tool_use") {
          const ids = open.get(String(block.name)) ?? [];
          ids.push(String(block.id));
          open.set(String(block.name), ids);
        }
      messages.push(message);
      return;
    }
    if (content.role !== undefined && content.role !== "user")
      throw new InvalidPrefixError(`contents[${turn}]: unknown role ${String(content.role)}`, {
        path: ["contents", turn],
      });
    const blocks: ContentBlock[] = (content.parts ?? []).map((part, index) => {
      const response = part.functionResponse as
        | { id?: unknown; name?: unknown; response?: unknown }
        | undefined;
      if (response === undefined) {
        if (typeof part.text === "string")
          return { type: "text", text: part.text, [GEMINI_PART_FIELD]: part };
        return { type: GEMINI_PART_BLOCK, [GEMINI_PART_FIELD]: part };
      }
      const name = String(response.name);
      const ids = open.get(name) ?? [];
      const id = typeof response.id === "string" ? response.id : (ids.shift() ?? `${name}-${turn}-${index}`);
      const output = (response.response as { output?: unknown } | undefined)?.output;
      return {
        type: "tool_result",
        tool_use_id: id,
        content: typeof output === "string" ? output : JSON.stringify(response.response ?? {}),
        [GEMINI_PART_FIELD]: part,
      };
    });
    messages.push({ role: "user", content: blocks });
  });
  const system = body.systemInstruction as { parts?: GeminiPart[] } | undefined;
  const tools = Array.isArray(body.tools)
    ? (body.tools as { functionDeclarations?: Record<string, unknown>[] }[]).flatMap((tool) =>
        // Only function declarations run on a daemon; built-in tools (search…) stay in the native bytes.
        (tool.functionDeclarations ?? []).map((fn, index) => {
          if (typeof fn.name !== "string")
            throw new InvalidPrefixError(`functionDeclarations[${index}] needs a name`, { path: ["tools"] });
          return {
            name: fn.name,
            ...(fn.description === undefined ? {} : { description: fn.description }),
            input_schema: fn.parametersJsonSchema ?? fn.parameters ?? { type: "object", properties: {} },
          };
        }),
      )
    : undefined;
  const maxTokens = (body.generationConfig as { maxOutputTokens?: unknown } | undefined)?.maxOutputTokens;
  return {
    model,
    ...(typeof maxTokens === "number" ? { max_tokens: maxTokens } : {}),
    ...(system?.parts === undefined
      ? {}
      : {
          system: system.parts.map((part, i) => partText(part, `systemInstruction.parts[${i}]`)).join("\n"),
        }),
    ...(tools === undefined ? {} : { tools }),
    messages,
  };
}
