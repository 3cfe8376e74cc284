// What the OpenAI API refuses, with its wording: top-level fields outside the SDK's request types,
// unknown models, tool calls and tool outputs that do not answer each other, and references to stored
// items in a request that stores nothing.
import { modelFacts } from "@forkd/protocol";
import { badRequest, OpenAiApiError } from "./openai-errors.js";

/** `ChatCompletionCreateParams`' fields (openai 6.49 and 7.55 alike). */
const CHAT_FIELDS = new Set(
  "messages model audio frequency_penalty function_call functions logit_bias logprobs max_completion_tokens max_tokens metadata modalities moderation n parallel_tool_calls prediction presence_penalty prompt_cache_key prompt_cache_options prompt_cache_retention reasoning_effort response_format safety_identifier seed service_tier stop store stream stream_options temperature tool_choice tools top_logprobs top_p user verbosity web_search_options".split(
    " ",
  ),
);
/**
 * `ResponseCreateParams`' fields (openai 7.55, the newest SDK types), and `client_metadata`, which
 * the Codex CLI sends to the real API with every request (so the API takes it, though no SDK type
 * names it yet).
 */
const RESPONSES_FIELDS = new Set(
  "access_programs client_metadata image max_tool_calls background context_management conversation include input instructions max_output_tokens metadata model moderation parallel_tool_calls previous_response_id prompt prompt_cache_key prompt_cache_options prompt_cache_retention reasoning safety_identifier service_tier store stream stream_options temperature text tool_choice tools top_logprobs top_p truncation user".split(
    " ",
  ),
);

/**
 * Whether the simulator serves `model` on the OpenAI routes: the OpenAI families in forkd's model
 * facts, whose caching it models (the GPT-5.6 family's breakpoints and write charges included).
 */
export function isSimOpenAiModel(model: string): boolean {
  return model.startsWith("gpt-") && modelFacts(model)?.cacheReadMultiplier !== undefined;
}

function common(body: unknown, fields: Set<string>): Record<string, unknown> {
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw badRequest("We could not parse the JSON body of your request.");
  const record = body as Record<string, unknown>;
  for (const key of Object.keys(record))
    if (!fields.has(key)) throw badRequest(`Unrecognized request argument supplied: ${key}`, key);
  if (typeof record.model !== "string" || record.model === "")
    throw badRequest("you must provide a model parameter", "model");
  if (!isSimOpenAiModel(record.model))
    throw new OpenAiApiError(
      404,
      `The model \`${record.model}\` does not exist or you do not have access to it.`,
      "invalid_request_error",
      null,
      "model_not_found",
    );
  if (
    record.prompt_cache_key !== undefined &&
    record.prompt_cache_key !== null &&
    typeof record.prompt_cache_key !== "string"
  )
    throw badRequest("Invalid type for 'prompt_cache_key': expected a string.", "prompt_cache_key");
  checkBreakpointOptions(record);
  const retention = record.prompt_cache_retention;
  if (retention !== undefined && retention !== null && retention !== "in_memory" && retention !== "24h")
    throw badRequest(
      `Invalid value: '${String(retention)}'. Supported values are: 'in_memory' and '24h'.`,
      "prompt_cache_retention",
    );
  return record;
}

/** The content blocks of an item (a message's content, a tool output's parts) that carry a breakpoint. */
function markedBlocks(item: Record<string, unknown>): Record<string, unknown>[] {
  const blocks = [item.content, item.output].flatMap((value) => (Array.isArray(value) ? value : []));
  return (blocks as Record<string, unknown>[]).filter(
    (block) => block !== null && typeof block === "object" && block.prompt_cache_breakpoint !== undefined,
  );
}

/** Output blocks: a breakpoint marks input only (the SDK's types put it on input blocks alone). */
const OUTPUT_BLOCK_TYPES = new Set(["output_text", "refusal"]);

/**
 * `prompt_cache_options` and every `prompt_cache_breakpoint`, checked against the SDK's types. A
 * model before the GPT-5.6 family refuses both: the docs say only that they are "supported for
 * gpt-5.6 and later models"; the simulator takes the stricter reading (a 400, not silence).
 */
