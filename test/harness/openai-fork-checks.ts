// What makes a child of an OpenAI-API parent faithful, read on the simulator's log: the parent's
// request bytes at the head of the child's, its own items after them (the parent's reply, the
// placeholder answers, its directive), and the parent's prompt read from the cache.
import { FORK_PLACEHOLDER_RESULT } from "@forkd/core";
import { OPENAI_CACHE_STEP_TOKENS, type RequestLogEntry } from "@forkd/sim";
import { expect } from "vitest";

/** The parent's body must be the child's, byte for byte, but for the items appended to `list`. */
export function expectParentBytes(parentRaw: string, childRaw: string, list: "messages" | "input") {
  const parent = JSON.parse(parentRaw) as Record<string, unknown>;
  const items = JSON.stringify(parent[list]);
  const at = parentRaw.indexOf(`"${list}":${items}`);
  expect(at).toBeGreaterThan(0);
  const end = at + `"${list}":`.length + items.length - 1; // just before the closing bracket
  expect(childRaw.slice(0, end)).toBe(parentRaw.slice(0, end));
  // Everything after the list (tools, sampling fields, the prompt_cache_key the parent sent…) too.
  expect(childRaw.endsWith(parentRaw.slice(end + 1))).toBe(true);
}

/** Reads at least the parent's prompt, less the unfinished last 128-token step. */
export function expectParentCacheRead(parent: RequestLogEntry, child: RequestLogEntry) {
  const parentPrompt = (parent.usage?.input_tokens ?? 0) + (parent.usage?.cache_read_input_tokens ?? 0);
  expect(child.usage?.cache_read_input_tokens ?? 0).toBeGreaterThanOrEqual(
    parentPrompt - OPENAI_CACHE_STEP_TOKENS,
  );
}

type Body = Record<string, unknown>;

/**
 * A Chat Completions child's messages after the parent's `inherited` ones: the parent's reply as the
 * API takes it back, each of its calls answered with the placeholder, then the child's directive
 * (which holds `directiveTag`), and nothing more.
 */
export function expectChatChildTail(childRaw: string, inherited: number, reply: Body, directiveTag: string) {
  const messages = (JSON.parse(childRaw) as { messages: Body[] }).messages;
  const calls = reply.tool_calls as { id: string }[];
  expect(messages[inherited]).toEqual({ role: "assistant", content: reply.content, tool_calls: calls });
  const answers = messages.slice(inherited + 1, inherited + 1 + calls.length);
  expect(answers).toEqual(
    calls.map((call) => ({ role: "tool", tool_call_id: call.id, content: FORK_PLACEHOLDER_RESULT })),
  );
  const directive = messages[inherited + 1 + calls.length];
  expect(directive?.role).toBe("user");
  expect(JSON.stringify(directive)).toContain(directiveTag);
  expect(messages).toHaveLength(inherited + calls.length + 2);
}

/**
 * A Responses child's input items after the parent's `inherited` ones: the parent's reply items as
 * given, each function call answered with the placeholder, then the child's directive (a user
 * message holding `directiveTag`).
 */
export function expectResponsesChildTail(
  childRaw: string,
  inherited: number,
  reply: readonly Body[],
  directiveTag: string,
) {
  const own = (JSON.parse(childRaw) as { input: Body[] }).input.slice(inherited);
  expect(own.slice(0, reply.length)).toEqual(reply);
  const calls = reply.filter((item) => item.type === "function_call");
  expect(own.slice(reply.length, reply.length + calls.length)).toEqual(
    calls.map((call) => ({
      type: "function_call_output",
      call_id: call.call_id,
      output: FORK_PLACEHOLDER_RESULT,
    })),
  );
  const directive = own[reply.length + calls.length];
  expect(directive).toMatchObject({ type: "message", role: "user" });
  expect(JSON.stringify(directive)).toContain(directiveTag);
}
