// The model APIs whose turns the proxy records, one small module each: which request is a call of
// it, how its reply is reassembled (streamed or not), which session it belongs to, and the tool calls
// its reply holds. Adding an API (Gemini) is adding a module here.
import type { IncomingHttpHeaders } from "node:http";
import { chatReplyForRequest, geminiModelToAssistant } from "@forkd/core";
import { parseJsonText } from "@forkd/protocol/internal";
import { ChatAssembler, type ChatReply, type ChatToolCall } from "./chat-assembler.js";
import { GeminiAssembler, type GeminiReply, geminiReplyOfJson } from "./gemini-assembler.js";
import { type AssembledMessage, MessageAssembler } from "./message-assembler.js";
import { ResponsesAssembler, type ResponsesItem } from "./responses-assembler.js";
import { geminiSessionKeyOf, openAiSessionKeyOf, sessionKeyOf } from "./session-key.js";
import type { ReplyAssembler } from "./sse.js";

/** The API a recorded turn spoke. */
export type TurnApi = "anthropic" | "openai-chat" | "openai-responses" | "gemini";

/** The reply of a turn, as the API takes it back in the next request. */
export type TurnReply =
  /** Anthropic: the message, `{ role, content, … }`. */
  | AssembledMessage
  /** Chat Completions: the assistant message. */
  | ChatReply
  /** Responses: the output items. */
  | ResponsesItem[]
  /** Gemini: candidate 0's content, `{ role: "model", parts }`. */
  | GeminiReply;

/** A tool call of a reply, whatever the API: its id, the tool's name and its parsed input. */
export interface ToolCall {
  /**
   * Anthropic's `tool_use` id, Chat's `tool_calls[i].id`, Responses' `call_id`; Gemini's
   * `functionCall.id`, else the id the core gives a call without one (`<name>-<turn>-<part>`).
   */
  id: string;
  name: string;
  /** The arguments, parsed; the raw text when they are not JSON. */
  input: unknown;
}

/** What the proxy knows of one API. */
export interface TurnApiModule {
  readonly api: TurnApi;
  /**
   * Which of the proxy's routes serves it: `anthropic` (the root), `openai` (under `/openai`) or
   * `gemini` (under `/gemini`).
   */
  readonly route: "anthropic" | "openai" | "gemini";
  /** Whether a POST to `path` (relative to the route, without the query) is a call of this API. */
  recognises(path: string): boolean;
  /** A reader of a streamed reply. */
  assembler(): ReplyAssembler<TurnReply>;
  /** The reply of a non-streamed answer's parsed body; undefined when it holds none. */
  replyOfJson(body: unknown): TurnReply | undefined;
  /**
   * The reply's tool calls, in order; `request` is the request the reply answers (Gemini's call ids
   * depend on where the reply stands in the conversation).
   */
  toolCalls(reply: TurnReply, request?: Record<string, unknown>): ToolCall[];
  /**
   * The session a request belongs to (see docs/any-agent.md); `target` is the request's path and
   * query (Gemini's key may be its `key` parameter).
   */
  sessionKey(headers: IncomingHttpHeaders, body: Record<string, unknown>, target: string): string;
}

const anthropic: TurnApiModule = {
  api: "anthropic",
  route: "anthropic",
  recognises: (path) => path === "/v1/messages",
  assembler: () => new MessageAssembler(),
  replyOfJson: (body) =>
    Array.isArray((body as AssembledMessage | null)?.content) ? (body as AssembledMessage) : undefined,
  toolCalls: (reply) =>
    (reply as AssembledMessage).content.flatMap((block) =>
      block.type === "tool_use" && typeof block.id === "string" && typeof block.name === "string"
        ? [{ id: block.id, name: block.name, input: block.input }]
        : [],
    ),
  sessionKey: sessionKeyOf,
};

const openAiChat: TurnApiModule = {
  api: "openai-chat",
  route: "openai",
  recognises: (path) => path === "/chat/completions",
  assembler: () => new ChatAssembler(),
  replyOfJson: (body) => {
    const message = (
      body as { choices?: { index?: number; message?: Record<string, unknown> }[] } | null
    )?.choices?.find((choice) => (choice.index ?? 0) === 0)?.message;
    return message === undefined ? undefined : (chatReplyForRequest(message) as ChatReply);
  },
  toolCalls: (reply) =>
    (((reply as ChatReply).tool_calls ?? []) as ChatToolCall[]).flatMap((call) =>
      typeof call?.id === "string" && typeof call.function?.name === "string"
        ? [{ id: call.id, name: call.function.name, input: argumentsOf(call.function.arguments) }]
        : [],
    ),
  sessionKey: (headers, body) => openAiSessionKeyOf("openai-chat", headers, body),
};

