/**
 * Request validation: the common checks Anthropic makes on a Messages request, with errors in its
 * words (`<path>: <problem>`), each a 400 `invalid_request_error`. A field the API does not know,
 * at the top level, on a message, a checked block or a custom tool, is refused
 * (`<path>: Extra inputs are not permitted`), as the API does; `role: "system"` messages need the
 * mid-conversation-system beta. The request is checked in place and returned typed.
 */
import { modelFacts } from "@forkd/protocol";
import { invalidRequest } from "./errors.js";
import {
  BLOCK_FIELDS,
  CUSTOM_TOOL_FIELDS,
  MESSAGE_FIELDS,
  REQUEST_FIELDS,
  SAMPLING_FIELDS,
  SYSTEM_MESSAGE_BETAS,
  SYSTEM_MESSAGE_FIELDS,
} from "./known-fields.js";
import type { MessagesRequest } from "./types.js";

type Json = Record<string, unknown>;

const BLOCK_TYPES_USER = new Set([
  "text",
  "image",
  "document",
  "tool_result",
  "search_result",
  "container_upload",
]);
const BLOCK_TYPES_ASSISTANT = new Set([
  "text",
  "tool_use",
  "thinking",
  "redacted_thinking",
  "server_tool_use",
  "web_search_tool_result",
  "web_fetch_tool_result",
  "code_execution_tool_result",
  "bash_code_execution_tool_result",
  "text_editor_code_execution_tool_result",
  "mcp_tool_use",
  "mcp_tool_result",
  "container_upload",
]);
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function fail(path: string, problem: string): never {
  throw invalidRequest(path === "" ? problem : `${path}: ${problem}`);
}

const REQUEST_FIELD_SET: ReadonlySet<string> = new Set([...REQUEST_FIELDS, ...SAMPLING_FIELDS]);
const MESSAGE_FIELD_SET: ReadonlySet<string> = new Set(MESSAGE_FIELDS);
const SYSTEM_MESSAGE_FIELD_SET: ReadonlySet<string> = new Set(SYSTEM_MESSAGE_FIELDS);
const CUSTOM_TOOL_FIELD_SET: ReadonlySet<string> = new Set(CUSTOM_TOOL_FIELDS);
const BLOCK_FIELD_SETS: ReadonlyMap<string, ReadonlySet<string>> = new Map(
  Object.entries(BLOCK_FIELDS).map(([type, fields]) => [type, new Set<string>(fields)]),
);

/** Refuses the first field of `v` that `known` does not hold, in the API's words. */
function checkNoExtraFields(v: Json, known: ReadonlySet<string>, path: string): void {
  for (const key of Object.keys(v)) {
    if (!known.has(key)) fail(path === "" ? key : `${path}.${key}`, "Extra inputs are not permitted");
  }
}

function checkCacheControl(v: unknown, path: string): void {
  if (v === undefined || v === null) return;
  if (!isObject(v)) fail(path, "Input should be a valid dictionary");
  if (v.type !== "ephemeral") fail(`${path}.type`, "Input should be 'ephemeral'");
  if (v.ttl !== undefined && v.ttl !== "5m" && v.ttl !== "1h")
    fail(`${path}.ttl`, "Input should be '5m' or '1h'");
}

function checkText(v: unknown, path: string): void {
  if (typeof v !== "string")
    fail(path, v === undefined ? "Field required" : "Input should be a valid string");
  if (v.length === 0) fail(path.replace(/\.text$/, ""), "text content blocks must be non-empty");
}

const WHITESPACE_ONLY = /^\s+$/;
/** The API's words for a text of a message (block or string content) that is all whitespace. */
const WHITESPACE_TEXT = "text content blocks must contain non-whitespace text";

