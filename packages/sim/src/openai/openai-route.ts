// The simulator's OpenAI routes: `POST /v1/chat/completions` and `POST /v1/responses`. The request is
// checked as the API checks it, answered by the same scripted model as the Anthropic route (through
// forkd's canonical view of the conversation), charged by OpenAI's caching rules (openai-cache.ts),
// and streamed in the API's own event format.
import { chatRequestToCanonical, responsesRequestToCanonical } from "@forkd/core";
import { modelFacts } from "@forkd/protocol";
import type { UnkeptValueText } from "@forkd/protocol/internal";
import { acceptWithUsage, cacheScopeOf } from "../accept.js";
import { SimApiError } from "../errors.js";
import { type Exchange, parseJsonWithUnkept, readBody, sleep } from "../exchange.js";
import { runScriptedModel } from "../model.js";
import type { MessagesRouteContext } from "../routes/messages.js";
import type { MessagesRequest } from "../types.js";
import { identityOfSome } from "../verbatim.js";
import {
  type OpenAiPromptCache,
  type OpenAiPromptMark,
  type OpenAiPromptUnit,
  openAiRetentionOf,
} from "./openai-cache.js";
import { OpenAiApiError, sendOpenAiError } from "./openai-errors.js";
import { validateChatRequest, validateResponsesRequest } from "./openai-validate.js";
import { type OpenAiApi, type OpenAiVerbatim, openAiVerbatimOf, promptFieldOf } from "./openai-verbatim.js";

/** What the OpenAI routes need of the server. */
export interface OpenAiRouteContext extends MessagesRouteContext {
  openAiCache: OpenAiPromptCache;
}

type Api = OpenAiApi;

/** The paths served here, and their API. */
export function openAiApiOf(path: string): Api | undefined {
  if (path === "/v1/chat/completions") return "chat";
  if (path === "/v1/responses") return "responses";
  return undefined;
}

/** Answers an OpenAI API request; whatever it throws becomes an error in OpenAI's shape. */
export function openAiRoute(context: OpenAiRouteContext, ex: Exchange, api: Api): void {
  if (ex.req.method !== "POST") {
    sendOpenAiError(
      ex,
      new OpenAiApiError(405, `Method ${ex.req.method} not allowed`, "invalid_request_error"),
    );
    return;
  }
  serve(context, ex, api).catch((err: unknown) => {
    const error =
      err instanceof OpenAiApiError
        ? err
        : err instanceof SimApiError
          ? err.status === 401
            ? new OpenAiApiError(
                401,
                "Incorrect API key provided.",
                "invalid_request_error",
                null,
                "invalid_api_key",
              )
            : new OpenAiApiError(err.status, err.message, err.errorType, null, null, { ...err.headers })
          : new OpenAiApiError(
              500,
              `Internal simulator error: ${(err as Error)?.message ?? String(err)}`,
              "server_error",
            );
    sendOpenAiError(ex, error);
  });
}

/**
 * The prompt of an OpenAI request as the simulator's model sees it, in order (tools, then the
 * instructions and messages or input items, one JSON text each): what prefix caching is keyed on,
 * and 4 characters a token.
 */
export function renderOpenAiPrompt(api: Api, body: Record<string, unknown>): string {
  return promptItems(api, body)
    .map((part) => JSON.stringify(part))
    .join("\n");
}

/**
 * {@link renderOpenAiPrompt}, with where each element of `verbatim` (the request's elements whose text
 * a JavaScript reading writes otherwise, openai-verbatim.ts) begins in it and its identity, in order:
 * a tool where it begins in the tools, a message or input item (its parts included) where it begins.
 */
export function renderOpenAiPromptMarked(
  api: Api,
  body: Record<string, unknown>,
  verbatim: OpenAiVerbatim | undefined,
): { prompt: string; marks: OpenAiPromptMark[] } {
  if (verbatim === undefined) return { prompt: renderOpenAiPrompt(api, body), marks: [] };
  const items = promptItems(api, body);
  const first = firstItemOf(api);
  const marks: OpenAiPromptMark[] = [];
  const mark = (at: number, identity: string | undefined) => {
    if (identity !== undefined) marks.push({ at, identity });
  };
  const texts: string[] = [];
  let at = 0;
  for (const [k, item] of items.entries()) {
    let text: string;
    if (k === first - 1 && Array.isArray(item) && verbatim.tools.size > 0) {
      // The tools, written as JSON.stringify writes the array, tool by tool to know where each begins.
      mark(at, identityOfSome(verbatim.tools.get(-1)));
      text = "[";
      for (const [i, tool] of item.entries()) {
        if (i > 0) text += ",";
        mark(at + text.length, identityOfSome(verbatim.tools.get(i)));
        text += JSON.stringify(tool) ?? "null";
      }
      text += "]";
    } else {
      text = JSON.stringify(item) ?? "";
      if (k === first) mark(at, identityOfSome(verbatim.items.get(-1)));
      if (k >= first) mark(at, identityOfSome(verbatim.items.get(k - first)));
    }
    texts.push(text);
    at += text.length + 1;
  }
  return { prompt: texts.join("\n"), marks };
}

