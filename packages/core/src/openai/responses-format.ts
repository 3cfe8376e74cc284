// OpenAI Responses ⇄ forkd's canonical conversation. Input items are rendered message by message, so
// a child's input starts with its parent's items; items forkd does not reason about (reasoning with
// its encrypted content, and any newer kind) travel as `openai_item` blocks and come back verbatim.
import {
  type AssistantMessage,
  type CacheSafeParams,
  type ContentBlock,
  type MessageParam,
  modelFacts,
} from "@forkd/protocol";
import { InvalidPrefixError } from "../errors.js";
import type { LlmRequest } from "../llm-client.js";
import {
  blocksOf,
  markedPart,
  namespacedToolName,
  OPENAI_ITEM_BLOCK,
  OPENAI_NAMESPACE_FIELD,
  systemText,
  takesCacheBreakpoints,
  toolArguments,
  toolOutputContent,
  toolUseBlock,
  unsupportedBlock,
} from "./content.js";

/** A Responses input item, as sent. */
export type ResponsesItem = Record<string, unknown>;

/**
 * One canonical message as Responses input items. With `breakpoints` (a model that takes them), a
 * user block carrying a breakpoint is marked (a tool result then is one `input_text` part: a string
 * output has no block to mark); an assistant block is not (output takes no breakpoint).
 */
export function renderResponsesMessage(message: MessageParam, breakpoints = false): ResponsesItem[] {
  if (message.role === "system")
    return [
      {
        type: "message",
        role: "developer",
        content: [{ type: "input_text", text: systemText(message.content) ?? "" }],
      },
    ];
  const items: ResponsesItem[] = [];
  const parts: Record<string, unknown>[] = [];
  const assistant = message.role === "assistant";
  const flush = () => {
    if (parts.length === 0) return;
    items.push({ type: "message", role: message.role, content: parts.splice(0) });
  };
  for (const block of blocksOf(message.content)) {
    if (block.type === "text")
      parts.push(
        assistant
          ? { type: "output_text", text: String(block.text) }
          : markedPart({ type: "input_text", text: String(block.text) }, block, breakpoints),
      );
    else if (block.type === OPENAI_ITEM_BLOCK) {
      flush();
      items.push(block.item as ResponsesItem);
    } else if (assistant && block.type === "tool_use") {
      flush();
      const namespace = (block as Record<string, unknown>)[OPENAI_NAMESPACE_FIELD];
      const name = String(block.name);
      items.push({
        type: "function_call",
        call_id: String(block.id),
        ...(typeof namespace === "string"
          ? { namespace, name: name.slice(namespacedToolName(namespace, "").length) }
          : { name }),
        arguments: toolArguments(block),
      });
    } else if (!assistant && block.type === "tool_result") {
      flush();
      items.push({
        type: "function_call_output",
        call_id: String(block.tool_use_id),
        output: toolOutputContent(block, "input_text", breakpoints),
      });
    } else if (assistant && (block.type === "thinking" || block.type === "redacted_thinking")) continue;
    else unsupportedBlock(block, `${message.role} message`);
  }
  flush();
  return items;
}

/** The input item a string `input` stands for: one user message. */
export function stringInputItem(text: string): ResponsesItem {
  return { role: "user", content: text };
}

/**
 * Renders the messages of a conversation after `from` (the part a child added to its prefix), with
 * their breakpoints marked when `breakpoints` (see {@link renderResponsesMessage}).
 */
export function renderResponsesItems(
  messages: readonly MessageParam[],
  from: number,
  breakpoints = false,
): ResponsesItem[] {
  return messages.slice(from).flatMap((message) => renderResponsesMessage(message, breakpoints));
}

/**
 * The Responses body of a canonical request: the system prompt as `instructions`, the messages as
 * `input` items, function tools, `max_output_tokens`, and `store: false` (the child sends its whole
 * input each turn, as a prefix-cached request must; so it leaves out what refers to stored items,
 * see {@link withoutStoredReferences}). Streaming fields are the client's to add.
 */
export function renderResponsesRequest(request: LlmRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { model: request.model };
  const instructions = systemText(request.system);
  if (instructions !== undefined) body.instructions = instructions;
  const breakpoints = takesCacheBreakpoints(request.model);
  body.input = withoutStoredReferences(
    request.messages.flatMap((message) => renderResponsesMessage(message, breakpoints)),
  );
  if (request.tools !== undefined && request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: "function",
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      parameters: tool.input_schema ?? { type: "object", properties: {} },
      strict: false,
    }));
  }
  const choice = request.tool_choice;
  if (choice !== undefined)
    body.tool_choice =
      choice.type === "any"
        ? "required"
        : choice.type === "tool"
          ? { type: "function", name: String(choice.name) }
          : choice.type;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.top_p !== undefined) body.top_p = request.top_p;
  body.max_output_tokens = request.max_tokens;
  body.store = false;
  // Nothing is stored, so a reasoning model's reasoning reaches the next turn only encrypted in the
  // reply (as the Codex CLI asks for it); without it the model would start each turn's thinking over.
  if (modelFacts(request.model)?.reasons === true) body.include = ["reasoning.encrypted_content"];
  return body;
}