function checkBlock(b: unknown, path: string, role: "user" | "assistant" | "tool_result"): void {
  if (!isObject(b)) fail(path, "Input should be a valid dictionary");
  const type = b.type;
  if (typeof type !== "string") fail(`${path}.type`, "Field required");
  const allowed = role === "assistant" ? BLOCK_TYPES_ASSISTANT : BLOCK_TYPES_USER;
  // A tool result may load deferred tools by reference (client-side tool search); nothing else may.
  const reference = role === "tool_result" && type === "tool_reference";
  if ((!allowed.has(type) && !reference) || (role === "tool_result" && type === "tool_result")) {
    fail(
      path,
      `Input tag '${type}' found using 'type' does not match any of the expected tags for ${role} content`,
    );
  }
  const known = BLOCK_FIELD_SETS.get(type);
  if (known !== undefined) checkNoExtraFields(b, known, path);
  switch (type) {
    case "text":
      checkText(b.text, `${path}.text`);
      // In messages (tool results included) a blank text is refused too, as an empty one is; the
      // API names only `messages` (claude-code#23440). The system prompt is not held to this.
      if (WHITESPACE_ONLY.test(b.text as string)) fail("messages", WHITESPACE_TEXT);
      break;
    case "tool_use":
      if (typeof b.id !== "string" || b.id === "") fail(`${path}.id`, "Field required");
      if (typeof b.name !== "string" || !TOOL_NAME.test(b.name)) {
        fail(`${path}.name`, "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'");
      }
      if (!isObject(b.input)) fail(`${path}.input`, "Input should be a valid dictionary");
      break;
    case "tool_reference":
      if (typeof b.tool_name !== "string" || b.tool_name === "") fail(`${path}.tool_name`, "Field required");
      break;
    case "tool_result": {
      if (typeof b.tool_use_id !== "string" || b.tool_use_id === "")
        fail(`${path}.tool_use_id`, "Field required");
      const c = b.content;
      if (Array.isArray(c))
        c.forEach((inner, i) => {
          checkBlock(inner, `${path}.content.${i}`, "tool_result");
        });
      else if (c !== undefined && typeof c !== "string")
        fail(`${path}.content`, "Input should be a valid string or list");
      if (b.is_error !== undefined && typeof b.is_error !== "boolean") {
        fail(`${path}.is_error`, "Input should be a valid boolean");
      }
      break;
    }
    case "thinking":
      if (typeof b.thinking !== "string") fail(`${path}.thinking`, "Field required");
      if (typeof b.signature !== "string") fail(`${path}.signature`, "Field required");
      if (b.cache_control != null)
        fail(`${path}.cache_control`, "cache_control cannot be set on thinking blocks");
      break;
    case "redacted_thinking":
      if (typeof b.data !== "string") fail(`${path}.data`, "Field required");
      if (b.cache_control != null)
        fail(`${path}.cache_control`, "cache_control cannot be set on thinking blocks");
      break;
  }
  checkCacheControl(b.cache_control, `${path}.cache_control`);
}

/**
 * A custom tool's `input_schema`: an object whose `type` is `"object"` (the SDK's
 * `BetaTool.InputSchema`: `type: 'object'`), with no `oneOf`, `allOf` or `anyOf` at its top. The API's
 * words and paths, which name the tool's kind (`custom`): `tools.0.custom.input_schema: Field
 * required` (mnfst/llm-gateway#1886), `tools.26.custom.input_schema.type: Field required`
 * (lidge-jun/opencodex#75, Kilo-Org/kilocode#12238), `tools.1.custom.input_schema: input_schema does
 * not support oneOf, allOf, or anyOf at the top level` (Hmbown/Codewhale#4329). A `type` other than
 * `"object"` gets the validation's wording for a literal; that refusal is not quoted.
 */
function checkInputSchema(schema: unknown, path: string): void {
  if (schema === undefined || schema === null) fail(path, "Field required");
  if (!isObject(schema)) fail(path, "Input should be a valid dictionary");
  if (schema.type === undefined) fail(`${path}.type`, "Field required");
  if (schema.type !== "object") fail(`${path}.type`, "Input should be 'object'");
  if (["oneOf", "allOf", "anyOf"].some((k) => k in schema)) {
    fail(path, "input_schema does not support oneOf, allOf, or anyOf at the top level");
  }
}