/** Where the messages or input items begin among the prompt's items (the tools just before). */
function firstItemOf(api: Api): number {
  return api === "chat" ? 1 : 2;
}

/** The prompt's items in order: tools, then the instructions and messages or input items. */
function promptItems(api: Api, body: Record<string, unknown>): unknown[] {
  const parts: unknown[] = [body.tools ?? null];
  if (api === "chat") parts.push(...(body.messages as unknown[]));
  else {
    parts.unshift(body.instructions ?? null);
    const input = body.input;
    parts.push(...(typeof input === "string" ? [{ role: "user", content: input }] : (input as unknown[])));
  }
  return parts;
}

/**
 * The prompt of a request to a model with breakpoints (GPT-5.6 on), block by block, for its cache: an
 * item whose content (or tool output) is a list of blocks is its other fields, then each block, one
 * JSON text each (a breakpoint ends a block, not an item); any other item is one JSON text. Breakpoint
 * markers are not rendered (they are no tokens). An item's last unit says whether it ends a user or
 * tool message, where the implicit breakpoint goes. With `verbatim` (openai-verbatim.ts), a unit
 * holding a value the client wrote otherwise than JavaScript writes it carries the identity of that
 * text: the tools unit, an item's unit of its other fields, or one of its blocks.
 */
export function openAiBreakpointUnits(
  api: Api,
  body: Record<string, unknown>,
  verbatim?: OpenAiVerbatim,
): OpenAiPromptUnit[] {
  const render = (value: unknown) =>
    JSON.stringify(value, (key, v: unknown) => (key === "prompt_cache_breakpoint" ? undefined : v));
  const first = firstItemOf(api);
  const withIdentity = (unit: OpenAiPromptUnit, identity: string | undefined): OpenAiPromptUnit =>
    identity === undefined ? unit : { ...unit, identity };
  return promptItems(api, body).flatMap((part, k): OpenAiPromptUnit[] => {
    const item = (part ?? {}) as Record<string, unknown>;
    const type = item.type ?? "message";
    const userOrTool =
      (type === "message" && (item.role === "user" || item.role === "tool")) ||
      type === "function_call_output" ||
      type === "custom_tool_call_output";
    const field = Array.isArray(item.content) ? "content" : Array.isArray(item.output) ? "output" : undefined;
    // The holders of values JavaScript cannot keep in this item (the tools: all of them in one unit).
    const holders =
      verbatim === undefined || k < first - 1
        ? undefined
        : k === first - 1
          ? [...verbatim.tools.values()].flat()
          : [
              ...(k === first ? (verbatim.items.get(-1) ?? []) : []),
              ...(verbatim.items.get(k - first) ?? []),
            ];
    if (field === undefined)
      return [withIdentity({ text: render(part), breakpoint: false, userOrTool }, identityOfSome(holders))];
    const { [field]: blocks, ...rest } = item;
    const list = blocks as Record<string, unknown>[];
    return [
      withIdentity(
        { text: render(rest), breakpoint: false, userOrTool: userOrTool && list.length === 0 },
        identityOfSome(holders, (h) => h.part?.field !== field),
      ),
      ...list.map((block, i) =>
        withIdentity(
          {
            text: render(block),
            breakpoint:
              block !== null && typeof block === "object" && block.prompt_cache_breakpoint !== undefined,
            userOrTool: userOrTool && i === list.length - 1,
          },
          identityOfSome(holders, (h) => h.part?.field === field && h.part.index === i),
        ),
      ),
    ];
  });
}