/**
 * Items as a request with `store: false` may carry them. An item that only refers to what the
 * server stored, an `item_reference` or a reasoning item without its `encrypted_content` (what a
 * reasoning model returns to a request that did not `include` it), cannot be resolved when nothing
 * was stored, and the API refuses the request ("Item with id … not found. Items are not persisted
 * when `store` is set to false"): such items are left out. Every other item goes as it is, its id
 * included, as the Codex CLI sends its own under `store: false`.
 */
export function withoutStoredReferences(items: readonly unknown[]): unknown[] {
  return items.filter((item) => {
    const record = item as ResponsesItem | null;
    if (record === null || typeof record !== "object") return true;
    if (record.type === "item_reference") return false;
    return !(record.type === "reasoning" && typeof record.encrypted_content !== "string");
  });
}

function itemText(content: unknown, where: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw new InvalidPrefixError(`${where}: content must be a string or parts`);
  return content
    .map((part: { type?: unknown; text?: unknown }) => {
      if (typeof part.text === "string") return part.text;
      throw new InvalidPrefixError(`${where}: a ${String(part.type)} part is not supported`);
    })
    .join("");
}

/** Responses output items (or the assistant's input items) as one canonical assistant message. */
export function responsesItemsToAssistant(items: readonly ResponsesItem[]): AssistantMessage {
  const content: ContentBlock[] = [];
  for (const item of items) {
    if (item.type === "message" || (item.type === undefined && item.role === "assistant"))
      content.push({ type: "text", text: itemText(item.content, "an assistant message") });
    else if (item.type === "function_call") {
      const args = typeof item.arguments === "string" ? item.arguments : "{}";
      const namespace = typeof item.namespace === "string" ? item.namespace : undefined;
      if (namespace === undefined) content.push(toolUseBlock(String(item.call_id), String(item.name), args));
      else
        content.push({
          ...toolUseBlock(String(item.call_id), namespacedToolName(namespace, String(item.name)), args),
          [OPENAI_NAMESPACE_FIELD]: namespace,
        });
    } else content.push({ type: OPENAI_ITEM_BLOCK, item });
  }
  return { role: "assistant", content };
}

/**
 * A Responses request as canonical params: `instructions` (and leading developer/system messages) as
 * the system prompt, input items grouped into user and assistant turns, function tools.
 * @throws {@link InvalidPrefixError} for `previous_response_id` (the prefix would live on the
 * provider, not in the request) and for items the core cannot read.
 */
export function responsesRequestToCanonical(body: Record<string, unknown>): CacheSafeParams {
  if (typeof body.model !== "string") throw new InvalidPrefixError("model is required", { path: ["model"] });
  if (body.previous_response_id !== undefined && body.previous_response_id !== null)
    throw new InvalidPrefixError(
      "a request with previous_response_id does not carry its whole prefix; fork from a request that sends its input in full",
      { path: ["previous_response_id"] },
    );
  const input: ResponsesItem[] =
    typeof body.input === "string"
      ? [stringInputItem(body.input)]
      : Array.isArray(body.input)
        ? (body.input as ResponsesItem[])
        : [];
  const system: string[] = typeof body.instructions === "string" ? [body.instructions] : [];
  const messages: MessageParam[] = [];
  let i = 0;
  for (; i < input.length && (input[i]!.role === "system" || input[i]!.role === "developer"); i++)
    system.push(itemText(input[i]!.content, `input[${i}]`));
  let pendingAssistant: ResponsesItem[] = [];
  const push = (role: "user" | "assistant", block: ContentBlock) => {
    const last = messages[messages.length - 1];
    if (last?.role === role && Array.isArray(last.content)) last.content.push(block);
    else messages.push({ role, content: [block] });
  };
  const flushAssistant = () => {
    for (const block of responsesItemsToAssistant(pendingAssistant).content) push("assistant", block);
    pendingAssistant = [];
  };
  for (; i < input.length; i++) {
    const item = input[i]!;
    const kind = item.type ?? "message";
    // The model's side: its messages, its calls, and items of kinds forkd does not reason about.
    if (item.role === "assistant" || (kind !== "message" && kind !== "function_call_output"))
      pendingAssistant.push(item);
    else {
      flushAssistant();
      if (kind === "function_call_output")
        push("user", {
          type: "tool_result",
          tool_use_id: String(item.call_id),
          content: typeof item.output === "string" ? item.output : JSON.stringify(item.output),
        });
      else if (item.role === "system" || item.role === "developer")
        messages.push({ role: "system", content: itemText(item.content, `input[${i}]`) });
      else push("user", { type: "text", text: itemText(item.content, `input[${i}]`) });
    }
  }
  flushAssistant();
  const tools = Array.isArray(body.tools)
    ? (body.tools as Record<string, unknown>[]).flatMap((tool) =>
        // Only function tools run on a daemon; hosted tools (web search…) stay in the native bytes.
        tool.type === "function" && typeof tool.name === "string"
          ? [
              {
                name: tool.name,
                ...(tool.description === undefined ? {} : { description: tool.description }),
                input_schema: tool.parameters ?? { type: "object", properties: {} },
              },
            ]
          : [],
      )
    : undefined;
  return {
    model: body.model,
    ...(typeof body.max_output_tokens === "number" ? { max_tokens: body.max_output_tokens } : {}),
    ...(system.length > 0 ? { system: system.join("\n\n") } : {}),
    ...(tools === undefined ? {} : { tools }),
    messages,
  };
}
