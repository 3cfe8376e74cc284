// Which agent session a Messages request belongs to, when several agents share one proxy. Claude
// Code and the Agent SDK say it twice: an `x-claude-code-session-id` header and a `session_id` in
// `metadata.user_id` (JSON in current versions, a `…_session_<uuid>` suffix in older ones). A
// client that says neither is keyed by what stays fixed through a conversation: its API key's
// hash, its system prompt and its first user message.
import { createHash } from "node:crypto";
import { parseJsonText } from "@forkd/protocol/internal";

/** The marker `forkd mcp` puts in its fork tool's description: `[forkd-mcp:<instance id>]`. */
export const MCP_INSTANCE_MARKER = /\[forkd-mcp:([0-9a-f]{16,64})\]/;

/** The text {@link MCP_INSTANCE_MARKER} matches, for a tool description. */
export function mcpInstanceMarker(instanceId: string): string {
  return `[forkd-mcp:${instanceId}]`;
}

const SESSION_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/**
 * The session a request belongs to: `cc:<id>` from Claude Code's header or metadata (and
 * `cc:<id>/agent:<agent id>` for one of its sub-agents), else `anon:<hash>` of the API key's hash,
 * the system prompt and the first message.
 * @param headers - lower-cased request headers.
 */
export function sessionKeyOf(headers: Record<string, string | string[] | undefined>, body: unknown): string {
  // Claude Code's sub-agents (Agent tool) share their parent's session id and name themselves in
  // `x-claude-code-agent-id`: each is a conversation of its own, with its own last turns, or a busy
  // sub-agent would push its siblings' turns out of the session before they fork.
  const agent = headers["x-claude-code-agent-id"];
  const suffix = typeof agent === "string" && SESSION_ID.test(agent) ? `/agent:${agent}` : "";
  const header = headers["x-claude-code-session-id"];
  if (typeof header === "string" && SESSION_ID.test(header)) return `cc:${header}${suffix}`;
  const fromMetadata = metadataSessionId(body);
  if (fromMetadata !== undefined) return `cc:${fromMetadata}${suffix}`;
  const request = (body ?? {}) as { system?: unknown; messages?: unknown[] };
  return anonymousKey(
    headers,
    request.system ?? null,
    Array.isArray(request.messages) ? (request.messages[0] ?? null) : null,
  );
}

/**
 * The session of an OpenAI-API request: `codex:<id>` from the Codex CLI's `session-id` header (and
 * `codex:<id>/thread:<thread id>` for one of its sub-agents), `pck:<hash>` of the
 * credential's hash and a `prompt_cache_key` another client chose, else `anon:<hash>` of the
 * credential's hash, the instructions (Responses' `instructions`, Chat's leading system or developer
 * messages) and the first message or input item after them.
 * @param headers - lower-cased request headers.
 */
export function openAiSessionKeyOf(
  api: "openai-chat" | "openai-responses",
  headers: Record<string, string | string[] | undefined>,
  body: Record<string, unknown>,
): string {
  // The Codex CLI (0.171) sends `session-id` and `thread-id` (older versions `session_id`); a
  // sub-agent it spawns is a thread of its own in its parent's session.
  const session = headers["session-id"] ?? headers.session_id;
  if (typeof session === "string" && SESSION_ID.test(session)) {
    const thread = headers["thread-id"];
    const own = typeof thread === "string" && SESSION_ID.test(thread) && thread !== session;
    return `codex:${session}${own ? `/thread:${thread}` : ""}`;
  }
  // A cache key is chosen per conversation by the client but could be shared by two accounts'
  // clients: the credential keeps them apart.
  const cacheKey = body.prompt_cache_key;
  if (typeof cacheKey === "string" && cacheKey !== "")
    return `pck:${createHash("sha256").update(credentialHash(headers)).update("\0").update(cacheKey).digest("hex").slice(0, 32)}`;
  if (api === "openai-responses") {
    const input = body.input;
    return anonymousKey(
      headers,
      body.instructions ?? null,
      Array.isArray(input) ? (input[0] ?? null) : (input ?? null),
    );
  }
  const messages = Array.isArray(body.messages) ? (body.messages as { role?: unknown }[]) : [];
  let lead = 0;
  while (lead < messages.length && isInstruction(messages[lead]!)) lead++;
  return anonymousKey(headers, messages.slice(0, lead), messages[lead] ?? null);
}