function checkBreakpointOptions(record: Record<string, unknown>): void {
  const supported = modelFacts(String(record.model))?.explicitCacheBreakpoints === true;
  const options = record.prompt_cache_options;
  if (options !== undefined && options !== null) {
    if (!supported)
      throw badRequest(
        `'prompt_cache_options' is not supported with the model '${String(record.model)}'.`,
        "prompt_cache_options",
      );
    if (typeof options !== "object" || Array.isArray(options))
      throw badRequest(
        "Invalid type for 'prompt_cache_options': expected an object.",
        "prompt_cache_options",
      );
    for (const [field, value] of Object.entries(options)) {
      const allowed = field === "mode" ? ["implicit", "explicit"] : field === "ttl" ? ["30m"] : undefined;
      if (allowed === undefined)
        throw badRequest(
          `Unrecognized request argument supplied: prompt_cache_options.${field}`,
          `prompt_cache_options.${field}`,
        );
      if (!allowed.includes(value as string))
        throw badRequest(
          `Invalid value: '${String(value)}'. Supported values are: ${allowed.map((v) => `'${v}'`).join(" and ")}.`,
          `prompt_cache_options.${field}`,
        );
    }
  }
  const items = [
    ...(Array.isArray(record.messages) ? record.messages : []),
    ...(Array.isArray(record.input) ? record.input : []),
  ] as Record<string, unknown>[];
  for (const [i, item] of items.entries()) {
    for (const block of markedBlocks(item ?? {})) {
      const at = `${Array.isArray(record.messages) ? "messages" : "input"}[${i}]`;
      if (!supported)
        throw badRequest(
          `'prompt_cache_breakpoint' is not supported with the model '${String(record.model)}'.`,
          at,
        );
      if (OUTPUT_BLOCK_TYPES.has(String(block.type)))
        throw badRequest(
          `'prompt_cache_breakpoint' is not supported on content of type '${String(block.type)}'.`,
          at,
        );
      const marker = block.prompt_cache_breakpoint as Record<string, unknown> | null;
      if (
        marker === null ||
        typeof marker !== "object" ||
        marker.mode !== "explicit" ||
        Object.keys(marker).length !== 1
      )
        throw badRequest('Invalid value for \'prompt_cache_breakpoint\': expected {"mode": "explicit"}.', at);
    }
  }
}

/** A Chat Completions request, checked. @throws {@link OpenAiApiError} */
export function validateChatRequest(body: unknown): Record<string, unknown> {
  const record = common(body, CHAT_FIELDS);
  const messages = record.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    throw badRequest(
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      "messages",
    );
  let open: string[] = [];
  for (const [i, m] of (messages as Record<string, unknown>[]).entries()) {
    const role = m?.role;
    if (!["system", "developer", "user", "assistant", "tool"].includes(String(role)))
      throw badRequest(
        `Invalid value: '${String(role)}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function', and 'developer'.`,
        `messages[${i}].role`,
      );
    if (role === "tool") {
      const id = String(m.tool_call_id);
      if (!open.includes(id))
        throw badRequest(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${i}].role`,
        );
      open = open.filter((x) => x !== id);
      continue;
    }
    if (open.length > 0)
      throw badRequest(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${open.join(", ")}`,
        "messages",
      );
    if (role === "assistant" && Array.isArray(m.tool_calls))
      open = (m.tool_calls as { id?: unknown }[]).map((c) => String(c.id));
  }
  if (open.length > 0)
    throw badRequest(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${open.join(", ")}`,
      "messages",
    );
  if (record.stream_options !== undefined && record.stream !== true)
    throw badRequest(
      "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
      "stream_options",
    );
  return record;
}

/** A Responses request, checked. @throws {@link OpenAiApiError} */
export function validateResponsesRequest(body: unknown): Record<string, unknown> {
  const record = common(body, RESPONSES_FIELDS);
  if (record.previous_response_id !== undefined && record.previous_response_id !== null)
    throw new OpenAiApiError(
      404,
      `Previous response with id '${String(record.previous_response_id)}' not found.`,
      "invalid_request_error",
      "previous_response_id",
      "previous_response_not_found",
    );
  const input = record.input;
  if (typeof input !== "string" && !Array.isArray(input))
    throw badRequest("Missing required parameter: 'input'.", "input");
  if (Array.isArray(input)) {
    const calls = new Set<string>();
    const answered = new Set<string>();
    for (const item of input as Record<string, unknown>[]) {
      const type = String(item.type ?? "message");
      // With `store: false` nothing was stored: an item that only refers to a stored one (a reference,
      // or a reasoning item without its encrypted content) cannot be resolved. Items sent back whole
      // keep their ids: the Codex CLI sends its messages, calls, outputs and encrypted reasoning so.
      if (
        record.store === false &&
        (type === "item_reference" || (type === "reasoning" && typeof item.encrypted_content !== "string"))
      )
        throw badRequest(
          `Item with id '${String(item.id)}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`,
          "input",
        );
      if (type === "function_call" || type === "custom_tool_call") calls.add(String(item.call_id));
      if (type === "function_call_output" || type === "custom_tool_call_output") {
        const id = String(item.call_id);
        if (!calls.has(id))
          throw badRequest(`No tool call found for function call output with call_id ${id}.`, "input");
        answered.add(id);
      }
    }
    for (const id of calls)
      if (!answered.has(id)) throw badRequest(`No tool output found for function call ${id}.`, "input");
  }
  return record;
}