function checkTools(tools: unknown): Set<string> {
  const names = new Set<string>();
  if (tools === undefined) return names;
  if (!Array.isArray(tools)) fail("tools", "Input should be a valid list");
  tools.forEach((t, i) => {
    const path = `tools.${i}`;
    if (!isObject(t)) fail(path, "Input should be a valid dictionary");
    if (typeof t.name !== "string" || !TOOL_NAME.test(t.name)) {
      fail(`${path}.name`, "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'");
    }
    const custom = t.type === undefined || t.type === "custom";
    if (custom) checkNoExtraFields(t, CUSTOM_TOOL_FIELD_SET, path);
    if (custom) checkInputSchema(t.input_schema, `${path}.custom.input_schema`);
    if (t.description !== undefined && typeof t.description !== "string") {
      fail(`${path}.description`, "Input should be a valid string");
    }
    if (names.has(t.name)) fail("tools", `Tool names must be unique. Duplicate: '${t.name}'`);
    names.add(t.name);
    checkCacheControl(t.cache_control, `${path}.cache_control`);
  });
  return names;
}

function checkSystem(system: unknown): void {
  if (system === undefined || typeof system === "string") return;
  if (!Array.isArray(system)) fail("system", "Input should be a valid string or list");
  system.forEach((b, i) => {
    const path = `system.${i}`;
    if (!isObject(b)) fail(path, "Input should be a valid dictionary");
    if (b.type !== "text") fail(`${path}.type`, "Input should be 'text'");
    checkNoExtraFields(b, BLOCK_FIELD_SETS.get("text") as ReadonlySet<string>, path);
    checkText(b.text, `${path}.text`);
    checkCacheControl(b.cache_control, `${path}.cache_control`);
  });
}

function checkSystemMessage(m: Json, path: string, systemAllowed: boolean): void {
  if (!systemAllowed) {
    fail(
      `${path}.role`,
      `Input should be 'user' or 'assistant' (system messages need a ${SYSTEM_MESSAGE_BETAS.join("-* or ")}-* beta)`,
    );
  }
  checkNoExtraFields(m, SYSTEM_MESSAGE_FIELD_SET, path);
  const content = m.content;
  // The SDK's doc comment on a system message's `output_config`: "An empty `{}` is accepted on a
  // message that carries content; a message with neither content nor output_config fields is
  // rejected." So a message may carry its per-turn settings alone (Claude Code 2.1 sends
  // `{role: "system", content: [], output_config: {effort}}`).
  const settings = isObject(m.output_config) && Object.values(m.output_config).some((v) => v != null);
  if (content === undefined) {
    if (!settings) fail(`${path}.content`, "Field required");
  } else if (typeof content === "string") {
    if (content.length === 0) fail(`${path}.content`, "text content blocks must be non-empty");
  } else if (Array.isArray(content)) {
    if (content.length === 0 && !settings) fail(`${path}.content`, "List should have at least 1 item");
    content.forEach((b, j) => {
      checkSystemMessageBlock(b, `${path}.content.${j}`);
    });
  } else {
    fail(`${path}.content`, "Input should be a valid string or list");
  }
}

/**
 * A block of a system message: text, or a mid-conversation tool change (`tool_addition`,
 * `tool_removal`: the SDK's `BetaSystemMessageParam.content`, which Claude Code 2.1 sends to add or
 * withdraw a tool without changing `tools`). A tool change's `tool` must be an object; what it names
 * is not checked.
 */
function checkSystemMessageBlock(b: unknown, path: string): void {
  if (isObject(b) && (b.type === "tool_addition" || b.type === "tool_removal")) {
    checkNoExtraFields(b, BLOCK_FIELD_SETS.get(b.type) as ReadonlySet<string>, path);
    if (!isObject(b.tool)) fail(`${path}.tool`, "Field required");
  } else {
    if (!isObject(b) || b.type !== "text") {
      fail(`${path}.type`, "Input should be 'text', 'tool_addition' or 'tool_removal'");
    }
    checkNoExtraFields(b, BLOCK_FIELD_SETS.get("text") as ReadonlySet<string>, path);
    checkText(b.text, `${path}.text`);
  }
  checkCacheControl(b.cache_control, `${path}.cache_control`);
}