/**
 * The session of a Gemini `generateContent` request: `anon:<hash>` of the credential's hash (the
 * `x-goog-api-key` header, else the `key` query parameter, else an OAuth bearer), the
 * `systemInstruction` and the first content. The Gemini CLI sends no session id: its
 * `x-gemini-api-privileged-user-id` names the installation, the same for all its sessions.
 * @param headers - lower-cased request headers.
 * @param target - the request's path and query.
 */
export function geminiSessionKeyOf(
  headers: Record<string, string | string[] | undefined>,
  body: Record<string, unknown>,
  target: string,
): string {
  const query = target.indexOf("?");
  const queryKey =
    query === -1 ? undefined : (new URLSearchParams(target.slice(query + 1)).get("key") ?? undefined);
  const credential = {
    "x-goog-api-key": headers["x-goog-api-key"] ?? queryKey,
    authorization: headers.authorization,
  };
  const contents = Array.isArray(body.contents) ? body.contents : [];
  return anonymousKey(credential, body.systemInstruction ?? null, contents[0] ?? null);
}

/** A Chat message that instructs rather than converses. */
function isInstruction(message: { role?: unknown }): boolean {
  return message?.role === "system" || message?.role === "developer";
}

/** `anon:<hash>` of what stays fixed through a conversation: the credential, instructions, first message. */
function anonymousKey(
  headers: Record<string, string | string[] | undefined>,
  instructions: unknown,
  firstMessage: unknown,
): string {
  const hash = createHash("sha256");
  hash.update(credentialHash(headers));
  hash.update("\0");
  hash.update(JSON.stringify(instructions));
  hash.update("\0");
  hash.update(JSON.stringify(firstMessage));
  return `anon:${hash.digest("hex").slice(0, 32)}`;
}

/**
 * The `forkd mcp` instances whose fork tool the request offers (their markers in tool descriptions),
 * whatever the API.
 */
export function mcpInstancesOf(body: unknown): string[] {
  const tools = (body as { tools?: unknown } | null)?.tools;
  if (!Array.isArray(tools)) return [];
  const found = new Set<string>();
  for (const description of toolDescriptions(tools)) {
    const match = MCP_INSTANCE_MARKER.exec(description);
    if (match?.[1] !== undefined) found.add(match[1]);
  }
  return [...found];
}

interface ToolDefinition {
  description?: unknown;
  function?: { description?: unknown };
  tools?: unknown;
  functionDeclarations?: unknown;
}

/**
 * Every tool description of a request's `tools`: Anthropic's and Responses' `description`, Chat
 * Completions' `function.description`, those of the tools a Responses `namespace` tool holds
 * (how the Codex CLI offers an MCP server's tools), and those of a Gemini tool's `functionDeclarations`.
 */
function* toolDescriptions(tools: readonly unknown[]): Generator<string> {
  for (const tool of tools as (ToolDefinition | null)[]) {
    const description = tool?.description ?? tool?.function?.description;
    if (typeof description === "string") yield description;
    if (Array.isArray(tool?.tools)) yield* toolDescriptions(tool.tools);
    if (Array.isArray(tool?.functionDeclarations)) yield* toolDescriptions(tool.functionDeclarations);
  }
}

function metadataSessionId(body: unknown): string | undefined {
  const userId = (body as { metadata?: { user_id?: unknown } } | null)?.metadata?.user_id;
  if (typeof userId !== "string") return undefined;
  if (userId.startsWith("{")) {
    try {
      const parsed = parseJsonText(userId) as { session_id?: unknown };
      if (typeof parsed.session_id === "string" && SESSION_ID.test(parsed.session_id))
        return parsed.session_id;
    } catch {
      // Not JSON after all: try the older form below.
    }
  }
  const suffix = /_session_([A-Za-z0-9-]{1,128})$/.exec(userId);
  return suffix?.[1];
}

/** A hash of the request's credential, so that two accounts' identical prompts are two sessions. */
function credentialHash(headers: Record<string, string | string[] | undefined>): string {
  const credential = headers["x-api-key"] ?? headers["x-goog-api-key"] ?? headers.authorization ?? "";
  return createHash("sha256")
    .update(Array.isArray(credential) ? credential.join(",") : credential)
    .digest("hex");
}
