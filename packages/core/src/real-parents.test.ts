// What real parents (Claude Code, the Agent SDK) send and get back, and what the real API accepts:
// system messages anywhere, fields forkd has never seen passed through untouched, the reply kept
// as { role, content } only, and the parent's betas carried as cache-safe params.
import type { ForkPrefix } from "@forkd/protocol";
import { describe, expect, it } from "vitest";
import { computeCacheKey } from "./cache-key.js";
import { createForkPrefix } from "./cache-safe-params.js";
import { InvalidPrefixError } from "./errors.js";
import { buildForkedRequest } from "./forked-request.js";
import { findRequestProblems } from "./request-shape.js";

const SYSTEM_BETA = "mid-conversation-system-2026-04-07";

/** A request shaped like Claude Code's: fields forkd does not model, a system message mid-conversation. */
const request = {
  model: "claude-opus-4-7",
  max_tokens: 32000,
  context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
  output_config: { effort: "high" },
  thinking: { type: "adaptive", display: "summarized" },
  metadata: { user_id: JSON.stringify({ device_id: "d1", session_id: "s1" }) },
  system: [
    { type: "text", text: "x-anthropic-billing-header: cc_version=2.1.0; cc_entrypoint=sdk-cli" },
    { type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral" } },
  ],
  tools: [
    { name: "Agent", description: "Launch a sub-agent", input_schema: { type: "object" } },
    { name: "WebFetch", description: "Fetch", input_schema: { type: "object" }, defer_loading: true },
  ],
  messages: [
    { role: "user", content: [{ type: "text", text: "Audit the repository." }] },
    { role: "system", content: "The user's time zone is UTC." },
  ],
  stream: true,
};

/** The reply as the API returns it: more than a message of a request may hold. */
const apiReply = {
  id: "msg_01",
  type: "message",
  role: "assistant",
  model: "claude-opus-4-7",
  content: [
    { type: "text", text: "Forking two audits." },
    {
      type: "tool_use",
      id: "toolu_1",
      name: "Agent",
      input: { prompt: "Audit the codec.", description: "codec" },
    },
  ],
  stop_reason: "tool_use",
  stop_sequence: null,
  usage: { input_tokens: 10, output_tokens: 20 },
};

describe("a real parent's turn", () => {
  it("is accepted, and every field it sent is kept in its order", () => {
    const prefix = createForkPrefix(request, apiReply);
    const { stream: _stream, ...sent } = request;
    expect(JSON.stringify(prefix.params)).toBe(JSON.stringify(sent));
  });

  it("keeps the reply as { role, content } and, for cache diagnostics, its id and usage; the child sends { role, content } only", () => {
    const prefix = createForkPrefix(request, apiReply);
    expect(Object.keys(prefix.reply ?? {})).toEqual(["role", "content", "id", "usage"]);
    expect(prefix.reply?.content).toEqual(apiReply.content);
    expect(prefix.reply).toMatchObject({ id: apiReply.id, usage: apiReply.usage });
    const child1 = buildForkedRequest(prefix, { runId: "run-1", directive: "Audit the codec." });
    expect(child1.request.messages[2]).toEqual({ role: "assistant", content: apiReply.content });
    // A usage that is not the provider's shape is left out.
    const odd = createForkPrefix(request, { ...apiReply, id: "", usage: { input_tokens: "many" } });
    expect(Object.keys(odd.reply ?? {})).toEqual(["role", "content"]);
    // A spec written by another client may still carry the whole reply: the child never sends it.
    const carried = { ...prefix, reply: apiReply } as unknown as ForkPrefix;
    const child = buildForkedRequest(carried, { runId: "run-1", directive: "Audit the codec." });
    expect(child.request.messages[2]).toEqual({ role: "assistant", content: apiReply.content });
    expect(findRequestProblems(child.request)).toEqual([]);
  });

  it("treats a missing or null reply alike", () => {
    expect(createForkPrefix(request, null)).toEqual(createForkPrefix(request));
  });

  it("forks after a trailing system message with a user turn of its own", () => {
    const child = buildForkedRequest(createForkPrefix(request), { runId: "run-1", directive: "Look again." });
    expect(child.request.messages.slice(0, 2)).toEqual(request.messages);
    expect(child.request.messages[2]?.role).toBe("user");
    expect(child.shape).toBe("user_tail");
    expect(findRequestProblems(child.request)).toEqual([]);
  });
});

describe("turn order", () => {
  it("skips system messages wherever they are", () => {
    const messages = [
      { role: "system", content: "first" },
      { role: "user", content: "hi" },
      { role: "system", content: "between" },
      { role: "assistant", content: "hello" },
      { role: "user", content: "go" },
    ] as const;
    expect(findRequestProblems({ messages: [...messages] })).toEqual([]);
    expect(findRequestProblems({ messages: [messages[0], messages[1], messages[3]] })).toEqual([
      "the last message is not the user's",
    ]);
  });
});

describe("betas", () => {
  const betas = ["context-management-2025-06-27", SYSTEM_BETA];

  it("travel in the prefix and are sent with the child", () => {
    const prefix = createForkPrefix(request, apiReply, { betas });
    expect(prefix.betas).toEqual(betas);
    expect(buildForkedRequest(prefix, { runId: "r", directive: "d" }).request.betas).toEqual(betas);
    expect(
      "betas" in buildForkedRequest(createForkPrefix(request), { runId: "r", directive: "d" }).request,
    ).toBe(false);
  });

  it("are part of the cache key, at the model layer, and an empty list is no list", () => {
    const plain = computeCacheKey(createForkPrefix(request).params);
    const withBetas = computeCacheKey(createForkPrefix(request).params, betas);
    expect(withBetas.hash).not.toBe(plain.hash);
    expect(withBetas.layers.model).not.toBe(plain.layers.model);
    expect(withBetas.layers.messages).toBe(plain.layers.messages);
    expect(computeCacheKey(createForkPrefix(request).params, [])).toEqual(plain);
  });

  it("must be beta names", () => {
    expect(() => createForkPrefix(request, apiReply, { betas: ["a,b"] })).toThrow(InvalidPrefixError);
    expect(() => createForkPrefix(request, apiReply, { betas: [""] })).toThrow(/the betas is not valid at 0/);
  });
});