function checkMessages(allMessages: unknown, systemAllowed: boolean): void {
  if (allMessages === undefined) fail("messages", "Field required");
  if (!Array.isArray(allMessages)) fail("messages", "Input should be a valid list");
  if (allMessages.length === 0) fail("messages", "at least one message is required");
  // System messages may sit anywhere; turn order and tool pairing are those of the others.
  const conversation: { m: unknown; index: number }[] = [];
  allMessages.forEach((m, index) => {
    if (isObject(m) && m.role === "system") checkSystemMessage(m, `messages.${index}`, systemAllowed);
    else conversation.push({ m, index });
  });
  const messages = conversation.map(({ m }) => m);
  let pendingToolUses: string[] = []; // tool_use ids of the previous assistant message
  const toolUseIds = new Set<string>(); // every tool_use id so far: each may be used once per request
  messages.forEach((m, at) => {
    const i = conversation[at]!.index;
    const previousIndex = at > 0 ? conversation[at - 1]!.index : i - 1;
    const path = `messages.${i}`;
    if (!isObject(m)) fail(path, "Input should be a valid dictionary");
    const role = m.role;
    if (role !== "user" && role !== "assistant")
      fail(`${path}.role`, "Input should be 'user' or 'assistant'");
    checkNoExtraFields(m, MESSAGE_FIELD_SET, path);
    const content = m.content;
    const last = at === messages.length - 1;
    if (content === undefined) fail(`${path}.content`, "Field required");
    if (typeof content === "string") {
      if (content.length === 0 && !(last && role === "assistant")) {
        fail("messages", "text content blocks must be non-empty");
      }
      // A final assistant message (prefill) that is all whitespace gets the trailing-whitespace
      // error below instead.
      if (WHITESPACE_ONLY.test(content) && !(last && role === "assistant")) fail("messages", WHITESPACE_TEXT);
    } else if (Array.isArray(content)) {
      if (content.length === 0 && !(last && role === "assistant")) {
        fail(`${path}.content`, "List should have at least 1 item");
      }
      content.forEach((b, j) => {
        checkBlock(b, `${path}.content.${j}`, role);
      });
    } else {
      fail(`${path}.content`, "Input should be a valid string or list");
    }
    const blocks: Json[] = Array.isArray(content) ? (content as Json[]) : [];
    if (role === "user") {
      const answered = new Set<string>();
      let seenOther = false;
      blocks.forEach((b, j) => {
        if (b.type !== "tool_result") {
          seenOther = true;
          return;
        }
        const id = b.tool_use_id as string;
        if (!pendingToolUses.includes(id)) {
          fail(
            `${path}.content.${j}`,
            `unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        }
        if (seenOther) {
          fail(
            `${path}.content.${j}`,
            "`tool_result` blocks must come before any other content in a user message.",
          );
        }
        answered.add(id);
      });
      const missing = pendingToolUses.filter((id) => !answered.has(id));
      if (missing.length > 0) {
        fail(
          `messages.${previousIndex}`,
          `\`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      }
      pendingToolUses = [];
    } else {
      if (pendingToolUses.length > 0) {
        fail(
          `messages.${previousIndex}`,
          `\`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${pendingToolUses.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      }
      blocks.forEach((b, j) => {
        if (b.type !== "tool_use") return;
        if (toolUseIds.has(b.id as string)) fail(`${path}.content.${j}`, "`tool_use` ids must be unique");
        toolUseIds.add(b.id as string);
      });
      pendingToolUses = blocks.filter((b) => b.type === "tool_use").map((b) => b.id as string);
      if (last) {
        const tail =
          typeof content === "string" ? content : blocks.at(-1)?.type === "text" ? blocks.at(-1)?.text : "";
        if (typeof tail === "string" && tail.length > 0 && /\s$/.test(tail)) {
          fail("", "final assistant content cannot end with trailing whitespace");
        }
      }
    }
  });
}

function checkToolChoice(choice: unknown, names: Set<string>): void {
  if (choice === undefined) return;
  if (!isObject(choice)) fail("tool_choice", "Input should be a valid dictionary");
  const t = choice.type;
  if (t !== "auto" && t !== "any" && t !== "tool" && t !== "none") {
    fail("tool_choice.type", "Input should be 'auto', 'any', 'tool' or 'none'");
  }
  if (t === "tool") {
    if (typeof choice.name !== "string") fail("tool_choice.tool.name", "Field required");
    if (!names.has(choice.name)) fail("tool_choice", `Tool '${choice.name}' not found in tools`);
  }
  if (
    choice.disable_parallel_tool_use !== undefined &&
    typeof choice.disable_parallel_tool_use !== "boolean"
  ) {
    fail("tool_choice.disable_parallel_tool_use", "Input should be a valid boolean");
  }
}

/**
 * The model's own output ceiling (its `max_tokens` limit), in the API's words, which name the model
 * as the request did (quoted in many bug reports, e.g. `max_tokens: 8000 > 4096, which is the maximum
 * allowed number of output tokens for claude-3-haiku-20240307`). Models whose ceiling forkd does not
 * know are not checked.
 */
function checkOutputCeiling(model: string, maxTokens: number | undefined): void {
  const ceiling = modelFacts(model)?.maxOutputTokens;
  if (maxTokens === undefined || ceiling === undefined || maxTokens <= ceiling) return;
  fail(
    "",
    `max_tokens: ${maxTokens} > ${ceiling}, which is the maximum allowed number of output tokens for ${model}`,
  );
}

/**
 * The API's words when a model that thinks only adaptively is sent `thinking: {type: "enabled"}`
 * (measured on four models in handochan/aelix-ai#258). The reverse, adaptive thinking sent to an
 * older model, is refused as "adaptive thinking is not supported on this model"
 * (vellum-ai/vellum-assistant#37276).
 */
const ENABLED_THINKING_REFUSED =
  '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and ' +
  '"output_config.effort" to control thinking behavior.';

function checkThinking(thinking: unknown, maxTokens: number | undefined, model: string): void {
  if (thinking === undefined) return;
  if (!isObject(thinking)) fail("thinking", "Input should be a valid dictionary");
  const t = thinking.type;
  if (t === "disabled") return;
  const support = modelFacts(model)?.thinking;
  if (t === "adaptive") {
    if (support === "budget") fail("", "adaptive thinking is not supported on this model");
    return;
  }
  if (t !== "enabled") fail("thinking.type", "Input should be 'enabled', 'disabled' or 'adaptive'");
  if (support === "adaptive") fail("", ENABLED_THINKING_REFUSED);
  const budget = thinking.budget_tokens;
  if (typeof budget !== "number" || !Number.isInteger(budget)) {
    fail("thinking.enabled.budget_tokens", "Input should be a valid integer");
  }
  if (budget < 1024) fail("thinking.enabled.budget_tokens", "Input should be greater than or equal to 1024");
  if (maxTokens !== undefined && maxTokens <= budget) {
    fail("", "`max_tokens` must be greater than `thinking.budget_tokens`");
  }
}

/** The API's words when thinking is on and the turn that called the tools being answered does not start with it. */
const THINKING_FIRST =
  "When `thinking` is enabled, a final `assistant` message must start with a thinking block " +
  "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include " +
  "thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please " +
  "consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking";

/**
 * The rules `thinking: {type: "enabled"}` adds: no forced tool use (the API would have to prefill
 * the turn past the thinking), and, when the request answers tool calls, the assistant turn that made
 * them must start with its thinking block, so the model resumes its own reasoning. Adaptive thinking
 * is not held to either: the model may have chosen not to think in that turn, and no refusal of an
 * adaptive request has been seen.
 */
function checkThinkingTurns(body: Json): void {
  if (!isObject(body.thinking) || body.thinking.type !== "enabled") return;
  const choice = body.tool_choice;
  if (isObject(choice) && (choice.type === "any" || choice.type === "tool")) {
    fail("", "Thinking may not be enabled when tool_choice forces tool use.");
  }
  // System messages (beta) do not take part in the turn order; the indexes are the request's.
  const turns = (body.messages as Json[])
    .map((m, index) => ({ m, index }))
    .filter(({ m }) => m.role !== "system");
  const last = turns.at(-1);
  const previous = turns.at(-2);
  if (last === undefined || previous === undefined || last.m.role !== "user") return;
  const answersTools =
    Array.isArray(last.m.content) && (last.m.content as Json[]).some((b) => b.type === "tool_result");
  // Pairing is checked before: a user turn with results follows an assistant turn of blocks.
  if (!answersTools || previous.m.role !== "assistant") return;
  const first = (previous.m.content as Json[])[0]?.type;
  if (first !== "thinking" && first !== "redacted_thinking") {
    fail(
      `messages.${previous.index}.content.0.type`,
      `Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first)}\`. ${THINKING_FIRST}`,
    );
  }
}

/**
 * The API's words when a model that takes no prefill is sent a request whose last message is an
 * assistant turn, as strands-agents/sdk-python#1694, langchain-ai/deepagents#1585 and
 * smallmain/vscode-unify-chat-provider#249 (the whole error body, an `invalid_request_error`) quote it. Which models: `noPrefill` of `MODEL_FACTS` (Claude 4.6 on; the migration
 * guide, https://platform.claude.com/docs/en/about-claude/models/migration-guide: "Prefilling
 * assistant messages returns a 400 error on Claude 4.6 models").
 */
const PREFILL_REFUSED =
  "This model does not support assistant message prefill. The conversation must end with a user message.";

/**
 * A request ending on an assistant message (system messages aside) to a model that takes no
 * prefill. The SDK's own doc comment on `messages`: "On models that don't support prefill, creating
 * a message that ends with a partial `assistant` response returns a 400 error."
 */
function checkPrefillSupport(body: Json, model: string): void {
  if (modelFacts(model)?.noPrefill !== true) return;
  const last = (body.messages as Json[]).findLast((m) => m.role !== "system");
  if (last?.role === "assistant") fail("", PREFILL_REFUSED);
}

/**
 * A final assistant message (a prefill) with thinking blocks: refused when thinking is off (absent or
 * disabled), and refused when it ends on a thinking block, in the API's words as
 * tailcallhq/forgecode#1853 and #2107 quote them. Only the final message is held to the second rule:
 * whether the API holds earlier ones to it is not on record.
 */
function checkFinalAssistant(body: Json): void {
  const messages = body.messages as Json[];
  let index = messages.length - 1;
  while (index >= 0 && messages[index]!.role === "system") index--;
  const last = messages[index];
  if (last?.role !== "assistant" || !Array.isArray(last.content)) return;
  const blocks = last.content as Json[];
  const thinkingOn = isObject(body.thinking) && body.thinking.type !== "disabled";
  const first = blocks.findIndex((b) => b.type === "thinking" || b.type === "redacted_thinking");
  if (!thinkingOn && first !== -1) {
    fail(
      `messages.${index}.content.${first}`,
      "When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your request.",
    );
  }
  if (blocks.at(-1)?.type === "thinking") {
    fail(`messages.${index}`, "The final block in an assistant message cannot be `thinking`.");
  }
}

/** A `tool_reference` must name a tool of the request (the one it loads). */
function checkToolReferences(messages: Json[], names: ReadonlySet<string>): void {
  messages.forEach((message, m) => {
    if (!Array.isArray(message.content)) return;
    (message.content as Json[]).forEach((block, b) => {
      if (block.type !== "tool_result" || !Array.isArray(block.content)) return;
      (block.content as Json[]).forEach((inner, i) => {
        if (inner.type === "tool_reference" && !names.has(inner.tool_name as string)) {
          fail(
            `messages.${m}.content.${b}.content.${i}.tool_name`,
            `Tool reference '${String(inner.tool_name)}' not found in available tools`,
          );
        }
      });
    });
  });
}

/**
 * A cache pre-warm (`max_tokens: 0`) runs the prompt and generates nothing, so it cannot stream and
 * cannot be asked for what only generation gives. Anthropic's own `claude-api` skill
 * (anthropics/skills, skills/claude-api/shared/prompt-caching.md, "Pre-warming the cache", after
 * https://platform.claude.com/docs/en/build-with-claude/prompt-caching#pre-warming-the-cache): "`max_tokens:
 * 0` is an `invalid_request_error` with `stream: true`, `thinking.type: "enabled"`,
 * `output_config.format`, `tool_choice` of `{"type":"tool"}` or `{"type":"any"}`", and it answers
 * `content: []`, `stop_reason: "max_tokens"`, zero output tokens. The API's wording of these
 * refusals is not on record; these are the simulator's.
 */
function checkPreWarm(body: Json): void {
  if (body.max_tokens !== 0) return;
  const refuse = (what: string) => fail("max_tokens", `\`max_tokens: 0\` cannot be used with ${what}`);
  if (body.stream === true) refuse("`stream: true`");
  if (isObject(body.thinking) && body.thinking.type === "enabled") refuse('`thinking.type: "enabled"`');
  if (isObject(body.output_config) && body.output_config.format != null) refuse("`output_config.format`");
  const choice = body.tool_choice;
  if (isObject(choice) && (choice.type === "any" || choice.type === "tool")) {
    refuse(`\`tool_choice\` of type \`${choice.type}\``);
  }
}

/** A sampling parameter's type and range, in the API's validation words; `max` undefined: an integer. */
function checkSamplingRange(body: Json, field: string, max: number | undefined): void {
  const v = body[field];
  if (v === undefined || v === null) return;
  if (max === undefined) {
    if (typeof v !== "number" || !Number.isInteger(v)) fail(field, "Input should be a valid integer");
  } else if (typeof v !== "number") fail(field, "Input should be a valid number");
  if (v < 0) fail(field, "Input should be greater than or equal to 0");
  if (max !== undefined && v > max) fail(field, `Input should be less than or equal to ${max}`);
}

/**
 * `temperature` (0 to 1), `top_p` (0 to 1) and `top_k`, by model (`sampling` of `MODEL_FACTS`):
 * from Opus 4.7 on, a non-default value of any is refused as `` `temperature` is deprecated for this
 * model.`` (the API's words: UKGovernmentBEIS/inspect_ai#3721, RooCodeInc/Roo-Code#12162; `top_p`
 * and `top_k` worded alike, their refusals not quoted, and any value of theirs refused: their
 * defaults are not documented); on the 4.5 and 4.6 models `temperature` and `top_p` together are
 * refused in the API's words (Vali-98/ChatterUI#564). The range of `temperature`: "must be 0.0-1.0"
 * (anthropics/skills, shared/error-codes.md).
 */
function checkSampling(body: Json): void {
  checkSamplingRange(body, "temperature", 1);
  checkSamplingRange(body, "top_p", 1);
  checkSamplingRange(body, "top_k", undefined);
  const sampling = modelFacts(body.model as string)?.sampling;
  const set = (field: string) => body[field] !== undefined && body[field] !== null;
  if (sampling === "removed") {
    if (set("temperature") && body.temperature !== 1) fail("", "`temperature` is deprecated for this model.");
    for (const field of ["top_p", "top_k"])
      if (set(field)) fail("", `\`${field}\` is deprecated for this model.`);
  }
  if (sampling === "exclusive" && set("temperature") && set("top_p")) {
    fail("", "`temperature` and `top_p` cannot both be specified for this model. Please use only one.");
  }
}

/**
 * The betas that open `context_management` (names starting with one of these): it is a field of
 * the SDK's beta Messages params only, not of its Messages params, and the API refuses it as an
 * unknown field without its beta (Wei-Shaw/sub2api#2833, ericc-ch/copilot-api#217; compaction
 * edits come with `compact-*`, BerriAI/litellm#27593).
 */
const CONTEXT_MANAGEMENT_BETAS = ["context-management-", "compact-"] as const;

/** A field only a beta opens, sent without it: the API's unknown-field refusal. */
function checkBetaFields(body: Json, betas: readonly string[]): void {
  if (!("context_management" in body)) return;
  if (betas.some((beta) => CONTEXT_MANAGEMENT_BETAS.some((prefix) => beta.startsWith(prefix)))) return;
  fail("context_management", "Extra inputs are not permitted");
}

/**
 * Checks a Messages request body the way Anthropic does (the common rules) and returns it typed.
 * @param body the parsed JSON body
 * @param kind `"messages"` for `POST /v1/messages` (needs `max_tokens`), `"count_tokens"` otherwise
 * @throws {SimApiError} 400 `invalid_request_error` naming the field at fault
 */
export function validateRequest(
  body: unknown,
  kind: "messages" | "count_tokens",
  betas: readonly string[] = [],
): MessagesRequest {
  if (!isObject(body)) fail("", "request body must be a JSON object");
  checkNoExtraFields(body, REQUEST_FIELD_SET, "");
  checkBetaFields(body, betas);
  if (body.model === undefined) fail("model", "Field required");
  if (typeof body.model !== "string" || body.model === "") fail("model", "Input should be a valid string");
  const maxTokens = body.max_tokens;
  if (kind === "messages" || maxTokens !== undefined) {
    if (maxTokens === undefined) fail("max_tokens", "Field required");
    if (typeof maxTokens !== "number" || !Number.isInteger(maxTokens)) {
      fail("max_tokens", "Input should be a valid integer");
    }
    // `0` is the documented cache pre-warm: the SDK's doc comment on `max_tokens`, "Set to `0` to
    // populate the prompt cache without generating a response" (see checkPreWarm).
    if (maxTokens < 0) fail("max_tokens", "Input should be greater than or equal to 0");
  }
  checkMessages(
    body.messages,
    betas.some((beta) => SYSTEM_MESSAGE_BETAS.some((prefix) => beta.startsWith(`${prefix}-`))),
  );
  checkSystem(body.system);
  const names = checkTools(body.tools);
  checkToolReferences(body.messages as Json[], names);
  checkToolChoice(body.tool_choice, names);
  checkOutputCeiling(body.model, maxTokens as number | undefined);
  checkSampling(body);
  if (kind === "messages") checkPreWarm(body);
  checkThinking(body.thinking, maxTokens as number | undefined, body.model);
  checkThinkingTurns(body);
  checkPrefillSupport(body, body.model);
  checkFinalAssistant(body);
  checkCacheControl(body.cache_control, "cache_control");
  // The SDK's types: `service_tier?: 'auto' | 'standard_only'`, `speed?: 'standard' | 'fast' | null`.
  // An OpenAI-shaped value (`"default"`, `"flex"`, `"priority"`) passed on by a gateway is refused.
  if (
    body.service_tier !== undefined &&
    body.service_tier !== "auto" &&
    body.service_tier !== "standard_only"
  ) {
    fail("service_tier", "Input should be 'auto' or 'standard_only'");
  }
  if (body.speed != null && body.speed !== "standard" && body.speed !== "fast") {
    fail("speed", "Input should be 'standard' or 'fast'");
  }
  if (body.stream !== undefined && typeof body.stream !== "boolean")
    fail("stream", "Input should be a valid boolean");
  const stops = body.stop_sequences;
  if (stops !== undefined && (!Array.isArray(stops) || stops.some((s) => typeof s !== "string"))) {
    fail("stop_sequences", "Input should be a valid list of strings");
  }
  // The API's words (MegaGrindStone/mcp-web-ui#5, BerriAI/litellm#3286): a child copies its parent's
  // stop sequences, so one the API refuses would fail every child.
  const sequences = (stops ?? []) as string[];
  if (sequences.includes("")) fail("stop_sequences", "each stop sequence must be non-empty");
  if (sequences.some((s) => WHITESPACE_ONLY.test(s))) {
    fail("stop_sequences", "each stop sequence must contain non-whitespace");
  }
  return body as MessagesRequest;
}