async function serve(context: OpenAiRouteContext, ex: Exchange, api: Api): Promise<void> {
  const raw = await readBody(ex, context.maxBody);
  if (raw === undefined) return;
  const entry = ex.entry;
  const apiKey = context.authenticate(ex);
  let parsed: unknown;
  // Where the body holds values JavaScript cannot keep: looked for only in a body JavaScript did not write.
  let unkept: UnkeptValueText[];
  try {
    ({ value: parsed, unkept } = parseJsonWithUnkept(raw, promptFieldOf(api)));
  } catch {
    throw new OpenAiApiError(
      400,
      "We could not parse the JSON body of your request.",
      "invalid_request_error",
    );
  }
  const body = api === "chat" ? validateChatRequest(parsed) : validateResponsesRequest(parsed);
  const verbatim = unkept.length === 0 ? undefined : openAiVerbatimOf(api, unkept);
  const model = String(body.model);
  entry.model = model;
  const stream = body.stream === true;
  entry.stream = stream;
  const canonical = api === "chat" ? chatRequestToCanonical(body) : responsesRequestToCanonical(body);
  const namespaced = api === "responses" ? namespacedTools(body) : new Map<string, NamespacedTool>();
  const reply = runScriptedModel({
    ...canonical,
    ...(namespaced.size === 0
      ? {}
      : { tools: [...(canonical.tools ?? []), ...[...namespaced.values()].map((tool) => tool.definition)] }),
    max_tokens: canonical.max_tokens ?? 4096,
  } as unknown as MessagesRequest);
  entry.turn = reply.turn;
  if (reply.fault?.spec.kind === "status") {
    const fault = reply.fault.spec;
    const headers: Record<string, string> =
      fault.retryAfterSeconds === undefined ? {} : { "retry-after": String(fault.retryAfterSeconds) };
    throw new OpenAiApiError(
      fault.status,
      `Simulated fault (HTTP ${fault.status})`,
      fault.status === 429 ? "rate_limit_exceeded" : "server_error",
      null,
      null,
      headers,
    );
  }
  const scope = cacheScopeOf(context, ex, apiKey);
  const key = typeof body.prompt_cache_key === "string" ? body.prompt_cache_key : undefined;
  const breakpoints = modelFacts(model)?.explicitCacheBreakpoints === true;
  const plan = breakpoints
    ? context.openAiCache.planBreakpoints(
        scope,
        openAiBreakpointUnits(api, body, verbatim),
        key,
        (body.prompt_cache_options as { mode?: "implicit" | "explicit" } | undefined)?.mode,
      )
    : planPrefixes(context, scope, api, body, verbatim, key, model);
  acceptWithUsage(context, ex, { ...plan, outputTokens: reply.outputTokens, stream });
  // OpenAI names tool calls `call_…`; the scripted model's ids are Anthropic's `toolu_…`.
  const calls = reply.content.flatMap((b) => {
    if (b.type !== "tool_use") return [];
    const id = b.id.replace(/^toolu_/, "call_");
    const inNamespace = namespaced.get(b.name);
    return [
      inNamespace === undefined
        ? { id, name: b.name, input: b.input }
        : { id, namespace: inNamespace.namespace, name: inNamespace.name, input: b.input },
    ];
  });
  const text = reply.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
  entry.stopReason = calls.length > 0 ? "tool_use" : reply.stopReason;
  const ttft = reply.ttftMs ?? context.ttftMs;
  if (!(await sleep(ttft, ex.abort.signal))) return;
  const id = ex.id.slice(7);
  const answer: Answer = {
    id,
    model,
    text,
    calls,
    finish: reply.stopReason === "max_tokens" ? "length" : calls.length > 0 ? "tool_calls" : "stop",
    outputTokens: reply.outputTokens,
    promptTokens: plan.promptTokens,
    cachedTokens: plan.cachedTokens,
    // Reported where the API reports it, from the GPT-5.6 family on.
    ...(breakpoints ? { writtenTokens: plan.writtenTokens } : {}),
  };
  const payload = api === "chat" ? chatAnswer(answer, stream, body) : responsesAnswer(answer, stream, body);
  const { res } = ex;
  res.writeHead(
    200,
    stream
      ? { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" }
      : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
  );
  entry.status = 200;
  context.openAiCache.commit(plan);
  context.firstByte(ex, stream);
  entry.outputTokensSent = reply.outputTokens;
  res.end(payload);
}

/** The plan of a request to a model before the GPT-5.6 family: its prompt's step-aligned prefixes. */
function planPrefixes(
  context: OpenAiRouteContext,
  scope: string,
  api: Api,
  body: Record<string, unknown>,
  verbatim: OpenAiVerbatim | undefined,
  key: string | undefined,
  model: string,
) {
  const { prompt, marks } = renderOpenAiPromptMarked(api, body, verbatim);
  return context.openAiCache.plan(
    scope,
    prompt,
    key,
    openAiRetentionOf(model, body.prompt_cache_retention),
    marks,
  );
}

/** A function tool of a Responses `namespace` tool, as the scripted model sees it. */
interface NamespacedTool {
  namespace: string;
  name: string;
  definition: { name: string; description?: unknown; input_schema: unknown };
}

/**
 * The function tools inside a Responses request's `namespace` tools (how the Codex CLI offers an MCP
 * server's tools), by the name a script calls them: `<namespace>__<name>`, e.g. `mcp__forkd__fork`.
 * The API's call of such a tool names the namespace beside the function.
 */
function namespacedTools(body: Record<string, unknown>): Map<string, NamespacedTool> {
  const found = new Map<string, NamespacedTool>();
  for (const tool of Array.isArray(body.tools) ? (body.tools as Record<string, unknown>[]) : []) {
    if (tool?.type !== "namespace" || typeof tool.name !== "string" || !Array.isArray(tool.tools)) continue;
    for (const inner of tool.tools as Record<string, unknown>[]) {
      if (inner?.type !== "function" || typeof inner.name !== "string") continue;
      const scripted = `${tool.name}__${inner.name}`;
      found.set(scripted, {
        namespace: tool.name,
        name: inner.name,
        definition: {
          name: scripted,
          ...(inner.description === undefined ? {} : { description: inner.description }),
          input_schema: inner.parameters ?? { type: "object", properties: {} },
        },
      });
    }
  }
  return found;
}

interface Answer {
  id: string;
  model: string;
  text: string;
  calls: { id: string; namespace?: string; name: string; input: unknown }[];
  finish: "stop" | "length" | "tool_calls";
  outputTokens: number;
  promptTokens: number;
  cachedTokens: number;
  /** `cache_write_tokens`, on models that bill writes. */
  writtenTokens?: number;
}

/** The prompt's token details: cached tokens, and the written ones where the model reports them. */
function tokenDetails(a: Answer): { cached_tokens: number; cache_write_tokens?: number } {
  return {
    cached_tokens: a.cachedTokens,
    ...(a.writtenTokens === undefined ? {} : { cache_write_tokens: a.writtenTokens }),
  };
}

function chatUsage(a: Answer) {
  return {
    prompt_tokens: a.promptTokens,
    completion_tokens: a.outputTokens,
    total_tokens: a.promptTokens + a.outputTokens,
    prompt_tokens_details: { ...tokenDetails(a), audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/** A Chat Completions answer: one JSON object, or `chat.completion.chunk` events and `[DONE]`. */
function chatAnswer(a: Answer, stream: boolean, body: Record<string, unknown>): string {
  const created = Math.floor(Date.now() / 1000);
  const toolCalls = a.calls.map((c) => ({
    id: c.id,
    type: "function",
    function: { name: c.name, arguments: JSON.stringify(c.input) },
  }));
  const base = {
    id: `chatcmpl-${a.id}`,
    object: "chat.completion",
    created,
    model: a.model,
    service_tier: "default",
    system_fingerprint: null,
  };
  if (!stream) {
    const message = {
      role: "assistant",
      content: a.text === "" && toolCalls.length > 0 ? null : a.text,
      refusal: null,
      annotations: [],
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    };
    return JSON.stringify({
      ...base,
      choices: [{ index: 0, message, logprobs: null, finish_reason: a.finish }],
      usage: chatUsage(a),
    });
  }
  const withUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
  const chunk = (choices: unknown[], usage?: unknown) =>
    `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices, ...(withUsage ? { usage: usage ?? null } : {}) })}\n\n`;
  const delta = (d: Record<string, unknown>, finish: string | null = null) =>
    chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
  const out = [delta({ role: "assistant", content: "", refusal: null })];
  for (let i = 0; i < a.text.length; i += 64) out.push(delta({ content: a.text.slice(i, i + 64) }));
  toolCalls.forEach((call, index) => {
    out.push(
      delta({
        tool_calls: [
          { index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } },
        ],
      }),
    );
    out.push(delta({ tool_calls: [{ index, function: { arguments: call.function.arguments } }] }));
  });
  out.push(delta({}, a.finish));
  if (withUsage) out.push(chunk([], chatUsage(a)));
  out.push("data: [DONE]\n\n");
  return out.join("");
}

/**
 * The reasoning item a reasoning model (the GPT-5 families) puts first in every Responses
 * output: an id, an empty summary, and the reasoning itself encrypted only when the request asked
 * for it (`include: ["reasoning.encrypted_content"]`, how a request that stores nothing keeps its
 * reasoning for the next turn). Without it, only the id refers to the reasoning, on the server.
 */
function reasoningItem(a: Answer, body: Record<string, unknown>): Record<string, unknown> | undefined {
  if (modelFacts(a.model)?.reasons !== true) return undefined;
  const encrypted = Array.isArray(body.include) && body.include.includes("reasoning.encrypted_content");
  return {
    id: `rs_${a.id}`,
    type: "reasoning",
    summary: [],
    ...(encrypted ? { encrypted_content: Buffer.from(`sim reasoning ${a.id}`).toString("base64") } : {}),
  };
}

/** A Responses answer: the response object, or its typed events (`response.created` … `response.completed`). */
function responsesAnswer(a: Answer, stream: boolean, body: Record<string, unknown>): string {
  const output: Record<string, unknown>[] = [];
  const reasoning = reasoningItem(a, body);
  if (reasoning !== undefined) output.push(reasoning);
  if (a.text !== "")
    output.push({
      id: `msg_${a.id}`,
      type: "message",
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text: a.text, annotations: [], logprobs: [] }],
    });
  for (const [i, c] of a.calls.entries())
    output.push({
      id: `fc_${a.id}_${i}`,
      type: "function_call",
      status: "completed",
      call_id: c.id,
      ...(c.namespace === undefined ? {} : { namespace: c.namespace }),
      name: c.name,
      arguments: JSON.stringify(c.input),
    });
  const usage = {
    input_tokens: a.promptTokens,
    input_tokens_details: tokenDetails(a),
    output_tokens: a.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: a.promptTokens + a.outputTokens,
  };
  const response = (status: string, done: boolean) => ({
    id: `resp_${a.id}`,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: a.finish === "length" && done ? { reason: "max_output_tokens" } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: a.model,
    output: done ? output : [],
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    reasoning: { effort: null, summary: null },
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: "text" } },
    tool_choice: body.tool_choice ?? "auto",
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: "disabled",
    usage: done ? usage : null,
    metadata: {},
  });
  const final = a.finish === "length" ? "incomplete" : "completed";
  if (!stream) return JSON.stringify(response(final, true));
  let seq = 0;
  const event = (type: string, data: Record<string, unknown>) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`;
  const out = [
    event("response.created", { response: response("in_progress", false) }),
    event("response.in_progress", { response: response("in_progress", false) }),
  ];
  output.forEach((item, index) => {
    if (item.type === "message") {
      const text = a.text;
      out.push(
        event("response.output_item.added", {
          output_index: index,
          item: { ...item, status: "in_progress", content: [] },
        }),
      );
      const part = { type: "output_text", text: "", annotations: [], logprobs: [] };
      out.push(
        event("response.content_part.added", {
          item_id: item.id,
          output_index: index,
          content_index: 0,
          part,
        }),
      );
      for (let i = 0; i < text.length; i += 64)
        out.push(
          event("response.output_text.delta", {
            item_id: item.id,
            output_index: index,
            content_index: 0,
            delta: text.slice(i, i + 64),
            logprobs: [],
          }),
        );
      out.push(
        event("response.output_text.done", {
          item_id: item.id,
          output_index: index,
          content_index: 0,
          text,
          logprobs: [],
        }),
      );
      out.push(
        event("response.content_part.done", {
          item_id: item.id,
          output_index: index,
          content_index: 0,
          part: { ...part, text },
        }),
      );
    } else if (item.type === "reasoning") {
      // The encrypted content comes with the finished item only.
      const { encrypted_content: _, ...added } = item;
      out.push(event("response.output_item.added", { output_index: index, item: added }));
    } else {
      out.push(
        event("response.output_item.added", {
          output_index: index,
          item: { ...item, status: "in_progress", arguments: "" },
        }),
      );
      out.push(
        event("response.function_call_arguments.delta", {
          item_id: item.id,
          output_index: index,
          delta: item.arguments,
        }),
      );
      out.push(
        event("response.function_call_arguments.done", {
          item_id: item.id,
          output_index: index,
          arguments: item.arguments,
        }),
      );
    }
    out.push(event("response.output_item.done", { output_index: index, item }));
  });
  out.push(
    event(final === "completed" ? "response.completed" : "response.incomplete", {
      response: response(final, true),
    }),
  );
  return out.join("");
}