const openAiResponses: TurnApiModule = {
  api: "openai-responses",
  route: "openai",
  recognises: (path) => path === "/responses",
  assembler: () => new ResponsesAssembler(),
  replyOfJson: (body) => {
    const output = (body as { output?: unknown } | null)?.output;
    return Array.isArray(output) ? (output as ResponsesItem[]) : undefined;
  },
  toolCalls: (reply) =>
    (reply as ResponsesItem[]).flatMap((item) =>
      item.type === "function_call" && typeof item.call_id === "string" && typeof item.name === "string"
        ? [{ id: item.call_id, name: namespacedName(item), input: argumentsOf(item.arguments) }]
        : [],
    ),
  sessionKey: (headers, body) => openAiSessionKeyOf("openai-responses", headers, body),
};

/** `/<version>/models/<model>:generateContent` or `:streamGenerateContent`. */
const GEMINI_GENERATE = /^\/v1(?:beta|alpha)?\/models\/[^/:]+:(?:stream)?[gG]enerateContent$/;

const gemini: TurnApiModule = {
  api: "gemini",
  route: "gemini",
  recognises: (path) => GEMINI_GENERATE.test(path),
  assembler: () => new GeminiAssembler(),
  replyOfJson: geminiReplyOfJson,
  // The core's own reading of the reply: a call's own id, else `<name>-<turn>-<part>`. That one
  // repeats (after /clear or a compression the conversation is as long again), and a fork call whose
  // id was answered once is never matched again, so the proxy makes it unique: `…~<reply number>`.
  toolCalls: (reply, request) => {
    const turn = Array.isArray(request?.contents) ? request.contents.length : 0;
    const replyNumber = ++geminiRepliesRead;
    const ownIds = new Set(
      ((reply as GeminiReply).parts ?? []).flatMap((part) => {
        const id = (part as { functionCall?: { id?: unknown } }).functionCall?.id;
        return typeof id === "string" && id !== "" ? [id] : [];
      }),
    );
    try {
      return geminiModelToAssistant(reply as GeminiReply, turn).content.flatMap((block) => {
        if (block.type !== "tool_use") return [];
        const id = String(block.id);
        return [
          { id: ownIds.has(id) ? id : `${id}~${replyNumber}`, name: String(block.name), input: block.input },
        ];
      });
    } catch {
      // A call without a name: nothing the core could fork from either.
      return [];
    }
  },
  sessionKey: geminiSessionKeyOf,
};

/** Gemini replies whose tool calls were read in this process: what makes an id-less call's id unique. */
let geminiRepliesRead = 0;

/** Every API the proxy records, Anthropic first. */
export const TURN_APIS: readonly TurnApiModule[] = [anthropic, openAiChat, openAiResponses, gemini];

/**
 * The model a recorded Gemini call's path names (`…/models/<model>:generateContent`, whatever route
 * prefix comes before), if it is one: a Gemini body does not name its model.
 */
export function geminiModelOfPath(path: string): string | undefined {
  const match = /\/models\/([^/:]+):(?:stream)?[gG]enerateContent$/.exec(path.split("?")[0]!);
  return match?.[1];
}

/** The module of an API by name. */
export function turnApi(api: TurnApi): TurnApiModule {
  return TURN_APIS.find((module) => module.api === api)!;
}

/** The API a request is a call of, if the proxy records it. */
export function turnApiOf(
  method: string | undefined,
  route: TurnApiModule["route"],
  path: string,
): TurnApiModule | undefined {
  if (method !== "POST") return undefined;
  return TURN_APIS.find((module) => module.route === route && module.recognises(path));
}

/**
 * A Responses function call's tool name, its namespace first: the Codex CLI offers an MCP server's
 * tools as one `namespace` tool (`mcp__forkd`), whose calls name the namespace beside the function
 * (`fork`); as `mcp__forkd__fork` the name reads as every other client's MCP tool.
 */
function namespacedName(item: ResponsesItem): string {
  const name = item.name as string;
  return typeof item.namespace === "string" && item.namespace !== "" ? `${item.namespace}__${name}` : name;
}

/** A function call's `arguments` (a JSON text), parsed; the text itself when it is not JSON. */
function argumentsOf(text: unknown): unknown {
  if (typeof text !== "string") return text;
  try {
    return parseJsonText(text);
  } catch {
    return text;
  }
}
